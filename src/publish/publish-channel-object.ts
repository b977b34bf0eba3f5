import { DurableObject } from "cloudflare:workers";
import { accessGuard } from "../core/object-ids";
import { ProblemError } from "../core/problem";
import { Slots } from "../core/slots";
import { ingest } from "../market/ingest";
import { POLICY_VIOLATION } from "../streams/protocol";
import { errorOf, MAX_BATCH_BYTES, MAX_UNACKED, parseBatch } from "./protocol";

/** The key's status is asked again at most this often: a revoked key's connections close within it. */
const KEY_CHECK_EVERY_MS = 10_000;
export const KEY_HEADER = "X-Publish-Key";

/**
 * One per API key: holds the key's publisher connections (`GET /v1/publish`) and applies their
 * batches through the one ingest path (docs/publishing.md#the-publisher-channel). Batches of one
 * market are applied in the order they arrived, whichever connection of the key sent them; batches
 * of different markets go in parallel, so one connection carries a whole venue. A batch is
 * answered once its market has applied it (or refused it): an acknowledged batch is stored, and a
 * dropped connection loses only batches not yet answered — which the publisher resends, the
 * market recognising an exact resend.
 */
export class PublishChannel extends DurableObject<Env> {
  /** Per connection, the batches sent and not yet answered (flow control). */
  private readonly unacked = new Slots<WebSocket>();
  /** Per market, the last batch in flight: the next one waits for it. */
  private readonly chains = new Map<string, Promise<unknown>>();
  private keyCheckedAt = 0;

  override async fetch(request: Request): Promise<Response> {
    const keyId = request.headers.get(KEY_HEADER);
    if (!keyId) return new Response("not a publisher connection", { status: 400 });
    if ((await this.ctx.storage.get<string>("key")) !== keyId) await this.ctx.storage.put("key", keyId);
    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server);
    this.keyCheckedAt = Date.now();
    return new Response(null, { status: 101, webSocket: client });
  }

  private answer(ws: WebSocket, message: unknown): void {
    try {
      ws.send(JSON.stringify(message));
    } catch {
      // closed meanwhile: the publisher resends what it did not see answered
    }
  }

  /**
   * No await before a batch takes its place in its market's chain: while one awaited, the runtime
   * would hand over the next message, which could then be applied first (seen in bench:ws, once
   * per key check, as a SEQUENCE_GAP). The key check runs beside the batches.
   */
  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const size = typeof message === "string" ? message.length : message.byteLength;
    if (size > MAX_BATCH_BYTES) return this.answer(ws, { id: null, error: errorOf("PAYLOAD_TOO_LARGE", `a batch is at most ${MAX_BATCH_BYTES} bytes`) });
    this.checkKeyNowAndThen();
    const parsed = parseBatch(message);
    if (!parsed.ok) return this.answer(ws, { id: parsed.id, error: parsed.error });
    if (!this.unacked.take(ws, MAX_UNACKED)) {
      return this.answer(ws, {
        id: parsed.id,
        error: errorOf(
          "RATE_LIMITED",
          `at most ${MAX_UNACKED} batches may await their answer on one connection; this one was not applied — send it again after an answer`,
          {
            maxUnacked: MAX_UNACKED,
          },
        ),
      });
    }
    const { id, body } = parsed;
    const symbol = body.symbol.toUpperCase();
    const previous = this.chains.get(symbol) ?? Promise.resolve();
    const run = previous.then(async () => {
      try {
        this.answer(ws, { id, result: await ingest(this.env, body) });
      } catch (error) {
        if (!(error instanceof ProblemError)) {
          console.error("publish batch failed", String(error));
          this.answer(ws, { id, error: errorOf("UNAVAILABLE", "the market did not apply the batch; send it again") });
        } else this.answer(ws, { id, error: errorOf(error.code, error.message, error.extras) });
      } finally {
        this.unacked.release(ws);
      }
    });
    this.chains.set(symbol, run);
    // Not awaited: the runtime hands over the next message when this handler returns, and the
    // next batch may be another market's. Order within a market is the chain's.
    this.ctx.waitUntil(
      run.then(() => {
        if (this.chains.get(symbol) === run) this.chains.delete(symbol);
      }),
    );
  }

  /** At most once per KEY_CHECK_EVERY_MS, in the background: a revoked key's connections close (policy violation). */
  private checkKeyNowAndThen(): void {
    const now = Date.now();
    if (now - this.keyCheckedAt < KEY_CHECK_EVERY_MS) return;
    this.keyCheckedAt = now;
    this.ctx.waitUntil(
      (async () => {
        const keyId = await this.ctx.storage.get<string>("key");
        const status = keyId ? await accessGuard(this.env, `key:${keyId}`).keyStatus() : undefined;
        if (status && status.revokedAt === null) return;
        for (const socket of this.ctx.getWebSockets()) {
          try {
            socket.close(POLICY_VIOLATION, "the API key was revoked");
          } catch {
            // already closing
          }
        }
      })().catch((error: unknown) => console.error("key check failed", String(error))),
    );
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    this.unacked.clear(ws);
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // already closed
    }
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    this.unacked.clear(ws);
  }
}
