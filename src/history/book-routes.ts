import { z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { jsonText } from "../core/json-text";
import { marketObject } from "../core/object-ids";
import { problem, unwrap } from "../core/problem";
import { problemResponses, queryInt } from "../core/schemas";
import type { AppEnv } from "../http/env";
import { createRouter } from "../http/router";
import { resolveMarket } from "../market/lookup";
import { readContext } from "../reads/reads";
import type { BookTarget } from "./book-replay";
import { closedBookAt, closedHistoryOf } from "./closed-book-reads";
import { MAX_REPLAY_SPAN_MS, type ReplayRequest, replayUpgrade } from "./replay-connection";

/** Streams one replay may name. */
const MAX_REPLAY_STREAMS = 10;

/** The shared cache's key of a book at a resolved sequence and depth: an `?at=` answer fills it too. */
const cacheKey = (symbol: string, sequence: number, depth: number) => `https://book-history.internal/${symbol}/${sequence}/${depth}`;

/**
 * `GET /api/orderbook/{pair}?sequence=|at=` (docs/history.md#book-history): the book as it stood
 * then, from the market's book history. A book at a sequence never changes, so it is cached in
 * the location's cache by its resolved sequence (an `?at=` answer fills the same entry) and
 * served immutable; an `?at=` at or after the last update is the live book, not cached.
 */
export async function readBookAt(c: Context<AppEnv>, pair: string, target: BookTarget, depth: number): Promise<Response> {
  const market = resolveMarket(pair);
  const cache = typeof caches === "undefined" ? undefined : caches.default;
  if ("sequence" in target) {
    const hit = await cache?.match(cacheKey(market.symbol, target.sequence, depth));
    if (hit) return jsonText(c, await hit.text(), { "Cache-Control": "public, max-age=31536000, immutable", "X-Book-Cache": "hit" });
  }
  const { waitUntil } = readContext(c);
  // Closed history is read here, from R2 and this location's cache; the market's host only for what is open.
  const closed = await closedBookAt(closedHistoryOf(c.env, undefined, waitUntil), market, target, depth);
  const answer = closed ? { ...closed, final: true } : unwrap(await marketObject(c.env, market).bookAt(market, target, depth));
  const cacheControl = answer.final ? "public, max-age=31536000, immutable" : "public, max-age=0";
  if (answer.final && cache) {
    const put = cache.put(cacheKey(market.symbol, answer.sequence, depth), new Response(answer.text, { headers: { "Cache-Control": cacheControl } }));
    if (waitUntil) waitUntil(put);
    else await put;
  }
  // Where it was read: closed history here (R2, the location's cache), or the market's host.
  return jsonText(c, answer.text, { "Cache-Control": cacheControl, "X-Book-Read": closed ? "closed" : "host" });
}

const ReplayQuery = z
  .object({
    streams: z
      .string()
      .max(1024)
      .openapi({ example: "book.BTCUSDT,trades.BTCUSDT", description: `Up to ${MAX_REPLAY_STREAMS} of book.{SYMBOL} and trades.{SYMBOL}, comma-separated` }),
    from: queryInt(0, 8_640_000_000_000).openapi({ description: "Unix ms: the replay opens with the book as it stood then (required)" }),
    to: queryInt(0, 8_640_000_000_000).openapi({ description: "Unix ms: the last moment replayed; at most 24 h after from (required)" }),
    speed: z
      .string()
      .regex(/^\d{1,4}(\.\d{1,3})?$/, "a number from 0 to 1000")
      .transform(Number)
      .optional()
      .openapi({ type: "number", minimum: 0, maximum: 1000, default: 1, description: "Times real time; 0: as fast as the service sends" }),
  })
  .refine((q) => q.from !== undefined && q.to !== undefined, { message: "from and to are required", path: ["from"] })
  .refine((q) => q.from! < q.to!, { message: "from must be before to", path: ["to"] })
  .refine((q) => q.to! - q.from! <= MAX_REPLAY_SPAN_MS, { message: "a replay spans at most 24 h: ask again from its end", path: ["to"] })
  .refine((q) => (q.speed ?? 1) <= 1000, { message: "speed is at most 1000", path: ["speed"] });

/** `book.BTCUSDT,trades.BTCUSDT` as the replay's streams; 400 for anything else. */
function parseStreams(text: string): ReplayRequest["streams"] {
  const names = [...new Set(text.split(",").filter((name) => name.length > 0))];
  if (names.length === 0 || names.length > MAX_REPLAY_STREAMS) throw problem("VALIDATION_FAILED", `name 1 to ${MAX_REPLAY_STREAMS} streams`);
  return names.map((name) => {
    const match = /^(book|trades)\.(.+)$/.exec(name);
    if (!match) throw problem("VALIDATION_FAILED", `${name.slice(0, 64)}: a replay has book.{SYMBOL} and trades.{SYMBOL} streams`);
    return { kind: match[1] as "book" | "trades", market: resolveMarket(match[2]!) };
  });
}

/**
 * `GET /api/replay` (docs/history.md#replay), mounted at `/api`; `limit` stands in front of the upgrade.
 *
 * @example
 * app.route("/api", replayRoutes(publicLimit));
 */
export function replayRoutes(limit: MiddlewareHandler<AppEnv>) {
  const router = createRouter();
  router.openAPIRegistry.registerPath({
    method: "get",
    path: "/replay",
    operationId: "replayStreams",
    tags: ["Historical data files"],
    summary: "Replay of past book and trades messages over a WebSocket",
    description:
      'Upgrade: websocket. The messages live subscribers got on `book.{SYMBOL}` and `trades.{SYMBOL}` between `from` and `to`: the book as it stood at `from` (a snapshot), then its deltas with `firstSequence`, `sequence` and `checksum`, and the trades, paced at `speed` times real time, ending with `{"stream":"replay","data":{"type":"replayEnded",…}}` (docs/history.md#replay). One of the client address\'s five connections.',
    request: { query: ReplayQuery },
    responses: {
      101: { description: "Switching Protocols" },
      ...problemResponses(400, 404, 429),
    },
  });
  router.get("/replay", limit, async (c) => {
    const parsed = ReplayQuery.safeParse(c.req.query());
    if (!parsed.success) {
      throw problem("VALIDATION_FAILED", parsed.error.issues.map((i) => `${i.path.join(".") || "query"}: ${i.message}`).join("; "), {
        errors: parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
      });
    }
    const { streams, from, to, speed } = parsed.data;
    return replayUpgrade(c, { streams: parseStreams(streams), from: from!, to: to!, speed: speed ?? 1 });
  });
  return router;
}
