// A publisher channel (`GET /v1/publish`, docs/publishing.md#the-publisher-channel) as the
// benches use it: batches pipelined, each answer matched to its batch by id.
import WebSocket from "ws";
import { sign } from "./signed-load.mjs";

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
  return {
    opened: new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    }),
    /** Sends a batch; resolves with its result and the ms it took to be answered. */
    send(body) {
      const id = ++nextId;
      const started = performance.now();
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve: (result) => resolve({ result, ms: performance.now() - started }), reject });
        ws.send(JSON.stringify({ id, ...body }));
      });
    },
    get unanswered() {
      return pending.size;
    },
    close: () => ws.close(),
  };
}
