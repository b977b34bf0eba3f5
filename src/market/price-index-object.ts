import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import type { PriceReport, PriceSnapshot } from "./price-index";

export const PRICE_SNAPSHOT_KEY = "prices/snapshot";
/** Workers KV accepts one write per second per key. */
const KV_WRITE_EVERY_MS = 1_000;

/**
 * Collects the markets' price reports and writes the snapshot to KV at most once a second.
 * One global instance: reports are tiny and arrive at most once a second per market.
 */
export class PriceIndex extends DurableObject<Env> {
  private markets: Record<string, PriceReport> | undefined;
  private lastWriteAt = 0;

  private async loaded(): Promise<Record<string, PriceReport>> {
    this.markets ??= (await this.ctx.storage.get<Record<string, PriceReport>>("markets")) ?? {};
    return this.markets;
  }

  async report(report: PriceReport): Promise<void> {
    const markets = await this.loaded();
    markets[report.symbol] = report;
    await this.ctx.storage.put("markets", markets);
    const now = Date.now();
    if (now - this.lastWriteAt >= KV_WRITE_EVERY_MS) await this.writeSnapshot(now);
    else if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(this.lastWriteAt + KV_WRITE_EVERY_MS);
  }

  /** The current snapshot, straight from the index (used when KV has none yet). */
  async snapshot(): Promise<PriceSnapshot> {
    return { asOf: Date.now(), markets: await this.loaded() };
  }

  private async writeSnapshot(now: number): Promise<void> {
    this.lastWriteAt = now;
    const snapshot: PriceSnapshot = { asOf: now, markets: await this.loaded() };
    await this.env.PRICES.put(PRICE_SNAPSHOT_KEY, JSON.stringify(snapshot));
  }

  override async alarm(): Promise<void> {
    await this.writeSnapshot(Date.now());
  }
}
