import { Slots } from "../core/slots";
import { groupOf } from "../domain/market-config";
import { RESEND_WINDOW } from "../domain/order-book";
import { findMarket } from "../registry/copy";
import { errorOf, MAX_PENDING_BYTES_PER_KEY, MAX_UNACKED, MAX_UNACKED_PER_KEY } from "./protocol";

/**
 * Batches of one group of markets (one host) a connection may have awaiting their answer: half its
 * window, so a group whose host stalls leaves the other half to every other group's batches
 * (docs/publishing.md#flow-control). One market at a venue's busiest (5,000 updates a second, its
 * tick about 150 ms at p99) keeps about 750 in flight.
 */
export const MAX_UNACKED_PER_GROUP = MAX_UNACKED / 2;

/**
 * Batches of one market all of a key's connections may have awaiting their answer: what its market
 * recognises on resend (its last RESEND_WINDOW book updates), so every batch a publisher may have to
 * resend after a crash is answered `duplicate`, never `STALE_SEQUENCE` (docs/publishing.md#resending).
 * A market at a venue's busiest keeps about 750 in flight.
 */
export const MAX_UNACKED_PER_MARKET = RESEND_WINDOW;

/**
 * A publishing key's window of batches awaiting their answer (docs/publishing.md#flow-control):
 * per connection (`MAX_UNACKED`), per connection and group of markets (`MAX_UNACKED_PER_GROUP`),
 * per market (`MAX_UNACKED_PER_MARKET`), and over all the key's connections in batches and bytes.
 * A batch past any of them is refused, never dropped.
 *
 * @example
 * const window = new ChannelWindow();
 * const group = window.take(ws, body.symbol, size);   // undefined: refuse it with window.full()
 * window.release(ws, body.symbol, group, size);       // once it is answered
 */
export class ChannelWindow {
  private readonly unacked = new Slots<WebSocket>();
  private readonly groups = new Map<WebSocket, Slots<string>>();
  private readonly markets = new Slots<string>();
  private batches = 0;
  private pendingBytes = 0;

  /** Takes a batch of `symbol` (`size` bytes) into the window: its group, or undefined when a bound is reached. */
  take(ws: WebSocket, symbol: string, size: number): string | undefined {
    if (this.batches >= MAX_UNACKED_PER_KEY || this.pendingBytes + size > MAX_PENDING_BYTES_PER_KEY) return undefined;
    const group = groupKey(symbol);
    let slots = this.groups.get(ws);
    if (!slots) this.groups.set(ws, (slots = new Slots<string>()));
    if (!slots.take(group, MAX_UNACKED_PER_GROUP)) return undefined;
    if (!this.markets.take(symbol, MAX_UNACKED_PER_MARKET)) {
      slots.release(group);
      return undefined;
    }
    if (!this.unacked.take(ws, MAX_UNACKED)) {
      slots.release(group);
      this.markets.release(symbol);
      return undefined;
    }
    this.batches += 1;
    this.pendingBytes += size;
    return group;
  }

  /** The key's batches not yet answered, over all its connections. */
  get pendingBatches(): number {
    return this.batches;
  }

  /** A batch answered: its place freed. */
  release(ws: WebSocket, symbol: string, group: string, size: number): void {
    this.unacked.release(ws);
    this.markets.release(symbol);
    this.groups.get(ws)?.release(group);
    this.batches -= 1;
    this.pendingBytes -= size;
  }

  /** A closed connection: its places go with it (the key's counts wait for its batches' answers). */
  clear(ws: WebSocket): void {
    this.unacked.clear(ws);
    this.groups.delete(ws);
  }

  /** The error a batch past the window is answered with. */
  full(): ReturnType<typeof errorOf> {
    return errorOf(
      "RATE_LIMITED",
      `at most ${MAX_UNACKED} batches may await their answer on one connection, ${MAX_UNACKED_PER_GROUP} of them for one group of markets, ${MAX_UNACKED_PER_MARKET} for one market, and ${MAX_UNACKED_PER_KEY} batches or ${MAX_PENDING_BYTES_PER_KEY} bytes on all of a key's; this one was not applied — send it again after an answer`,
      {
        maxUnacked: MAX_UNACKED,
        maxUnackedPerGroup: MAX_UNACKED_PER_GROUP,
        maxUnackedPerMarket: MAX_UNACKED_PER_MARKET,
        maxUnackedPerKey: MAX_UNACKED_PER_KEY,
        maxPendingBytesPerKey: MAX_PENDING_BYTES_PER_KEY,
      },
    );
  }
}

/** The group a batch of `symbol` goes to, as this isolate's registry copy says ("?" before it knows the market: counted together). */
function groupKey(symbol: string): string {
  const market = findMarket(symbol);
  return market ? String(groupOf(market)) : "?";
}
