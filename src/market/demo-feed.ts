import { formatUnits } from "../core/decimal";
import type { MarketConfig, MarketGrant } from "../domain/market-config";
import type { IngestBody } from "./schemas";

/**
 * The demo feed's simulator, pure and seedable: the same seed and clock give the same
 * batches. Assets follow random walks in US dollars and every market's mid is the ratio of
 * its legs, so cross pairs stay consistent (ETHBTC ≈ ETHUSDT / BTCUSDT).
 */
export interface DemoState {
  /** mulberry32 state: the whole randomness of the feed. */
  rng: number;
  tick: number;
  /** Makes trade ids unique across feed restarts with the same seed. */
  runId: string;
  usd: Record<string, number>;
  markets: Record<string, DemoMarketState>;
}

interface DemoMarketState {
  /** The last book sent: price units → quantity units (as decimal text, JSON-safe). */
  bids: Record<string, string>;
  asks: Record<string, string>;
  sequence: number;
  /** Set after a refused delta: the next update is a snapshot, as a real publisher would. */
  needsSnapshot: boolean;
}

export const DEMO_LEVELS_PER_SIDE = 50;
/** What the demo feed publishes unless `DEMO_MARKETS` names others (`*`: every listed market). */
const DEFAULT_DEMO_MARKETS = ["BTCUSDT", "ETHUSDT", "SOLUSDT", "XRPUSDT", "ETHBTC", "SOLBTC", "BTCUSDC"];
export const DEMO_TICK_MS = 500;

const START_USD: Record<string, number> = { BTC: 97_000, ETH: 3_400, SOL: 150, XRP: 0.6, USDT: 1, USDC: 1 };
/** Per-tick volatility of each asset's log price. */
const VOLATILITY: Record<string, number> = { BTC: 0.0003, ETH: 0.0004, SOL: 0.0006, XRP: 0.0006, USDT: 0, USDC: 0.00002 };

