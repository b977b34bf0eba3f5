import { createApp } from "./app";
import { binanceDialect } from "./binance/stream-dialect";
import { dailyFilesDue, writeDailyFiles } from "./history/archive-days";
import { ledgerOptions, releaseExpiredHolds } from "./settlements/ledger";
import { registerDialect } from "./streams/dialect";

export { AccessGuard } from "./access/access-guard";
export { AddressGate } from "./access/address-gate";
export { KeyUsageLedger } from "./access/key-usage-ledger";
export { BookFilesWorkflow } from "./history/book-files-workflow";
export { DailyFilesWorkflow } from "./history/daily-files-workflow";
export { DatasetsWorkflow } from "./history/datasets-workflow";
export { DemoFeed } from "./market/demo-feed-object";
export { MarketObject } from "./market/market-object";
export { PriceIndex } from "./market/price-index-object";
export { Metrics } from "./metrics/metrics-object";
export { PublishChannel } from "./publish/publish-channel-object";
export { Registry } from "./registry/registry-object";
export { StreamHub } from "./streams/stream-hub";

const app = createApp();
// The shards speak Binance's stream protocol through the dialect interface; they import no dialect themselves.
registerDialect(binanceDialect);

export default {
  fetch: app.fetch,
  /**
   * The Cron Trigger (wrangler.toml), every minute: settlement gaps that held events long enough
   * are released; at 00:05 UTC yesterday's daily files are written (docs/history.md#daily-files).
   */
  scheduled(controller, env, ctx) {
    ctx.waitUntil(releaseExpiredHolds(env.DB, controller.scheduledTime, ledgerOptions(env)));
    const day = dailyFilesDue(controller.scheduledTime);
    if (day !== undefined) ctx.waitUntil(writeDailyFiles(env, day));
  },
} satisfies ExportedHandler<Env>;
