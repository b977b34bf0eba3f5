import { z } from "@hono/zod-openapi";
import { auditOf, operatorRoute } from "../admin/auth";
import { auditStatement } from "../audit/audit-log";
import { isCsvRequest, isJsonRequest } from "../core/media-types";
import { marketObject } from "../core/object-ids";
import { problem, unwrap } from "../core/problem";
import { jsonBody, okJson, problemResponses } from "../core/schemas";
import { DAY_MS } from "../domain/intervals";
import { createRouter } from "../http/router";
import { resolveMarket } from "../market/lookup";
import { PairParam } from "../market/schemas";
import { MAX_LIST_SYMBOLS } from "../market/symbol-lists";
import { writeDailyFiles } from "./archive-days";
import { parseHour } from "./book-files";
import { bookHourId } from "./book-files-workflow";
import { parseDay } from "./daily-files";
import { csvRows, IMPORT_MAX_BYTES, importedMinutes, MAX_IMPORT_ROWS } from "./kline-import";

const Cell = z.union([z.string().max(64), z.number()]);
const ImportBody = z
  .object({
    interval: z.literal("1m").openapi({ description: "1m: every coarser interval is built from the minutes" }),
    rows: z
      .array(z.array(Cell).max(12))
      .min(1)
      .max(MAX_IMPORT_ROWS)
      .openapi({
        description:
          "Binance's kline rows: [openTime, open, high, low, close, volume, closeTime, quoteVolume, count, takerBuyVolume, takerBuyQuoteVolume] (a 12th field is ignored); times in ms (µs accepted)",
        example: [[1763942400000, "97000.10", "97010.00", "96990.00", "97005.55", "1.25000", 1763942459999, "121256.9375000", 42, "0.60000", "58203.3300000"]],
      }),
  })
  .strict()
  .openapi("KlineImport");

const ImportResultSchema = z
  .object({
    symbol: z.string(),
    interval: z.literal("1m"),
    imported: z.number().int().openapi({ description: "Minutes written" }),
    replaced: z.number().int().openapi({ description: "Of those, minutes an earlier import had written" }),
    skipped: z.number().int().openapi({ description: "Rows without trades: the service keeps no empty candle" }),
    from: z.number().int().nullable().openapi({ description: "The first imported minute (null: none)" }),
    to: z.number().int().nullable().openapi({ description: "The last imported minute (null: none)" }),
  })
  .openapi("KlineImportResult");

/** How long the operator's `POST /admin/archive` waits for its days' instances before answering `pending`. */
const ARCHIVE_WAIT_MS = 30_000;
/** Markets named at most for the answer to wait (each waiting market asks its instances ten times a second). */
const ARCHIVE_WAIT_MARKETS = 16;

const DayFilesSchema = z
  .object({
    symbol: z.string(),
    date: z.string().openapi({ example: "2026-11-23" }),
    trades: z.number().int().openapi({ description: "The day's trades (0: the market did not trade, and no file was written)" }),
    files: z.array(z.object({ key: z.string(), bytes: z.number().int(), sha256: z.string() })),
    skipped: z.string().optional().openapi({ description: "Why the trades files were not written" }),
    rewritten: z.array(z.string()).optional().openapi({ description: "Past days handed on again because late trades reached them" }),
    failed: z.string().optional().openapi({
      description:
        "Set when this market's day could not be handed on (its host tried three times: the day is kept marked and the next run hands it), or when a Workflow instance failed",
    }),
    instance: z
      .string()
      .optional()
      .openapi({ example: "day-BTCUSDT-2026-11-23-mhx3k2a0", description: "The `daily-files` Workflow instance that writes the day" }),
    host: z.object({ calls: z.number().int(), bytes: z.number().int() }).optional().openapi({
      description: "What building the day cost its market's host: its calls (the open and each page of trades) and the bytes of stored trades they copied",
    }),
    pending: z.boolean().optional().openapi({ description: "True when an instance was still at work when answered: its files come when it ends" }),
  })
  .openapi("DayFiles");

const HourBuildSchema = z
  .object({
    id: z.string().openapi({ example: "book-BTCUSDT-2026-11-25-14", description: "The hour's Workflow instance" }),
    status: z.string().openapi({ example: "queued", description: "The instance's status after the restart (queued, running, …)" }),
  })
  .openapi("BookHourBuild");

/**
 * A market's history, the operator's part, mounted at `/admin`: its past brought in as one-minute
 * klines (docs/history.md#import), a day's files written now (docs/history.md#daily-files), and
 * an hour's book files built again (docs/history.md#built-off-the-markets-host). All audited.
 *
 * @example
 * app.route("/admin", historyOperatorRoutes);
 */
