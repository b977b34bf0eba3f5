/**
 * A shard's side of the connection leases (docs/limits.md#stream-connections): a principal's
 * AccessGuard counts its connections on every shard as leases; the shard takes one before the
 * upgrade, says which it still holds when the guard asks, and gives one back when its connection
 * closes — so the five a principal may hold are exact whichever shards hold them.
 */

import { accessGuard } from "../core/object-ids";
import { problem, toProblemResult } from "../core/problem";
import { logFailure } from "../logs/log";
import { type Attachment, type StoredAttachment, saveAttachment } from "./attachment";
import { MAX_CONNECTIONS_PER_PRINCIPAL } from "./protocol";

export class ShardLeases {
  /** Leases asked of a guard for connections not yet accepted: held, as far as a guard's check is concerned. */
  private readonly pending = new Set<string>();

  constructor(
    private readonly env: Env,
    private readonly ctx: DurableObjectState,
  ) {}

  /**
   * A lease for a new connection of `principal`: its id, or the answer that refuses the
   * connection (429 `STREAM_LIMIT` at the principal's limit, 503 when its guard cannot say).
   * `accepted` once the socket is accepted and holds it.
   */
  async take(principal: string, shard: string): Promise<string | Response> {
    const lease = crypto.randomUUID();
    this.pending.add(lease);
    let granted: boolean;
    try {
      granted = await accessGuard(this.env, principal).takeConnection(lease, shard, MAX_CONNECTIONS_PER_PRINCIPAL);
    } catch (error) {
      this.pending.delete(lease);
      logFailure("connection lease failed", { error });
      return Response.json(toProblemResult(problem("UNAVAILABLE", "the connection limit could not be checked; try again shortly")), { status: 503 });
    }
    if (granted) return lease;
    this.pending.delete(lease);
    const who = principal.startsWith("key:") ? "API key" : "client IP";
    return Response.json(
      toProblemResult(problem("STREAM_LIMIT", `at most ${MAX_CONNECTIONS_PER_PRINCIPAL} concurrent WebSocket connections per ${who}; close one first`)),
      { status: 429 },
    );
  }

  /** The lease is the accepted socket's now (its attachment holds it). */
  accepted(lease: string): void {
    this.pending.delete(lease);
  }

  /** Which of a guard's leases are still open here (or being opened): the rest died with a restart or a crash. */
  held(ids: string[]): string[] {
    const held = new Set(this.pending);
    for (const ws of this.ctx.getWebSockets()) {
      const lease = (ws.deserializeAttachment() as StoredAttachment | null)?.lease;
      if (lease) held.add(lease);
    }
    return ids.filter((id) => held.has(id));
  }

  /** A closed connection's lease goes back to its principal's guard, once (one call per close). */
  giveBack(ws: WebSocket, attachment: Attachment): void {
    const lease = attachment.lease;
    if (!lease) return;
    try {
      saveAttachment(ws, { ...attachment, lease: undefined });
    } catch {
      // closed already: the guard forgets a lease returned twice
    }
    this.ctx.waitUntil(
      accessGuard(this.env, attachment.principal)
        .returnConnection(lease)
        .catch((error: unknown) => logFailure("returning a connection lease failed", { error })),
    );
  }
}