function nextRandom(state: DemoState): number {
  // mulberry32: tiny, fast, and its whole state is one 32-bit integer we can store.
  state.rng = (state.rng + 0x6d2b79f5) | 0;
  let t = state.rng;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

function gaussian(state: DemoState): number {
  const u = Math.max(nextRandom(state), Number.EPSILON);
  const v = nextRandom(state);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** The demo feed's publishing grant: the markets of `DEMO_MARKETS` (a comma list; empty: the seven defaults; `*`: all), and no others. */
export function demoGrant(setting: string | undefined): MarketGrant {
  if (setting?.trim() === "*") return "*";
  return setting?.trim() ? setting.split(",").map((s) => s.trim().toUpperCase()) : DEFAULT_DEMO_MARKETS;
}

/** The markets of the demo feed's grant that are listed and trading. */
export function demoMarkets(setting: string | undefined, listed: readonly MarketConfig[]): MarketConfig[] {
  const trading = listed.filter((m) => m.status === "TRADING");
  if (setting?.trim() === "*") return trading;
  const wanted = new Set(demoGrant(setting) as string[]);
  return trading.filter((m) => wanted.has(m.symbol));
}

export function createDemoState(seed: number, runId: string, sequences: Record<string, number> = {}): DemoState {
  const markets: Record<string, DemoMarketState> = {};
  for (const [symbol, sequence] of Object.entries(sequences)) markets[symbol] = { bids: {}, asks: {}, sequence, needsSnapshot: true };
  return { rng: seed | 0, tick: 0, runId, usd: { ...START_USD }, markets };
}

/** An asset the simulation has no price for starts at a price of its own (from its code), in dollars. */
function startUsd(asset: string): number {
  let hash = 0;
  for (const char of asset) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return 0.5 + (hash % 2000);
}

function toUnits(value: number, scale: number): bigint {
  return BigInt(Math.max(1, Math.round(value * 10 ** scale)));
}

/** Level spacing: about half a basis point of the price, at least one price unit. */
function spacing(mid: bigint): bigint {
  const step = mid / 20_000n;
  return step > 0n ? step : 1n;
}

function randomQuantity(state: DemoState, market: MarketConfig, baseUsd: number, notionalUsd: number): string {
  const quantity = (notionalUsd * (0.2 + nextRandom(state) * 1.8)) / baseUsd;
  return formatUnits(toUnits(quantity, market.quantityScale), market.quantityScale);
}

/** The book the market should show now, keeping most quantities from the last one. */
function nextBook(state: DemoState, market: MarketConfig, previous: DemoMarketState, mid: bigint): Pick<DemoMarketState, "bids" | "asks"> {
  const step = spacing(mid);
  const bestBid = mid - (mid % step) > 0n ? mid - (mid % step) : step;
  const baseUsd = state.usd[market.base]!;
  const side = (start: bigint, direction: bigint, before: Record<string, string>) => {
    const levels: Record<string, string> = {};
    for (let i = 0; i < DEMO_LEVELS_PER_SIDE; i++) {
      const price = start + direction * step * BigInt(i);
      if (price <= 0n) break;
      const key = price.toString();
      const kept = before[key];
      levels[key] = kept !== undefined && nextRandom(state) > 0.1 ? kept : randomQuantity(state, market, baseUsd, 5_000);
    }
    return levels;
  };
  return { bids: side(bestBid, -1n, previous.bids), asks: side(bestBid + step, 1n, previous.asks) };
}

function wireLevels(levels: Record<string, string>, market: MarketConfig): [string, string][] {
  return Object.entries(levels).map(([price, quantity]) => [formatUnits(BigInt(price), market.priceScale), quantity]);
}

/** Levels that changed from `before` to `after`, with `"0"` for the removed ones. */
function diffLevels(before: Record<string, string>, after: Record<string, string>, market: MarketConfig): [string, string][] {
  const changes: [string, string][] = [];
  for (const [price, quantity] of Object.entries(after)) {
    if (before[price] !== quantity) changes.push([formatUnits(BigInt(price), market.priceScale), quantity]);
  }
  for (const price of Object.keys(before)) {
    if (!(price in after)) changes.push([formatUnits(BigInt(price), market.priceScale), "0"]);
  }
  return changes;
}

/**
 * Advances the simulation one tick and returns one ingest body per market: a book snapshot
 * (first time, or after a refusal) or delta, and a few trades at the touch.
 */
export function demoTick(state: DemoState, markets: readonly MarketConfig[], now: number): IngestBody[] {
  state.tick += 1;
  for (const market of markets) {
    for (const asset of [market.base, market.quote]) state.usd[asset] ??= startUsd(asset);
    state.markets[market.symbol] ??= { bids: {}, asks: {}, sequence: 0, needsSnapshot: true };
  }
  for (const asset of Object.keys(state.usd)) {
    const sigma = VOLATILITY[asset] ?? 0.0005;
    // USDC is pulled back to its peg; the others walk freely.
    const drift = asset === "USDC" ? (1 - state.usd[asset]!) * 0.05 : 0;
    state.usd[asset] = state.usd[asset]! * Math.exp(sigma * gaussian(state) + drift);
  }
  const bodies: IngestBody[] = [];
  for (const market of markets) {
    const previous = state.markets[market.symbol]!;
    const mid = toUnits(state.usd[market.base]! / state.usd[market.quote]!, market.priceScale);
    const book = nextBook(state, market, previous, mid);
    const snapshot = previous.needsSnapshot;
    const update = {
      type: snapshot ? ("snapshot" as const) : ("delta" as const),
      sequence: previous.sequence + 1,
      bids: snapshot ? wireLevels(book.bids, market) : diffLevels(previous.bids, book.bids, market),
      asks: snapshot ? wireLevels(book.asks, market) : diffLevels(previous.asks, book.asks, market),
    };
    state.markets[market.symbol] = { ...book, sequence: update.sequence, needsSnapshot: false };

    const trades: NonNullable<IngestBody["trades"]> = [];
    const count = Math.floor(nextRandom(state) * 4);
    // Integer-like keys enumerate in numeric order, so the touch is found, not assumed.
    const bidPrices = Object.keys(book.bids).map(BigInt);
    const askPrices = Object.keys(book.asks).map(BigInt);
    for (let i = 0; i < count && bidPrices.length > 0 && askPrices.length > 0; i++) {
      const side = nextRandom(state) < 0.5 ? "buy" : "sell";
      const price = side === "buy" ? askPrices.reduce((a, b) => (b < a ? b : a)) : bidPrices.reduce((a, b) => (b > a ? b : a));
      trades.push({
        id: `${state.runId}-${state.tick}-${i}`,
        price: formatUnits(price, market.priceScale),
        quantity: randomQuantity(state, market, state.usd[market.base]!, 500),
        side,
        time: now,
      });
    }
    bodies.push({ symbol: market.symbol, trades, book: update });
  }
  return bodies;
}

/** After a refused update (another publisher moved the sequence), resync with a snapshot. */
export function resync(state: DemoState, symbol: string, sequence: number): void {
  const market = state.markets[symbol];
  if (market) {
    market.sequence = sequence;
    market.needsSnapshot = true;
  }
}
