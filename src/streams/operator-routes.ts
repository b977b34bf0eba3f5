import { z } from "@hono/zod-openapi";
import { auditOf, operatorRoute } from "../admin/auth";
import { auditStatement } from "../audit/audit-log";
import { streamHub } from "../core/object-ids";
import { problem } from "../core/problem";
import { jsonBody, okJson, problemResponses } from "../core/schemas";
import { createRouter } from "../http/router";
import { everyShard } from "./every-shard";
import { CLOSE_KINDS, MAX_GRACE_SECONDS, plannedClose } from "./planned-close";

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
  operatorRoute("post", "/streams/close", {
    operationId: "closeStreams",
    summary: "Announce, then close, the stream connections of every shard or of one",
    description: `Every connection on the shards gets a notice at once (native: \`{"op":"closing","code","reason","closeAt"}\`; Binance dialect: \`{"e":"serverShutdown","E":…}\`), and is closed with the kind's code and reason after \`graceSeconds\` (0 to ${MAX_GRACE_SECONDS}): \`restart\` is 1012, \`going-away\` 1001. Connections that open during the grace are told as they open; after it the shards take connections as before.`,
    request: jsonBody(
      z
        .object({
          kind: z.enum(CLOSE_KINDS).openapi({ example: "restart" }),
          graceSeconds: z.number().int().min(0).max(MAX_GRACE_SECONDS).default(30),
          shard: z
            .union([z.number().int().min(0), z.string().max(64)])
            .optional()
            .openapi({
              description:
                "One shard: its name (`shard-2`, `group-3-shard-0`: docs/streams.md#placement) or the general pool's number (0 … STREAM_SHARDS − 1); every shard when left out",
            }),
        })
        .strict(),
    ),
    responses: { ...okJson(PlannedCloseSchema, "Announced"), ...problemResponses(400, 401, 413, 415, 429, 503) },
  }),
  async (c) => {
    const { kind, graceSeconds, shard } = c.req.valid("json");
    const every = await everyShard(c.env);
    const one = typeof shard === "number" ? `shard-${shard}` : shard;
    if (one !== undefined && !every.includes(one)) {
      throw problem(
        "VALIDATION_FAILED",
        `${one} is no stream shard: shard-0 … shard-${every.filter((name) => name.startsWith("shard-")).length - 1}, or group-{g}-shard-{i}`,
        {
          errors: [{ path: "shard", message: "not a shard" }],
        },
      );
    }
    const names = one === undefined ? every : [one];
    const close = plannedClose(kind, Date.now() + graceSeconds * 1000);
    // Recorded before the shards are told: an announcement that reached some shards is in the log too.
    await auditStatement(c.env.DB, auditOf(c), "streams.close", names.join(","), { kind, graceSeconds }).run();
    const shards = await Promise.all(
      names.map(async (name) => ({ shard: name, connections: await streamHub(c.env, name).announceClose(kind, close.closeAt) })),
    );
    return c.json({ kind, ...close, shards }, 200);
  },
);
