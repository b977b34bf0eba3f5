import { z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { gzipText } from "../core/encoding";
import { problem } from "../core/problem";
import { okJson, problemResponses, queryInt } from "../core/schemas";
import { HOUR_MS, MINUTE_MS } from "../domain/intervals";
import { closedHistoryOf } from "../history/closed-book-reads";
import { parseDay } from "../history/daily-files";
import { DATASET_EXCHANGE, DATASET_TYPES, type DatasetType } from "../history/datasets";
import type { AppEnv } from "../http/env";
import { createRouter } from "../http/router";
import { resolveMarket } from "../market/lookup";
import { isolateMetrics } from "../metrics/holder";
import { readContext } from "../reads/reads";
import { datasetResponse } from "./dataset-reads";
import { exchangeDetails } from "./exchange-details";
import { FEED_CHANNELS, type FeedChannel } from "./feed-lines";
import { type FeedAsk, readMinute } from "./feed-reads";

const tags = ["Tardis-compatible history"];
/** The one exchange name served: the venue speaks Binance's dialect (docs/binance.md). */
const EXCHANGE = DATASET_EXCHANGE;
/** Markets one minute may name: its reads grow with them. */
const MAX_FEED_SYMBOLS = 10;

const Filter = z.object({
  channel: z.enum(FEED_CHANNELS),
  symbols: z.array(z.string().min(1).max(20)).max(MAX_FEED_SYMBOLS).optional(),
});
const FeedQuery = z.object({
  from: z
    .string()
    .max(40)
    .refine((text) => !Number.isNaN(Date.parse(text)), "an ISO 8601 date, e.g. 2026-12-07T10:00:00.000Z")
    .openapi({ example: "2026-12-07T10:00:00.000Z", description: "The replay's start (ISO 8601): its first minute opens with each book's depthSnapshot" }),
  offset: queryInt(0, 10_000_000).openapi({ description: "The minute asked: `from` plus this many minutes (required)" }),
  filters: z
    .string()
    .max(4_096)
    .optional()
    .openapi({
      example: '[{"channel":"trade","symbols":["btcusdt"]}]',
      description: `JSON: [{channel, symbols}], channels ${FEED_CHANNELS.join(", ")}; at most ${MAX_FEED_SYMBOLS} markets`,
    }),
});
const Since = z.string().openapi({ format: "date-time" });
const TardisExchange = z
  .object({
    id: z.literal(DATASET_EXCHANGE),
    name: z.string(),
    enabled: z.boolean(),
    filterable: z.boolean(),
    availableSince: Since,
    availableChannels: z.array(z.enum(FEED_CHANNELS)),
    availableSymbols: z.array(z.object({ id: z.string().openapi({ example: "btcusdt" }), type: z.literal("spot"), availableSince: Since, name: z.string() })),
    incidentReports: z.array(z.object({ from: Since, to: Since, status: z.string(), details: z.string() })),
    supportsDatasets: z.literal(true),
    datasets: z.object({
      formats: z.array(z.literal("csv")),
      dataTypes: z.array(z.enum(DATASET_TYPES)),
      exportedFrom: Since,
      exportedUntil: Since.openapi({ description: "Today's start: a day is built after it ends" }),
      symbols: z.array(z.object({ id: z.string().openapi({ example: "BTCUSDT" }), type: z.literal("spot"), availableSince: Since, availableTo: Since })),
    }),
  })
  .openapi("TardisExchange");
const ExchangeParam = z.object({ exchange: z.string().openapi({ param: { name: "exchange", in: "path" }, example: EXCHANGE }) });

/** The markets and channels `filters` names; 400 when it names none, too many, or a channel not served. */
function parseFilters(text: string | undefined): FeedAsk[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text ?? "[]");
  } catch {
    throw problem("VALIDATION_FAILED", 'filters: not JSON; send [{"channel":"trade","symbols":["btcusdt"]}]');
  }
  const parsed = z
    .array(Filter)
    .max(FEED_CHANNELS.length * 2)
    .safeParse(raw);
  if (!parsed.success) throw problem("VALIDATION_FAILED", `filters: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  const asks = new Map<string, Set<FeedChannel>>();
  for (const filter of parsed.data) {
    if (!filter.symbols || filter.symbols.length === 0) {
      throw problem(
        "VALIDATION_FAILED",
        `filters: name the markets of channel ${filter.channel} (symbols, at most ${MAX_FEED_SYMBOLS}): a minute of every market is not served`,
      );
    }
    for (const symbol of filter.symbols) {
      const market = resolveMarket(symbol.toUpperCase());
      const channels = asks.get(market.symbol) ?? new Set<FeedChannel>();
      channels.add(filter.channel);
      asks.set(market.symbol, channels);
    }
  }
  if (asks.size === 0) throw problem("VALIDATION_FAILED", "filters: name at least one channel and its markets");
  if (asks.size > MAX_FEED_SYMBOLS) throw problem("VALIDATION_FAILED", `filters: at most ${MAX_FEED_SYMBOLS} markets a request`);
  return [...asks].map(([symbol, channels]) => ({ market: resolveMarket(symbol), channels }));
}

function requireExchange(exchange: string): void {
  if (exchange !== EXCHANGE) throw problem("NOT_FOUND", `${exchange.slice(0, 40)}: this venue's history is served as exchange ${EXCHANGE}`);
}

