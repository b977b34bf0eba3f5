import { marketObject } from "../core/object-ids";
import { ProblemError } from "../core/problem";
import type { MarketConfig } from "../domain/market-config";
import { logFailure } from "../logs/log";
import { MeteredObject } from "../metrics/metered-object";
import { meterRequests } from "../metrics/object-meter";
import { ensureRegistry, findMarket } from "../registry/copy";
import { createDemoState, DEMO_TICK_MS, type DemoState, demoGrant, demoMarkets, demoTick, resync } from "./demo-feed";
import { ingest } from "./ingest";
import { IngestBodySchema } from "./schemas";

/**
 * Runs the demo feed on an alarm loop. Every batch goes through `ingest()`, the path
 * `POST /v1/ingest` takes, after the same schema check, so the demo exercises the real thing.
 */
export class DemoFeed extends MeteredObject {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, "demo-feed");
  }

  private state: DemoState | undefined;

  private enabled(): boolean {
    return this.env.DEMO_FEED === "on";
  }

  /** Starts the loop if the feed is on and it is not already running. */
  async ensureRunning(): Promise<boolean> {
    if (!this.enabled()) return false;
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now());
    return true;
  }

  private async loadState(markets: readonly MarketConfig[]): Promise<DemoState> {
    if (this.state) return this.state;
    const stored = await this.ctx.storage.get<DemoState>("state");
    if (stored) return (this.state = stored);
    // A new feed continues each market's book sequence rather than restarting it at 1.
    const sequences: Record<string, number> = {};
    for (const market of markets) sequences[market.symbol] = await this.bookSequence(market);
    const seed = Number.parseInt(this.env.DEMO_SEED ?? "1", 10) || 1;
    return (this.state = createDemoState(seed, Date.now().toString(36), sequences));
  }

  private async bookSequence(market: MarketConfig): Promise<number> {
    const snapshot = await marketObject(this.env, market).orderBook(market, 1);
    return "sequence" in snapshot ? snapshot.sequence : 0;
  }

  /** One tick: every market of `DEMO_MARKETS` gets its batch. Returns how many batches were accepted. */
  async step(now = Date.now()): Promise<number> {
    const markets = demoMarkets(this.env.DEMO_MARKETS, (await ensureRegistry(this.env)).listed);
    const state = await this.loadState(markets);
    let accepted = 0;
    await Promise.all(
      demoTick(state, markets, now).map(async (body) => {
        try {
          // The same check as a publishing key's: the feed writes only the markets it is configured for.
          const result = await ingest(this.env, demoGrant(this.env.DEMO_MARKETS), IngestBodySchema.parse(body), now);
          accepted += 1;
          return result;
        } catch (error) {
          if (!(error instanceof ProblemError)) throw error;
          // Halted markets refuse ingest; a sequence gap means someone else published.
          const market = findMarket(body.symbol);
          if (market) resync(state, body.symbol, await this.bookSequence(market));
        }
      }),
    );
    await this.ctx.storage.put("state", state);
    return accepted;
  }

  override async alarm(): Promise<void> {
    if (!this.enabled()) return;
    try {
      await this.step();
    } catch (error) {
      logFailure("demo feed tick failed", { error });
    }
    await this.ctx.storage.setAlarm(Date.now() + DEMO_TICK_MS);
  }
}

meterRequests(DemoFeed, ["ensureRunning", "step", "alarm"]);
