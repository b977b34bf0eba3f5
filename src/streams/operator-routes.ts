import { createRoute, z } from "@hono/zod-openapi";
import { auditOf, requireAdmin, OPERATOR_SECURITY as security, OPERATOR_TAGS as tags } from "../admin/auth";
import { auditStatement } from "../audit/audit-log";
import { streamHub } from "../core/object-ids";
import { problem } from "../core/problem";
import { createRouter } from "../core/router";
import { jsonBody, okJson, problemResponses } from "../core/schemas";
import { CLOSE_KINDS, MAX_GRACE_SECONDS, plannedClose } from "./planned-close";
import { allShards, shardCount } from "./protocol";

const PlannedCloseSchema = z
  .object({
    kind: z.enum(CLOSE_KINDS),
    code: z.number().int().openapi({ example: 1012 }),
    reason: z.string().openapi({ example: "the service restarts; reconnect" }),
    closeAt: z.number().int().openapi({ description: "When the connections close (epoch ms)" }),
    shards: z.array(z.object({ shard: z.string().openapi({ example: "shard-0" }), connections: z.number().int() })),
  })
  .openapi("PlannedClose");

/**
 * Planned closes of stream connections, the operator's, mounted at `/admin`
 * (docs/streams.md#closes-and-ended-streams): every connection of the chosen shards is told
 * first, then closed with 1012 (restart) or 1001 (the shard goes away) and a reason. In the audit log.
 *
 * @example
 * app.route("/admin", streamOperatorRoutes);
 */
export const streamOperatorRoutes = createRouter().openapi(
  createRoute({
    method: "post",
    path: "/streams/close",
    operationId: "closeStreams",
    tags,
    security,
    middleware: [requireAdmin],
    summary: "Announce, then close, the stream connections of every shard or of one",
    description: `Every connection on the shards gets a notice at once (native: \`{"op":"closing","code","reason","closeAt"}\`; Binance dialect: \`{"e":"serverShutdown","E":…}\`), and is closed with the kind's code and reason after \`graceSeconds\` (0 to ${MAX_GRACE_SECONDS}): \`restart\` is 1012, \`going-away\` 1001. Connections that open during the grace are told as they open; after it the shards take connections as before.`,
    request: jsonBody(
      z
        .object({
          kind: z.enum(CLOSE_KINDS).openapi({ example: "restart" }),
          graceSeconds: z.number().int().min(0).max(MAX_GRACE_SECONDS).default(30),
          shard: z.number().int().min(0).optional().openapi({ description: "One shard (0 … STREAM_SHARDS − 1); every shard when left out" }),
        })
        .strict(),
    ),
    responses: { ...okJson(PlannedCloseSchema, "Announced"), ...problemResponses(400, 401, 413, 415, 429, 503) },
  }),
  async (c) => {
    const { kind, graceSeconds, shard } = c.req.valid("json");
    const count = shardCount(c.env.STREAM_SHARDS);
    if (shard !== undefined && shard >= count) {
      throw problem("VALIDATION_FAILED", `there are ${count} stream shards: shard is 0 to ${count - 1}`, {
        errors: [{ path: "shard", message: `at most ${count - 1}` }],
      });
    }
    const names = shard === undefined ? allShards(c.env.STREAM_SHARDS) : [`shard-${shard}`];
    const close = plannedClose(kind, Date.now() + graceSeconds * 1000);
    // Recorded before the shards are told: an announcement that reached some shards is in the log too.
    await auditStatement(c.env.DB, auditOf(c), "streams.close", names.join(","), { kind, graceSeconds }).run();
    const shards = await Promise.all(
      names.map(async (name) => ({ shard: name, connections: await streamHub(c.env, name).announceClose(kind, close.closeAt) })),
    );
    return c.json({ kind, ...close, shards }, 200);
  },
);
