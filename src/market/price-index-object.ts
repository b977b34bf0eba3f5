import { DurableObject } from "cloudflare:workers";
import { ShardPublisher } from "../streams/publisher";
import { type PriceReport, type PriceSnapshot, pricesIn } from "./price-index";

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
  /** Shards subscribed to `prices.{QUOTE}`, per quote. */
  private publishers: Map<string, ShardPublisher> | undefined;

  private async publishersByQuote(): Promise<Map<string, ShardPublisher>> {
    if (!this.publishers) {
      const stored = (await this.ctx.storage.get<Record<string, string[]>>("shards")) ?? {};
      this.publishers = new Map();
      for (const [quote, shards] of Object.entries(stored)) this.publishers.set(quote, this.publisherFor(shards));
    }
    return this.publishers;
  }

  /** The shards of every quote are stored together, whichever quote's set changed. */
  private publisherFor(shards: readonly string[]): ShardPublisher {
    return new ShardPublisher(this.env, this.ctx, shards, async () => {
      const all: Record<string, string[]> = {};
      for (const [q, publisher] of this.publishers!) all[q] = publisher.list();
      await this.ctx.storage.put("shards", all);
    });
  }

  async subscribeShard(quote: string, shard: string): Promise<void> {
    const publishers = await this.publishersByQuote();
    let publisher = publishers.get(quote);
    if (!publisher) publishers.set(quote, (publisher = this.publisherFor([])));
    await publisher.add(shard);
  }

  async unsubscribeShard(quote: string, shard: string): Promise<void> {
    await (await this.publishersByQuote()).get(quote)?.remove(shard);
  }

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

  private async writeSnapshot(now: number): Promise<void> {
    this.lastWriteAt = now;
    const snapshot: PriceSnapshot = { asOf: now, markets: await this.loaded() };
    await this.env.PRICES.put(PRICE_SNAPSHOT_KEY, JSON.stringify(snapshot));
    for (const [quote, publisher] of await this.publishersByQuote()) {
      publisher.publish([{ stream: `prices.${quote}`, data: { quote, asOf: now, data: pricesIn(snapshot, quote) } }]);
    }
  }

  override async alarm(): Promise<void> {
    await this.writeSnapshot(Date.now());
  }
}
