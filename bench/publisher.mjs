// A publisher channel (`GET /v1/publish`, docs/publishing.md#the-publisher-channel) as the
// benches use it: batches pipelined, each answer matched to its batch by id.
import WebSocket from "ws";
import { sign } from "./signed-load.mjs";

/**
 * A channel once open: a connect refused (a runtime just started can answer the first upgrades
 * later than the signature's 5 s window, TIMESTAMP_OUT_OF_WINDOW) is signed anew and tried again,
 * up to `attempts` times.
 */
export async function openedChannel(url, key, ip, attempts = 3) {
  for (let attempt = 1; ; attempt++) {
    const channel = openChannel(url, key, ip);
    try {
      await channel.opened;
      return channel;
    } catch (error) {
      if (attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

/**
 * Opens a channel with a publishing key from client address `ip`. `send(body)` resolves with the
 * batch's result and the ms it took to be answered; an error answer rejects.
 */
export function openChannel(url, key, ip) {
  const timestamp = String(Date.now());
  const signature = sign(key.secret, timestamp, "GET", "/v1/publish");
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/v1/publish?apiKey=${key.id}&timestamp=${timestamp}&signature=${signature}`, {
    headers: { "CF-Connecting-IP": ip },
  });
  const pending = new Map();
  ws.on("message", (data) => {
    const answer = JSON.parse(String(data));
    const waiter = pending.get(answer.id);
    if (!waiter) return;
    pending.delete(answer.id);
    if (answer.error) waiter.reject(new Error(`batch ${answer.id}: ${JSON.stringify(answer.error).slice(0, 300)}`));
    else waiter.resolve(answer.result);
  });
  let nextId = 0;
  const answered = (id, started) =>
    new Promise((resolve, reject) => pending.set(id, { resolve: (result) => resolve({ result, ms: performance.now() - started }), reject }));
  return {
    opened: new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    }),
    /** Sends a batch; resolves with its result and the ms it took to be answered. */
    send(body) {
      const id = ++nextId;
      const answer = answered(id, performance.now());
      ws.send(JSON.stringify({ id, ...body }));
      return answer;
    },
    /** Sends batches in one message (an array, at most 64); resolves each as `send` does. */
    sendMany(bodies) {
      const started = performance.now();
      const batches = bodies.map((body) => ({ id: ++nextId, ...body }));
      const answers = batches.map(({ id }) => answered(id, started));
      ws.send(JSON.stringify(batches));
      return answers;
    },
    get unanswered() {
      return pending.size;
    },
    close: () => ws.close(),
  };
}
