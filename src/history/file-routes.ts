import { z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { problem } from "../core/problem";
import { okJson, problemResponses } from "../core/schemas";
import { DAY_MS, HOUR_MS } from "../domain/intervals";
import type { AppEnv } from "../http/env";
import { createRouter, routesOf } from "../http/router";
import { resolveMarket } from "../market/lookup";
import { billed } from "../metrics/billed-bindings";
import { BOOK_FILE_KINDS, BOOK_FILES_AFTER_MS, BOOK_FILES_KEPT_DAYS, parseHour } from "./book-files";
import { handBookHourAgain } from "./book-files-workflow";
import { DAILY_KLINE_INTERVALS, DAILY_TRADE_FILES_KEPT_DAYS, fileIsFinal, parseDay } from "./daily-files";
import { handDayAgain } from "./daily-files-workflow";
import { BUILD_WAIT_S } from "./file-workflows";

const tags = ["Historical data files"];
const SYMBOL = /^[A-Z0-9]{2,20}$/;

const FileParams = z.object({
  symbol: z.string().openapi({ param: { name: "symbol", in: "path" }, example: "BTCUSDT" }),
  file: z.string().openapi({ param: { name: "file", in: "path" }, example: "BTCUSDT-trades-2026-11-23.zip" }),
});
const ListingSchema = z
  .object({
    prefix: z.string().openapi({ example: "data/spot/daily/trades/BTCUSDT/" }),
    files: z.array(z.object({ name: z.string(), bytes: z.number().int(), uploaded: z.number().int().openapi({ description: "Unix ms" }) })),
    cursor: z.string().optional().openapi({ description: "More files: ask again with ?cursor=" }),
  })
  .openapi("DailyFiles");
const fileResponses = {
  200: {
    description: "The zip (one CSV inside), or its CHECKSUM line (`sha256  name`, as sha256sum writes it)",
    content: { "application/zip": { schema: z.string().openapi({ format: "binary" }) }, "text/plain": { schema: z.string() } },
  },
  ...problemResponses(404, 429),
};

/**
 * The daily files in Binance's public-data layout (docs/history.md#daily-files), served from R2
 * as they were written: no market object runs to serve them. A file is cached as immutable
 * when it was written after no late trade could reach its day (`fileIsFinal`).
 *
 * @example
 * app.route("/", historyFileRoutes(publicLimit));
 */
export function historyFileRoutes(limit: MiddlewareHandler<AppEnv>) {
  const serve = async (c: Context<AppEnv>, key: string, symbol: string, name: string, expected: RegExp, family: FileFamily) => {
    const { hourly } = family;
    const match = expected.exec(name);
    const start = match ? (hourly ? parseHour : parseDay)(match[1]!) : undefined;
    if (start === undefined) throw problem("NOT_FOUND", `${key} is not ${hourly ? "an hourly" : "a daily"} file's name`);
    const object = await billed(c.env, "HISTORY").get(key);
    if (!object) {
      if (hourly) return missingHour(c.env, key, symbol, start, Date.now());
      if (family.param === "kind") return missingDay(c.env, key, symbol, start, Date.now());
      throw problem("NOT_FOUND", `${key} has not been written: the files of a day are written at 00:05 UTC the day after`);
    }
    // An hour's book files are written once, after the hour (docs/history.md#book-files).
    const final = hourly || fileIsFinal(start, object.uploaded.getTime());
    return new Response(object.body, {
      headers: {
        "Content-Type": name.endsWith(".CHECKSUM") ? "text/plain; charset=utf-8" : "application/zip",
        "Content-Length": String(object.size),
        ETag: object.httpEtag,
        "Cache-Control": final ? "public, max-age=31536000, immutable" : "public, max-age=300",
      },
    });
  };
  const list = async (c: Context<AppEnv>, prefix: string) => {
    const listed = await billed(c.env, "HISTORY").list({ prefix, limit: 1000, ...(c.req.query("cursor") ? { cursor: c.req.query("cursor") } : {}) });
    return c.json(
      {
        prefix,
        files: listed.objects.map((o) => ({ name: o.key.slice(prefix.length), bytes: o.size, uploaded: o.uploaded.getTime() })),
        ...(listed.truncated ? { cursor: listed.cursor } : {}),
      },
      200,
    );
  };
  const symbolOf = (symbol: string) => {
    if (!SYMBOL.test(symbol)) throw problem("NOT_FOUND", `${symbol} is not a symbol as the files name it (BTCUSDT)`);
    return symbol;
  };
  /** A file's name, its date (`YYYY-MM-DD`, with `-HH` for an hour's) captured. */
  const name = (symbol: string, what: string, hourly: boolean) =>
    new RegExp(`^${symbol}-${what}-(\\d{4}-\\d{2}-\\d{2}${hourly ? "-\\d{2}" : ""})\\.zip(?:\\.CHECKSUM)?$`);

  const route = routesOf({ tags, middleware: [limit] });
  const router = createRouter();
  // Most specific first: `klines/{symbol}/{interval}` would otherwise read as `{kind}/{symbol}/{file}`.
  for (const family of FAMILIES) {
    const { param, values, hourly } = family;
    const folderOf = (params: Record<string, string>) => family.folder.replace("{symbol}", symbolOf(params.symbol!)).replace(`{${param}}`, params[param]!);
    const own = z.object({ [param]: z.enum(values).openapi({ param: { name: param, in: "path" } }) });
    router.openapi(
      route("get", `/${family.folder}/{file}`, {
        ...family.file,
        request: { params: own.merge(FileParams) },
        responses: hourly ? { ...fileResponses, ...problemResponses(503) } : fileResponses,
      }),
      async (c) => {
        const params = c.req.valid("param") as Record<string, string>;
        return serve(c, `${folderOf(params)}/${params.file}`, params.symbol!, params.file!, name(params.symbol!, params[param]!, hourly), family);
      },
    );
    router.openapi(
      route("get", `/${family.folder}`, {
        ...family.listing,
        request: { params: own.extend({ symbol: FileParams.shape.symbol }), query: z.object({ cursor: z.string().max(1024).optional() }) },
        responses: { ...okJson(ListingSchema, `Files, by name (so by ${hourly ? "hour" : "day"})`), ...problemResponses(404, 429) },
      }),
      (c) => list(c, `${folderOf(c.req.valid("param") as Record<string, string>)}/`),
    );
    // The listing also answers with a trailing slash, as a directory would.
    router.get(`/${family.folder.replace(/\{(\w+)\}/g, ":$1")}/`, limit, (c) => {
      if (!(values as readonly string[]).includes(c.req.param(param) ?? "")) throw problem("NOT_FOUND", family.unknown);
      return list(c, `${folderOf(c.req.param())}/`);
    });
  }
  return router;
}

/** A Workflow that could not be asked to build `key` again: 503, ask again in a minute. */
function notNow(key: string): (error: unknown) => never {
  return (error) => {
    const why = error instanceof Error ? error.message : String(error);
    throw problem("UNAVAILABLE", `${key} cannot be built again now (${why}): ask again in a minute`, {}, { "Retry-After": String(BUILD_WAIT_S) });
  };
}

/**
 * An hour's file not in R2: not written yet, or an hour without a book change — or expired
 * (BOOK_FILES_KEPT_DAYS), then handed to its Workflow again (from the segments, kept for ever) and
 * answered 404 with when to ask again.
 */
async function missingHour(env: Env, key: string, symbol: string, hour: number, now: number): Promise<never> {
  const expired = now - (hour + HOUR_MS + BOOK_FILES_AFTER_MS) >= (BOOK_FILES_KEPT_DAYS - 1) * DAY_MS;
  if (!expired) {
    throw problem(
      "NOT_FOUND",
      `${key} has not been written: an hour's book files are written in the minutes after it ends, for hours in which the book changed`,
    );
  }
  const { priceScale, quantityScale } = resolveMarket(symbol);
  const handed = await handBookHourAgain(env, { symbol, hour, priceScale, quantityScale }, now).catch(notNow(key));
  if (handed === "none") throw problem("NOT_FOUND", `${key} has no file: the book did not change in that hour`);
  throw problem(
    "NOT_FOUND",
    `${key} is being built (an hour's book files are kept ${BOOK_FILES_KEPT_DAYS} days, then built again from the book's history when asked): ask again in a minute`,
    {},
    { "Retry-After": String(BUILD_WAIT_S) },
  );
}

/**
 * A day's trades or aggTrades file not in R2: not written yet — or expired
 * (DAILY_TRADE_FILES_KEPT_DAYS), then handed to its Workflow again (from the trade archive's chunks,
 * kept for ever) and answered 404 with when to ask again; a day the market did not trade has none.
 */
async function missingDay(env: Env, key: string, symbol: string, day: number, now: number): Promise<never> {
  if (now - (day + DAY_MS) < (DAILY_TRADE_FILES_KEPT_DAYS - 1) * DAY_MS) {
    throw problem("NOT_FOUND", `${key} has not been written: the files of a day are written at 00:05 UTC the day after`);
  }
  const handed = await handDayAgain(env, resolveMarket(symbol), day, now).catch(notNow(key));
  if (handed === "none") throw problem("NOT_FOUND", `${key} has no file: the market did not trade that day`);
  if (handed === "skipped") {
    throw problem("NOT_FOUND", `${key} was not built again: the trades read from the archive are not the count the day's candles hold`);
  }
  throw problem(
    "NOT_FOUND",
    `${key} is being built (a day's trades files are kept ${DAILY_TRADE_FILES_KEPT_DAYS} days, then built again from the trade archive when asked): ask again in a minute`,
    {},
    { "Retry-After": String(BUILD_WAIT_S) },
  );
}

/** Files of one kind: where a market's lie, the path parameter that tells them apart, their routes' words. */
interface FileFamily {
  /** A market's folder in R2 and in the path, `{symbol}` and `{param}` standing for theirs. */
  folder: string;
  param: "kind" | "interval";
  values: readonly [string, ...string[]];
  hourly: boolean;
  file: { operationId: string; summary: string; description: string };
  listing: { operationId: string; summary: string };
  /** The 404 of a listing of a value not written. */
  unknown: string;
}

const FAMILIES: readonly FileFamily[] = [
  {
    folder: "data/spot/daily/klines/{symbol}/{interval}",
    param: "interval",
    values: DAILY_KLINE_INTERVALS,
    hourly: false,
    file: {
      operationId: "getDailyKlinesFile",
      summary: "A day's klines file (zip) in 1m, 1h or 1d, or its .CHECKSUM",
      description: "`{SYMBOL}-{interval}-{YYYY-MM-DD}.zip`: Binance's 12 kline columns, times in Unix ms.",
    },
    listing: { operationId: "listDailyKlinesFiles", summary: "The days of a market's klines files in one interval" },
    unknown: `klines files are written in ${DAILY_KLINE_INTERVALS.join(", ")}`,
  },
  {
    folder: "data/spot/daily/{kind}/{symbol}",
    param: "kind",
    values: ["trades", "aggTrades"],
    hourly: false,
    file: {
      operationId: "getDailyTradesFile",
      summary: "A day's trades or aggTrades file (zip), or its .CHECKSUM",
      description:
        "`{SYMBOL}-trades-{YYYY-MM-DD}.zip`: `id,price,qty,quoteQty,time,isBuyerMaker,isBestMatch`, times in Unix ms. aggTrades: `a,p,q,f,l,T,m,M`. Kept 30 days: an older day is built again from the trade archive when asked — 404 with `Retry-After` meanwhile.",
    },
    listing: {
      operationId: "listDailyTradesFiles",
      summary: "The days of a market's trades or aggTrades files (the last 30 days', and older days built again when asked)",
    },
    unknown: "the daily files are trades, aggTrades and klines/{interval}",
  },
  {
    folder: "data/spot/hourly/{kind}/{symbol}",
    param: "kind",
    values: BOOK_FILE_KINDS,
    hourly: true,
    file: {
      operationId: "getHourlyBookFile",
      summary: "An hour's book or bookTicker file (zip), or its .CHECKSUM",
      description:
        "`{SYMBOL}-book-{YYYY-MM-DD-HH}.zip`: `sequence,time,side,price,quantity,update_type`, opening with the whole book as the hour began (`snapshot`), then every level each update set (`delta`; quantity 0 removes it). `{SYMBOL}-bookTicker-{YYYY-MM-DD-HH}.zip`: `sequence,time,bid_price,bid_qty,ask_price,ask_qty` at every change of the best levels (docs/history.md#book-files). Kept 30 days: an older hour is built again from the book's history when asked — 404 with `Retry-After` meanwhile.",
    },
    listing: {
      operationId: "listHourlyBookFiles",
      summary: "The hours of a market's book or bookTicker files (the last 30 days', and older hours built again when asked)",
    },
    unknown: `the hourly files are ${BOOK_FILE_KINDS.join(" and ")}`,
  },
];
