import WebSocket from "ws";

export interface Connection {
  ws: WebSocket;
  messages: any[];
  /** Frames that are not JSON (the keepalive's `pong`). */
  texts: string[];
  closed: Promise<{ code: number; reason: string }>;
  /** The 101 answer's headers. */
  upgradeHeaders: Record<string, string | string[] | undefined>;
  next(predicate: (message: any) => boolean, timeoutMs?: number): Promise<any>;
}

/** Opens a WebSocket from a given client IP; resolves with the connection or the refusal. */
export function connect(baseUrl: string, path: string, ip: string): Promise<Connection | { status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(baseUrl.replace(/^http/, "ws") + path, { headers: { "CF-Connecting-IP": ip } });
    const messages: any[] = [];
    const texts: string[] = [];
    const waiters: { predicate: (m: any) => boolean; resolve: (m: any) => void }[] = [];
    ws.on("message", (data) => {
      let message: any;
      try {
        message = JSON.parse(String(data));
      } catch {
        texts.push(String(data));
        return;
      }
      messages.push(message);
      for (const waiter of [...waiters]) {
        if (waiter.predicate(message)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(message);
        }
      }
    });
    let upgradeHeaders: Record<string, string | string[] | undefined> = {};
    ws.on("upgrade", (response) => (upgradeHeaders = response.headers));
    const closed = new Promise<{ code: number; reason: string }>((done) => ws.on("close", (code, reason) => done({ code, reason: String(reason) })));
    ws.on("unexpected-response", (_request, response) => {
      let body = "";
      response.on("data", (chunk) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(body) }));
    });
    ws.on("error", (error) => reject(error));
    ws.on("open", () =>
      resolve({
        ws,
        messages,
        texts,
        closed,
        upgradeHeaders,
        next(predicate, timeoutMs = 10_000) {
          const seen = messages.find(predicate);
          if (seen) return Promise.resolve(seen);
          return new Promise((done, fail) => {
            const timer = setTimeout(() => fail(new Error("no such message in time")), timeoutMs);
            waiters.push({
              predicate,
              resolve: (m) => {
                clearTimeout(timer);
                done(m);
              },
            });
          });
        },
      }),
    );
  });
}

export function isOpen(value: Connection | { status: number }): value is Connection {
  return "ws" in value;
}
