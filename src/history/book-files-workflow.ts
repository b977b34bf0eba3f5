/**
 * An hour's book files, built off the market host by a Cloudflare Workflow
 * (docs/history.md#book-files, docs/design.md#files-off-the-writer). The host only records that the
 * hour closed: once the segments holding it are in R2 it creates one instance, `book-{symbol}-{hour}`,
 * with their sequences. Each few segments are a step — read from R2, their rows made, each file's
 * part deflated into a piece kept in R2 — retried on its own and checkpointed, so a killed attempt
 * redoes a few segments, not the hour; then one step copies the pieces into the two zips and their
 * `.CHECKSUM`s (the book's last: it says the hour is written). A step that still fails after its
 * retries is reported and tried again an hour later, a few rounds; an instance is one hour, so a
 * failing hour never holds back the next.
 */
import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { HOUR_MS } from "../domain/intervals";
import { billed } from "../metrics/billed-bindings";
import { BOOK_FILE_KINDS, type BookFileKind, type HourCarry, HourRows, hourlyKey, hourName } from "./book-files";
import { readSegment } from "./book-history";
import { bookOf } from "./book-replay";
import { putChecksum } from "./file-storage";
import { againId, createOnce, FILE_STEP, inRounds, PIECE_CSV_BYTES, reportBuilt, reportFailed } from "./file-workflows";
import { spanSegments } from "./published-segments";
import type { ZipEntry } from "./zip";
import { deflatePiece, deletePieces, EMPTY_ENTRY, pieceReader, putBothPieces, putZipOfPieces } from "./zip-pieces";

/** What the host hands an hour's instance: the market's scales and the segments with batches in the hour, in order. */
export interface BookHourParams {
  symbol: string;
  hour: number;
  priceScale: number;
  quantityScale: number;
  /** The segments' base sequences (their R2 keys: `segmentKey`). */
  segments: number[];
}

/** Where the steps have got to: the rows' carry, each file's entry so far, the pieces made and the next segment. */
interface Progress extends HourCarry {
  entries: Record<BookFileKind, ZipEntry>;
  /** Per piece (one R2 object, named by its first segment): its book bytes, then its bookTicker bytes. */
  pieces: { first: number; book: number; bookTicker: number }[];
  next: number;
}

/** What an instance returns. */
export interface BookHourOutput {
  written: boolean;
  files: { key: string; bytes: number; sha256: string }[];
}

/**
 * A step makes the rows of up to this many segments, or fewer once their CSV passes PIECE_CSV_BYTES:
 * one R2 object of pieces a step, not two a segment (at the venue's rate, $8 a month, not $130).
 */
const CHUNK_SEGMENTS = 8;

/** The instance of a market's hour. Workflow ids take letters, digits, `-` and `_`. */
export function bookHourId(symbol: string, hour: number): string {
  return `book-${symbol}-${hourName(hour)}`;
}

/**
 * Hands an hour whose files expired (BOOK_FILES_KEPT_DAYS) to an instance again, when someone asks
 * for them: its segments found in D1 (no market's host called), one instance a market-hour a week at
 * most (`againId`). "none": the book did not change in the hour (no segment holds it, or the week's
 * instance found no batch in it), so it has no files.
 *
 * @example
 * if ((await handBookHourAgain(env, { symbol, hour, priceScale, quantityScale }, Date.now())) === "none") throw problem("NOT_FOUND", "…");
 */
export async function handBookHourAgain(env: Env, hourOf: Omit<BookHourParams, "segments">, now: number): Promise<"building" | "none"> {
  const segments = await spanSegments(env.DB, hourOf.symbol, hourOf.hour, hourOf.hour + HOUR_MS, "changed");
  if (segments.length === 0) return "none";
  const id = againId(bookHourId(hourOf.symbol, hourOf.hour), now);
  if (await createOnce(env.BOOK_FILES, id, { ...hourOf, segments })) return "building";
  // Handed already this week: a segment spanning the hour (a quiet book) may hold no batch of it, which only its build finds.
  const { status, output } = await (await env.BOOK_FILES.get(id)).status();
  return status === "complete" && (output as BookHourOutput | undefined)?.written === false ? "none" : "building";
}

/** `book-files-work/BTCUSDT/2026-11-27-03/0.deflate`: a step's pieces (the book's, then the bookTicker's), until the zips are put. */
function pieceKey(params: BookHourParams, first: number): string {
  return `book-files-work/${params.symbol}/${hourName(params.hour)}/${first}.deflate`;
}