export const historyOperatorRoutes = createRouter()
  .openapi(
    operatorRoute("post", "/markets/{pair}/history/klines", {
      operationId: "importKlines",
      summary: "Import a market's past as one-minute candles",
      description: `Up to ${MAX_IMPORT_ROWS.toLocaleString("en")} rows (${IMPORT_MAX_BYTES / 1024 / 1024} MiB) a request, as JSON or as \`text/csv\` in Binance's public-data kline columns (a header line is optional). Every row is checked against the market's scales first; the first bad one refuses the request (400, \`rows.{i}.{field}\`). Re-importing a minute replaces it; a minute that holds live trades is 409 LIVE_MINUTE. Rows without trades are skipped. Imported minutes feed every interval and window like live ones. Audited as \`history.import\`.`,
      request: {
        params: PairParam,
        body: {
          // Required in fact: marked optional only so the route's JSON validator lets a CSV body through.
          required: false,
          content: {
            "application/json": { schema: ImportBody },
            "text/csv": {
              schema: z
                .string()
                .openapi({ example: "1763942400000,97000.10,97010.00,96990.00,97005.55,1.25000,1763942459999,121256.9375000,42,0.60000,58203.3300000,0" }),
            },
          },
        },
      },
      responses: { ...okJson(ImportResultSchema, "Imported"), ...problemResponses(400, 401, 404, 409, 413, 415, 429, 503) },
    }),
    async (c) => {
      const market = resolveMarket(c.req.valid("param").pair);
      let rows: unknown[];
      if (isJsonRequest(c.req.raw)) rows = (c.req.valid("json") as z.infer<typeof ImportBody>).rows;
      else if (isCsvRequest(c.req.raw)) {
        rows = csvRows(await c.req.text());
        if (rows.length === 0 || rows.length > MAX_IMPORT_ROWS) {
          throw problem("VALIDATION_FAILED", `a CSV import has 1 to ${MAX_IMPORT_ROWS} rows`, { errors: [{ path: "rows", message: `${rows.length} rows` }] });
        }
      } else throw problem("UNSUPPORTED_MEDIA_TYPE", "send the rows as application/json or text/csv");
      const { minutes, skipped } = importedMinutes(rows, market, Date.now());
      const from = minutes[0]?.minute ?? null;
      const to = minutes.at(-1)?.minute ?? null;
      // Recorded before the market writes: an import that failed half-way through the call is in the log too.
      await auditStatement(c.env.DB, auditOf(c), "history.import", market.symbol, { interval: "1m", rows: rows.length, from, to }).run();
      const result = unwrap(await marketObject(c.env, market).importMinutes(market, minutes));
      return c.json({ symbol: market.symbol, interval: "1m" as const, ...result, skipped, from, to }, 200);
    },
  )
  .openapi(
    operatorRoute("post", "/archive", {
      operationId: "writeDailyFiles",
      summary: "Write (or rewrite) a UTC day's files in Binance's public-data layout",
      description:
        "For the markets named, or every listed one: trades, aggTrades and klines 1m/1h/1d of the day, each a zip with its .CHECKSUM, under /data/spot/daily/, built off the market's host by the `daily-files` Workflow (an instance a market-day, and one for each past day a late trade reached). A market that did not trade that day writes nothing. With up to 16 markets named the answer waits up to 30 s for the instances, then says `pending` for those still at work; with more, or none named (every listed market), it answers `pending` at once. The cron does the same for yesterday at 00:05 UTC, without waiting. Writing a day again gives the same bytes. Audited as `history.archive`.",
      request: jsonBody(
        z
          .object({
            date: z.string().openapi({ example: "2026-11-23", description: "A UTC day that has ended" }),
            symbols: z.array(z.string().max(64)).min(1).max(MAX_LIST_SYMBOLS).optional(),
          })
          .strict(),
      ),
      responses: {
        ...okJson(z.object({ date: z.string(), markets: z.array(DayFilesSchema) }), "Written"),
        ...problemResponses(400, 401, 404, 413, 415, 429, 503),
      },
    }),
    async (c) => {
      const { date, symbols } = c.req.valid("json");
      const day = parseDay(date);
      if (day === undefined || day + DAY_MS > Date.now()) {
        throw problem("VALIDATION_FAILED", "date is a UTC day that has ended, as YYYY-MM-DD", {
          errors: [{ path: "date", message: "a past day, YYYY-MM-DD" }],
        });
      }
      const markets = symbols?.map(resolveMarket);
      await auditStatement(c.env.DB, auditOf(c), "history.archive", symbols?.join(",") ?? "*", { date }).run();
      // Waited for when a few markets are named; a whole venue's days are answered `pending` at once.
      const waitMs = markets !== undefined && markets.length <= ARCHIVE_WAIT_MARKETS ? ARCHIVE_WAIT_MS : 0;
      return c.json({ date, markets: await writeDailyFiles(c.env, day, markets, waitMs) }, 200);
    },
  )
  .openapi(
    operatorRoute("post", "/markets/{pair}/history/book-files/{hour}", {
      operationId: "rebuildBookHour",
      summary: "Build an hour's book files again (restart its Workflow instance)",
      description:
        "The hour (UTC, `YYYY-MM-DD-HH`) must have been handed to the `book-files` Workflow by the market's host (it had book changes and has closed): its instance starts again from its first step — for an hour listed as failing on /status once its cause is mended. 404 when the hour has no instance. Audited as `history.book-files`.",
      request: {
        params: PairParam.extend({ hour: z.string().max(32).openapi({ example: "2026-11-25-14", description: "A UTC hour, YYYY-MM-DD-HH" }) }),
      },
      responses: { ...okJson(HourBuildSchema, "Restarted"), ...problemResponses(400, 401, 404, 429, 503) },
    }),
    async (c) => {
      const params = c.req.valid("param");
      const market = resolveMarket(params.pair);
      const hour = parseHour(params.hour);
      if (hour === undefined)
        throw problem("VALIDATION_FAILED", "hour is a UTC hour, as YYYY-MM-DD-HH", { errors: [{ path: "hour", message: "YYYY-MM-DD-HH" }] });
      const id = bookHourId(market.symbol, hour);
      const instance = await c.env.BOOK_FILES.get(id).catch(() => undefined);
      if (!instance)
        throw problem("NOT_FOUND", `${market.symbol} has no book files' instance for ${params.hour}: the hour had no book change, or has not closed`);
      await auditStatement(c.env.DB, auditOf(c), "history.book-files", market.symbol, { hour: params.hour }).run();
      await instance.restart();
      return c.json({ id, status: (await instance.status()).status }, 200);
    },
  );
