import { MAX_STREAMS_PER_CONNECTION, parseStreamName } from "./protocol";
import type { BookMessage } from "./wire-book";

/** Per market, the last book messages kept for resumes (docs/streams.md#resuming): at most this many, and this many bytes. */
export const RESUME_MESSAGES = 50;
export const RESUME_BYTES_PER_MARKET = 64 * 1024;
/** All markets' kept messages together, per shard: a message beyond it drops its own market's oldest. */
export const RESUME_BYTES_PER_SHARD = 8 * 1024 * 1024;

interface Kept {
  first: number;
  last: number;
  /** The native frame as it was sent. */
  text: string;
}

/** Where a market's trades messages are kept (its book's under its symbol). */
function tradesKey(symbol: string): string {
  return `trades.${symbol}`;
}

/**
 * A shard's last book messages per market, as sent, so a client that lost its connection can
 * continue its book from its last sequence instead of taking a new snapshot; and its last trades
 * messages, by trade id, where a catch-up meets the live stream (./catch-up.ts). Pure, bounded in
 * count and bytes per market and in bytes per shard.
 */
export class ResumeLog {
  private readonly kept = new Map<string, Kept[]>();
  private bytes = 0;

  /** Keeps a message sent to the market's subscribers; a snapshot, or one that does not continue the last, starts over. */
  remember(symbol: string, message: BookMessage, text: string): void {
    if (message.type === "snapshot") this.forget(symbol);
    else this.keep(symbol, message.firstSequence ?? message.sequence, message.sequence, text);
  }

  /** Keeps a trades message (its trades in tradeId order); one that does not continue the last starts over. */
  rememberTrades(symbol: string, trades: readonly { tradeId: number }[], text: string): void {
    if (trades.length > 0) this.keep(tradesKey(symbol), trades[0]!.tradeId, trades.at(-1)!.tradeId, text);
  }

  /** The last trade id the shard sent of a market, while its messages are kept. */
  lastTradeId(symbol: string): number | undefined {
    return this.kept.get(tradesKey(symbol))?.at(-1)?.last;
  }

  /** What brings a client's trades from trade id `after` to the last one sent (`continuation`'s rules). */
  tradesContinuation(symbol: string, after: number): string[] | undefined {
    const last = this.lastTradeId(symbol);
    return last === undefined ? undefined : this.continuation(tradesKey(symbol), after, last);
  }

  private keep(key: string, first: number, last: number, text: string): void {
    if (this.kept.get(key)?.at(-1)?.last !== first - 1) this.forget(key);
    const list = this.kept.get(key) ?? [];
    list.push({ first, last, text });
    this.kept.set(key, list);
    this.bytes += text.length;
    let marketBytes = list.reduce((n, m) => n + m.text.length, 0);
    while (list.length > 0 && (list.length > RESUME_MESSAGES || marketBytes > RESUME_BYTES_PER_MARKET || this.bytes > RESUME_BYTES_PER_SHARD)) {
      const dropped = list.shift()!;
      marketBytes -= dropped.text.length;
      this.bytes -= dropped.text.length;
    }
  }

  /** Forgets what is kept of a market: its book's messages and its trades'. */
  forgetMarket(symbol: string): void {
    this.forget(symbol);
    this.forgetTrades(symbol);
  }

  /** Forgets a market's trades messages (they stopped being kept: the last one kept is not the last one published). */
  forgetTrades(symbol: string): void {
    this.forget(tradesKey(symbol));
  }

  private forget(key: string): void {
    for (const m of this.kept.get(key) ?? []) this.bytes -= m.text.length;
    this.kept.delete(key);
  }

  /** Bytes kept in all (for the bound's test). */
  get size(): number {
    return this.bytes;
  }

  /**
   * What brings a client's book from `sequence` to the shard's copy at `current`: nothing when
   * they are equal, the kept messages after `sequence` when they reach `current` unbroken, else
   * undefined (the client needs a snapshot).
   */
  continuation(symbol: string, sequence: number, current: number): string[] | undefined {
    if (sequence === current) return [];
    const list = this.kept.get(symbol) ?? [];
    const from = list.findIndex((m) => m.first === sequence + 1);
    if (from < 0 || list.at(-1)!.last !== current) return undefined;
    return list.slice(from).map((m) => m.text);
  }
}

/**
 * `resume=book.BTCUSDT:1234,book.ETHUSDT:88` of a connect: per book stream, the sequence the
 * client's copy is at. What does not read is left out (that stream gets a snapshot).
 */
export function parseResume(text: string | null): Map<string, number> {
  const resume = new Map<string, number>();
  for (const entry of (text ?? "").split(",", MAX_STREAMS_PER_CONNECTION)) {
    const colon = entry.lastIndexOf(":");
    const sequence = Number(entry.slice(colon + 1));
    const stream = colon > 0 ? parseStreamName(entry.slice(0, colon)) : null;
    if (stream?.kind === "book" && Number.isSafeInteger(sequence) && sequence > 0) resume.set(stream.name, sequence);
  }
  return resume;
}
