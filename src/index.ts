import { createApp } from "./app";
import type { Env } from "./env";

export { AccessGuard } from "./access/access-guard";
export { DemoFeed } from "./market/demo-feed-object";
export { MarketObject } from "./market/market-object";
export { PriceIndex } from "./market/price-index-object";
export { StreamHub } from "./streams/stream-hub";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