/** A gzipped body as stored: the runtime must not encode it again. */
function gzipped(bytes: ArrayBuffer, headers: Record<string, string>): Response {
  return new Response(bytes, { headers: { "Content-Type": "application/x-ndjson", "Content-Encoding": "gzip", ...headers }, encodeBody: "manual" });
}

/**
 * The venue's history in Tardis's API shapes (docs/tardis.md): `tardis-dev`'s `replay` and
 * `replayNormalized`, given this prefix as `endpoint`, read it unchanged. Public, behind a limit
 * that waits for its window rather than refusing a bulk reader's burst.
 *
 * @example
 * app.route("/tardis/v1", tardisRoutes(pacedPublicLimit(15_000)));
 */
export function tardisRoutes(limit: MiddlewareHandler<AppEnv>) {
  const router = createRouter();
  router.openAPIRegistry.registerPath({
    method: "get",
    path: "/exchanges/{exchange}",
    operationId: "tardisExchange",
    tags,
    summary: "The exchange's details as Tardis describes one",
    description: `Exchange \`${EXCHANGE}\` only: its markets (\`availableSymbols\`), the feed's channels and the datasets' days (docs/tardis.md#exchange-details).`,
    request: { params: ExchangeParam },
    responses: { ...okJson(TardisExchange, "The details"), ...problemResponses(404, 429) },
  });
  router.get("/exchanges/:exchange", limit, async (c) => {
    requireExchange(c.req.param("exchange"));
    isolateMetrics.counts.add("mds_tardis_reads_total", { kind: "details", source: "edge" });
    // Parsed by its schema: what is served is what /openapi.json says.
    const details = TardisExchange.parse(await exchangeDetails(c.env, EXCHANGE, FEED_CHANNELS));
    return c.json(details, 200, { "Cache-Control": "public, max-age=60" });
  });

  router.openAPIRegistry.registerPath({
    method: "get",
    path: "/data-feeds/{exchange}",
    operationId: "tardisDataFeed",
    tags,
    summary: "One minute of the feed, as Binance sent it",
    description: `Gzipped lines: the moment (ISO 8601 to a tenth of a microsecond, 28 characters), a space, Binance's combined-stream message — \`{symbol}@trade\`, \`{symbol}@depth@100ms\`, \`{symbol}@bookTicker\`, and a generated \`{symbol}@depthSnapshot\` at the replay's first minute and each hour's. From the book's history (closed hours read at the edge) and the trades. A minute not begun is 400; one with nothing is an empty file. At most ${MAX_FEED_SYMBOLS} markets and 16 MiB of lines (more: 400); over the public limit a request waits up to 15 s for its window (docs/tardis.md#data-feeds).`,
    request: { params: ExchangeParam, query: FeedQuery },
    responses: {
      200: { description: "The minute's lines, gzipped", content: { "application/x-ndjson": { schema: z.string().openapi({ format: "binary" }) } } },
      ...problemResponses(400, 404, 429, 503),
    },
  });
  router.get("/data-feeds/:exchange", limit, async (c) => minuteAnswer(c));

  router.openAPIRegistry.registerPath({
    method: "get",
    path: "/datasets/{exchange}/{type}/{year}/{month}/{day}/{file}",
    operationId: "tardisDataset",
    tags,
    summary: "A market's day as one of Tardis's CSV datasets",
    description: `\`{SYMBOL}.csv.gz\` of type ${DATASET_TYPES.map((t) => `\`${t}\``).join(", ")}, built once a day after it ends, from R2 (no market's host is called), kept 30 days. A day not ended is 404; an older one not kept is built again and answered 404 with \`Retry-After: 60\` meanwhile (docs/tardis.md#datasets).`,
    request: {
      params: z.object({
        exchange: z.string().openapi({ param: { name: "exchange", in: "path" }, example: EXCHANGE }),
        type: z.enum(DATASET_TYPES).openapi({ param: { name: "type", in: "path" } }),
        year: z.string().openapi({ param: { name: "year", in: "path" }, example: "2026" }),
        month: z.string().openapi({ param: { name: "month", in: "path" }, example: "12" }),
        day: z.string().openapi({ param: { name: "day", in: "path" }, example: "06" }),
        file: z.string().openapi({ param: { name: "file", in: "path" }, example: "BTCUSDT.csv.gz" }),
      }),
    },
    responses: {
      200: { description: "The day's CSV, gzipped", content: { "application/gzip": { schema: z.string().openapi({ format: "binary" }) } } },
      ...problemResponses(404, 429),
    },
  });
  router.get("/datasets/:exchange/:type/:year/:month/:day/:file", limit, async (c) => {
    const { exchange, type, year, month, day, file } = c.req.param();
    requireExchange(exchange);
    const start = parseDay(`${year}-${month}-${day}`);
    const symbol = /^([A-Z0-9]{2,20})\.csv\.gz$/.exec(file)?.[1];
    if (!DATASET_TYPES.includes(type as DatasetType) || start === undefined || !symbol) {
      throw problem("NOT_FOUND", `${c.req.path.slice(0, 160)}: datasets are /datasets/${EXCHANGE}/{${DATASET_TYPES.join("|")}}/YYYY/MM/DD/{SYMBOL}.csv.gz`);
    }
    return datasetResponse(c.env, resolveMarket(symbol), type as DatasetType, start, Date.now());
  });
  return router;
}

