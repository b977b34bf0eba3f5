import { createHmac } from "node:crypto";
import WebSocket from "ws";

const sign = (secret: string, payload: string) => createHmac("sha256", secret).update(payload).digest("hex");

/** A publisher channel: sends batches, resolves each with its answer. */
export async function publisherChannel(base: string, key: { id: string; secret: string }) {
  const at = Date.now();
  const ws = new WebSocket(
    `${base.replace(/^http/, "ws")}/v1/publish?apiKey=${key.id}&timestamp=${at}&signature=${sign(key.secret, `${at}\nGET\n/v1/publish\n`)}`,
  );
  const waiting = new Map<number, (answer: { result?: Record<string, unknown>; error?: unknown }) => void>();
  ws.on("message", (data) => {
    const answer = JSON.parse(String(data)) as { id: number; result?: Record<string, unknown>; error?: unknown };
    waiting.get(answer.id)?.(answer);
    waiting.delete(answer.id);
  });
  await new Promise((resolve, reject) => ws.on("open", resolve).on("error", reject));
  let next = 0;
  return {
    send: (body: object) =>
      new Promise<{ result?: Record<string, unknown>; error?: unknown }>((resolve) => {
        const id = ++next;
        waiting.set(id, resolve);
        ws.send(JSON.stringify({ id, ...body }));
      }),
    close: () => ws.close(),
  };
}
