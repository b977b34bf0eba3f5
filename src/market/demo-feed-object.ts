import { DurableObject } from "cloudflare:workers";
import { marketObject } from "../core/object-ids";
import { ProblemError } from "../core/problem";
import { createDemoState, DEMO_TICK_MS, type DemoState, demoTick, resync } from "./demo-feed";
import { ingest } from "./ingest";
import { MARKETS } from "./registry";
import { IngestBodySchema } from "./schemas";

/**
 * Runs the demo feed on an alarm loop. Every batch goes through `ingest()`, the path
 * `POST /v1/ingest` takes, after the same schema check, so the demo exercises the real thing.
 */
export class DemoFeed extends DurableObject<Env> {
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

  private async loadState(): Promise<DemoState> {
    if (this.state) return this.state;
    const stored = await this.ctx.storage.get<DemoState>("state");
    if (stored) return (this.state = stored);
    // A new feed continues each market's book sequence rather than restarting it at 1.
    const sequences: Record<string, number> = {};
    for (const market of MARKETS) {
      const snapshot = await marketObject(this.env, market.symbol).orderBook(market.symbol, 1);
      sequences[market.symbol] = "sequence" in snapshot ? snapshot.sequence : 0;
    }
    const seed = Number.parseInt(this.env.DEMO_SEED ?? "1", 10) || 1;
    return (this.state = createDemoState(seed, Date.now().toString(36), sequences));
  }

  /** One tick: every market gets its batch. Returns how many batches were accepted. */
  async step(now = Date.now()): Promise<number> {
    const state = await this.loadState();
    let accepted = 0;
    await Promise.all(
      demoTick(state, now).map(async (body) => {
        try {
          const result = await ingest(this.env, IngestBodySchema.parse(body), now);
          accepted += 1;
          return result;
        } catch (error) {
          if (!(error instanceof ProblemError)) throw error;
          // Halted markets refuse ingest; a sequence gap means someone else published.
          const current = await marketObject(this.env, body.symbol).orderBook(body.symbol, 1);
          resync(state, body.symbol, "sequence" in current ? current.sequence : 0);
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
      console.error("demo feed tick failed", error);
    }
    await this.ctx.storage.setAlarm(Date.now() + DEMO_TICK_MS);
  }
}