export class BookFilesWorkflow extends WorkflowEntrypoint<Env, BookHourParams> {
  override async run(event: Readonly<WorkflowEvent<BookHourParams>>, step: WorkflowStep): Promise<BookHourOutput> {
    const params = event.payload;
    let progress: Progress = { opened: false, changes: 0, lastTop: "", entries: { book: EMPTY_ENTRY, bookTicker: EMPTY_ENTRY }, pieces: [], next: 0 };
    return inRounds(
      step,
      async (named) => {
        while (progress.next < params.segments.length) {
          const before = progress;
          progress = await step.do(named(`segments from ${before.next}`), FILE_STEP, () => this.piece(params, before));
        }
        const output = progress.opened ? await step.do(named("zip"), FILE_STEP, () => this.zip(params, progress)) : { written: false, files: [] };
        await step.do(named("done"), FILE_STEP, () => this.done(params, event.instanceId, output, progress));
        return output;
      },
      (round, error) => reportFailed(this.env, event.instanceId, "book", round, error),
    );
  }

  /**
   * The rows of the hour in the next few segments (from `before.next`), each file's part deflated
   * into a piece, both pieces one R2 object.
   */
  private async piece(params: BookHourParams, before: Progress): Promise<Progress> {
    const text: Record<BookFileKind, string[]> = { book: [], bookTicker: [] };
    let carry: HourCarry = before;
    let next = before.next;
    for (let bytes = 0; next < params.segments.length && next - before.next < CHUNK_SEGMENTS && bytes < PIECE_CSV_BYTES; next++) {
      const segment = await readSegment(billed(this.env, "HISTORY"), params.symbol, params.segments[next]!);
      const rows = new HourRows(bookOf(segment, params.priceScale, params.quantityScale), params.hour, carry);
      const made = rows.segment(segment);
      for (const kind of BOOK_FILE_KINDS) text[kind].push(made[kind]);
      bytes += made.book.length + made.bookTicker.length;
      carry = rows.carry;
    }
    const last = next === params.segments.length;
    const book = deflatePiece(text.book.join(""), before.entries.book, last);
    const bookTicker = deflatePiece(text.bookTicker.join(""), before.entries.bookTicker, last);
    // A piece of no rows adds nothing (nor its flush's bytes) but the last, which ends the deflate streams.
    if (!last && book.entry.size === before.entries.book.size && bookTicker.entry.size === before.entries.bookTicker.size)
      return { ...carry, entries: before.entries, pieces: before.pieces, next };
    await putBothPieces(billed(this.env, "HISTORY"), pieceKey(params, before.next), [book.bytes], [bookTicker.bytes]);
    const pieces = [...before.pieces, { first: before.next, book: book.bytes.length, bookTicker: bookTicker.bytes.length }];
    return { ...carry, entries: { book: book.entry, bookTicker: bookTicker.entry }, pieces, next };
  }

  /** The two zips from their pieces, and their `.CHECKSUM`s: the bookTicker's first, the book's last (it says the hour is written). */
  private async zip(params: BookHourParams, progress: Progress): Promise<BookHourOutput> {
    const files: BookHourOutput["files"] = [];
    for (const kind of [...BOOK_FILE_KINDS].reverse()) {
      const key = hourlyKey(kind, params.symbol, params.hour);
      const name = key.slice(key.lastIndexOf("/") + 1);
      const pieces = progress.pieces.map((piece) =>
        pieceReader(
          billed(this.env, "HISTORY"),
          pieceKey(params, piece.first),
          kind === "book" ? 0 : piece.book,
          kind === "book" ? piece.book : piece.bookTicker,
        ),
      );
      const { bytes, sha256 } = await putZipOfPieces(
        billed(this.env, "HISTORY"),
        key,
        name.replace(/\.zip$/, ".csv"),
        new Date(params.hour),
        progress.entries[kind],
        pieces,
      );
      await putChecksum(billed(this.env, "HISTORY"), key, sha256);
      files.push({ key, bytes, sha256 });
    }
    return { written: true, files };
  }

  /** The pieces go; the hour is counted written (or empty), and no longer listed as failing. */
  private async done(params: BookHourParams, id: string, output: BookHourOutput, progress: Progress): Promise<void> {
    const keys = progress.pieces.map((piece) => pieceKey(params, piece.first));
    await deletePieces(billed(this.env, "HISTORY"), keys);
    await reportBuilt(this.env, id, "book", output.written ? "written" : "empty");
  }
}
