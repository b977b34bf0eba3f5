import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type BookMessage, MarketStream } from "../../client/src/index";
import { ingest } from "../../src/market/ingest";
import { callJson } from "../support/http";
import { until } from "../support/poll";

const worker = (exports as unknown as { default: Fetcher }).default;

/**
 * The standard WebSocket API over a real upgrade through the Worker in workerd (what a service
 * binding does), from one client address; it remembers the URLs it was asked to open.
 */
function workerSocket(ip: string, urls: string[]) {
  return class {
    readyState = 0;
    private socket: WebSocket | undefined;
    private readonly listeners = new Map<string, ((event: unknown) => void)[]>();
    constructor(url: string) {
      urls.push(url);
      void worker.fetch(new Request(url.replace(/^ws/, "http"), { headers: { Upgrade: "websocket", "CF-Connecting-IP": ip } })).then((response) => {
        const socket = response.webSocket;
        if (!socket) return this.emit("close", { code: 1006, reason: `refused: ${response.status}` });
        this.socket = socket;
        socket.accept();
        socket.addEventListener("message", (event) => this.emit("message", { data: event.data }));
        socket.addEventListener("close", (event) => {
          this.readyState = 3;
          this.emit("close", { code: event.code, reason: event.reason });
        });
        this.readyState = 1;
        this.emit("open", {});
      });
    }
    addEventListener(type: string, listener: (event: unknown) => void): void {
      this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
    }
    send(data: string): void {
      this.socket?.send(data);
    }
    close(code?: number, reason?: string): void {
      this.readyState = 3;
      this.socket?.close(code, reason);
    }
    private emit(type: string, event: unknown): void {
      for (const listener of this.listeners.get(type) ?? []) listener(event);
    }
  };
}

describe("the official client resumes its book after a lost connection (docs/client.md#localbook)", () => {
  it("reconnects naming its streams and its book's sequence, is told resumed, takes no snapshot, and the next delta continues the book", async () => {
    let sequence = 0;
    await ingest(env, "*", {
      symbol: "SOLBTC",
      book: { type: "snapshot", sequence: ++sequence, bids: [["0.001500", "10.00"]], asks: [["0.001600", "10.00"]] },
    });
    const urls: string[] = [];
    const snapshots: BookMessage[] = [];
    const stream = new MarketStream({
      baseUrl: "http://service.test",
      WebSocket: workerSocket("198.51.100.95", urls),
      heartbeatTimeoutMs: 0,
      reconnect: { baseMs: 1, maxMs: 1 },
    });
    const { book, close } = stream.book("SOLBTC", {
      inspect: (message) => {
        if (message.type === "snapshot") snapshots.push(message);
        return message;
      },
    });
    try {
      await until(() => book.synced, { what: "the first snapshot" });
      expect(urls[0], "the first connection names its streams (placement)").toBe("ws://service.test/api/ws?streams=book.SOLBTC");

      stream.reconnect();
      expect(book.synced, "out of sync while the connection is lost").toBe(false);
      await until(() => stream.reconnects >= 1 && stream.state === "open" && book.synced, { what: "back in sync" });
      expect(urls[1]).toBe(`ws://service.test/api/ws?streams=book.SOLBTC&resume=book.SOLBTC:${sequence}`);
      expect(snapshots.length, "resumed: no second snapshot").toBe(1);

      await ingest(env, "*", { symbol: "SOLBTC", book: { type: "delta", sequence: ++sequence, bids: [["0.001500", "12.00"]], asks: [] } });
      await until(() => book.sequence === sequence, { what: "the delta after the resume" });
      const rest = (await callJson<{ sequence: number; checksum: number }>("/api/orderbook/SOLBTC?depth=25")).body;
      expect([book.synced, book.sequence, book.checksum()]).toEqual([true, rest.sequence, rest.checksum]);
      expect(snapshots.length).toBe(1);
    } finally {
      close();
      stream.close();
    }
  });
});
