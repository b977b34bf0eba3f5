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

/**
 * A shard's last book messages per market, as sent, so a client that lost its connection can
 * continue its book from its last sequence instead of taking a new snapshot. Pure, bounded in
 * count and bytes per market and in bytes per shard.
 */
export class ResumeLog {
  private readonly kept = new Map<string, Kept[]>();
  private bytes = 0;

  /** Keeps a message sent to the market's subscribers; a snapshot, or one that does not continue the last, starts over. */
  remember(symbol: string, message: BookMessage, text: string): void {
    const first = message.firstSequence ?? message.sequence;
    if (message.type === "snapshot" || this.kept.get(symbol)?.at(-1)?.last !== first - 1) this.forget(symbol);
    if (message.type === "snapshot") return;
    const list = this.kept.get(symbol) ?? [];
    list.push({ first, last: message.sequence, text });
    this.kept.set(symbol, list);
    this.bytes += text.length;
    let marketBytes = list.reduce((n, m) => n + m.text.length, 0);
    while (list.length > 0 && (list.length > RESUME_MESSAGES || marketBytes > RESUME_BYTES_PER_MARKET || this.bytes > RESUME_BYTES_PER_SHARD)) {
      const dropped = list.shift()!;
      marketBytes -= dropped.text.length;
      this.bytes -= dropped.text.length;
    }
  }

  forget(symbol: string): void {
    for (const m of this.kept.get(symbol) ?? []) this.bytes -= m.text.length;
    this.kept.delete(symbol);
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
