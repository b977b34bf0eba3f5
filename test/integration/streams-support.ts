import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { sign, signaturePayload } from "../../src/access/signature";
import { ensureRegistry, findMarket } from "../../src/registry/copy";
import { placeConnection, shardLayout } from "../../src/streams/placement";
import { call } from "../support/http";

/** A WebSocket opened through the Worker in workerd, with every message it received. */
export interface TestSocket {
  ws: WebSocket;
  /** Parsed JSON messages, in arrival order. */
  messages: any[];
  /** Frames that were not JSON (the keepalive's `pong`). */
  texts: string[];
  closed: Promise<{ code: number; reason: string }>;
}

export function upgrade(path: string, ip: string, headers: Record<string, string> = {}): Promise<Response> {
  return call(path, { ip, headers: { Upgrade: "websocket", ...headers } });
}

export async function openSocket(path: string, ip: string, headers?: Record<string, string>): Promise<TestSocket> {
  const response = await upgrade(path, ip, headers);
  expect(response.status).toBe(101);
  const ws = response.webSocket!;
  const messages: any[] = [];
  const texts: string[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.addEventListener("close", (event) => {
      resolve({ code: event.code, reason: event.reason });
    });
  });
  ws.addEventListener("message", (event) => {
    const text = event.data as string;
    try {
      messages.push(JSON.parse(text));
    } catch {
      texts.push(text);
    }
  });
  ws.accept();
  return { ws, messages, texts, closed };
}

/** `/v1/publish` in the query form: the path signed alone with a publishing key, as a browser or a plain client sends it. */
export async function publishPath(key: { id: string; secret: string }, timestamp = Date.now()): Promise<string> {
  const signature = await sign(key.secret, signaturePayload({ timestamp, method: "GET", requestTarget: "/v1/publish", body: "" }));
  return `/v1/publish?apiKey=${key.id}&timestamp=${timestamp}&signature=${signature}`;
}

/** A publisher channel opened with `key` from `ip`. */
export async function openPublisher(key: { id: string; secret: string }, ip: string): Promise<TestSocket> {
  return openSocket(await publishPath(key), ip);
}

/** The shard a connection of `principal` naming markets `symbols` at connect lands on (docs/streams.md#placement). */
export async function shardOfConnection(principal: string, symbols: string[] = []): Promise<string> {
  await ensureRegistry(env);
  return placeConnection(
    shardLayout(env),
    principal,
    symbols.map((symbol) => findMarket(symbol)!),
  );
}
