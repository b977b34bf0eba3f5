/**
 * A day's dataset as `downloadDatasets` asks for it (docs/tardis.md#datasets): from R2, no market's
 * host called. The files are kept DATASETS_KEPT_DAYS; one asked after that is handed to the
 * `datasets` Workflow — once a market-day a week at most — and answered 404 with when to ask
 * again. A younger day not built yet is the nightly run's: asking does not build it twice.
 */
import { problem } from "../core/problem";
import { DAY_MS } from "../domain/intervals";
import type { MarketConfig } from "../domain/market-config";
import { BOOK_FILES_AFTER_MS } from "../history/book-files";
import { dailyKey, dayName } from "../history/daily-files";
import { handDayAgain } from "../history/daily-files-workflow";
import { DATASETS_KEPT_DAYS, type DatasetType, datasetKey } from "../history/datasets";
import { handDatasetsAgain } from "../history/datasets-workflow";
import { BUILD_WAIT_S } from "../history/file-workflows";
import { billed } from "../metrics/billed-bindings";
import { isolateMetrics } from "../metrics/holder";
import { listingTimes } from "./exchange-details";

/**
 * The dataset's response, or 404: not built (a day not ended, or before the market was listed),
 * or being built now.
 *
 * @example
 * return datasetResponse(c.env, market, "trades", day, Date.now());
 */
export async function datasetResponse(env: Env, market: MarketConfig, type: DatasetType, day: number, now: number): Promise<Response> {
  const object = await billed(env, "HISTORY").get(datasetKey(type, day, market.symbol));
  isolateMetrics.counts.add("mds_tardis_reads_total", { kind: "dataset", source: "edge" });
  if (object) {
    return new Response(object.body, {
      headers: { "Content-Type": "application/gzip", "Content-Length": String(object.size), "Cache-Control": "public, max-age=3600" },
    });
  }
  const name = `${type} of ${market.symbol} on ${dayName(day)}`;
  if (day + DAY_MS + BOOK_FILES_AFTER_MS > now) {
    throw problem("NOT_FOUND", `${name} has not been built: a day's datasets are built after it ends (from 00:06 UTC the day after)`);
  }
  // Within the days kept, a day is the nightly run's (an operator hands a missed one: POST /admin/archive); asking does not build it twice.
  if (now - (day + DAY_MS) < (DATASETS_KEPT_DAYS - 1) * DAY_MS) {
    throw problem(
      "NOT_FOUND",
      `${name} has not been built yet: a day's datasets are built in the minutes after 00:05 UTC the day after`,
      {},
      {
        "Retry-After": String(BUILD_WAIT_S),
      },
    );
  }
  const listed = (await listingTimes(env.DB)).get(market.symbol) ?? 0;
  if (day + DAY_MS <= listed) throw problem("NOT_FOUND", `${name}: the market was listed on ${dayName(listed)}`);
  // The trades dataset is read from the day's trades zip: one expired too is built again first.
  const zipped = (await billed(env, "HISTORY").head(dailyKey("trades", market.symbol, day))) !== null;
  if (zipped || (await handDayAgain(env, market, day, now)) !== "building") await handDatasetsAgain(env, market, day, now, zipped);
  throw problem(
    "NOT_FOUND",
    `${name} is being built (a day's datasets are kept ${DATASETS_KEPT_DAYS} days, then built again when asked): ask again in a minute`,
    {},
    {
      "Retry-After": String(BUILD_WAIT_S),
    },
  );
}