async function minuteAnswer(c: Context<AppEnv>): Promise<Response> {
  requireExchange(c.req.param("exchange")!);
  const parsed = FeedQuery.safeParse(c.req.query());
  if (!parsed.success) throw problem("VALIDATION_FAILED", parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
  const { from, offset, filters } = parsed.data;
  if (offset === undefined) throw problem("VALIDATION_FAILED", "offset: required, whole minutes from `from`");
  const start = Date.parse(from) + offset * MINUTE_MS;
  if (start > Date.now()) throw problem("VALIDATION_FAILED", `the minute from ${new Date(start).toISOString()} has not begun`);
  const asks = parseFilters(filters);
  const cache = typeof caches === "undefined" ? undefined : caches.default;
  const snapshot = offset === 0 || start % HOUR_MS === 0;
  // Keyed by what changes the answer: the minute, whether it opens with snapshots, each market's channels (not how filters spelled them).
  const asked = asks.map(({ market, channels }) => `${market.symbol}:${[...channels].sort().join("+")}`).sort();
  const key = `https://tardis.internal/data-feeds/${EXCHANGE}/${start}/${snapshot ? "snapshot" : "on"}/${asked.join(",")}`;
  const hit = await cache?.match(key);
  if (hit) {
    isolateMetrics.counts.add("mds_tardis_reads_total", { kind: "minute", source: "cache" });
    return gzipped(await hit.arrayBuffer(), { "Cache-Control": "public, max-age=31536000, immutable", "X-Tardis-Read": "cache" });
  }
  const { waitUntil } = readContext(c);
  const read = await readMinute(c.env, closedHistoryOf(c.env, undefined, waitUntil), asks, start, snapshot);
  const source = read.hostCalls === 0 ? "edge" : "host";
  isolateMetrics.counts.add("mds_tardis_reads_total", { kind: "minute", source });
  const body = await gzipText(read.text);
  // Read wholly from closed history and days past late trades: it never changes. What the host answered may still (what is open, late trades).
  const { final } = read;
  const cacheControl = final ? "public, max-age=31536000, immutable" : "public, max-age=0";
  if (final && cache) {
    const put = cache.put(key, new Response(body.slice(0), { headers: { "Cache-Control": cacheControl } })).catch(() => {});
    if (waitUntil) waitUntil(put);
    else await put;
  }
  return gzipped(body, { "Cache-Control": cacheControl, "X-Tardis-Read": source });
}
