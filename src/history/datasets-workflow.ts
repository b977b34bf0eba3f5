/**
 * A market's day as Tardis's four CSV datasets (docs/tardis.md#datasets), built off the market host
 * by a Cloudflare Workflow (docs/design.md#files-off-the-writer), an instance a market-day: the
 * nightly run hands each listed market's yesterday (a market that traded, once its daily files are
 * written: its trades are read from the day's trades zip). The book's three come from the day's
 * closed book segments in R2 — found in D1, a few segments a step, each type's rows gzipped into a
 * piece — and one step puts each file from its pieces. No market's host is called: the day is
 * built from what R2 and D1 hold once every segment holding it is closed (BOOK_FILES_AFTER_MS).
 */
import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { gzipSync } from "node:zlib";
import { DAY_MS } from "../domain/intervals";
import type { MarketConfig } from "../domain/market-config";
import { billed } from "../metrics/billed-bindings";
import { BOOK_FILES_AFTER_MS } from "./book-files";
import { readSegment } from "./book-history";
import { segmentMessages } from "./book-replay";
import { dailyKey, dayName } from "./daily-files";
import {
  BOOK_DATASET_TYPES,
  type BookCarry,
  type BookDatasetType,
  BookDayRows,
  DATASET_HEADERS,
  DATASET_TYPES,
  type DatasetType,
  datasetKey,
  EMPTY_CARRY,
  TRADE_HOURS_METADATA,
  tradeHourRows,
} from "./datasets";
import { againId, createOnce, FILE_STEP, inRounds, PIECE_CSV_BYTES, reportBuilt, reportFailed } from "./file-workflows";
import { MessageBook } from "./message-book";
import { spanSegments } from "./published-segments";
import { GzipMember, gzipInSlices, putInSlices, yieldTurn } from "./sliced-put";
import { firstEntryLines } from "./zip";
import { deletePieces, pieceReader } from "./zip-pieces";

/** What the run hands an instance: the market as listed then, the day's start (UTC ms), and whether its trades zip was written. */
export interface DatasetParams {
  market: MarketConfig;
  day: number;
  trades: boolean;
  /** The trades zip's SHA-256, when its daily files' instance handed the day: kept on the trades dataset (`handDatasets`). */
  tradesSha256?: string;
}

/** The trades dataset's metadata: the SHA-256 of the trades zip it was read from. */
const FROM_ZIP_METADATA = "trades-zip-sha256";

/** What an instance returns: the four files it put. */
export interface DatasetFiles {
  symbol: string;
  date: string;
  files: { key: string; bytes: number }[];
}

/** Where the book's steps have got to: the next segment, the last sequence made into rows, the rows' carry, the pieces. */
interface Progress {
  next: number;
  cursor?: number;
  carry: BookCarry;
  /** Per piece (one R2 object, named by its first segment): each type's bytes, in BOOK_DATASET_TYPES' order. */
  pieces: { first: number; bytes: number[] }[];
}

/** Segments a step reads at most (each up to 1 MB of JSON), fewer once their rows pass PIECE_CSV_BYTES. */
const CHUNK_SEGMENTS = 8;
const DATASET_PUT: R2PutOptions = { httpMetadata: { contentType: "application/gzip" }, storageClass: "InfrequentAccess" };

/** The instance of a market's day, handed at `at` (a day handed again, after a late trade, is a new instance). */
export function datasetsInstanceId(symbol: string, day: number, at: number): string {
  return `tardis-${symbol}-${dayName(day)}-${at.toString(36)}`;
}

/**
 * Hands a market's day to its datasets' instance (docs/tardis.md#datasets); `tradesSha256`: its
 * trades zip is written, and the trades are read from it. A day whose four datasets are in R2, read
 * from a zip of the same SHA-256, is not built again — a day's files written again with no late
 * trade (an operator's run) give the same zip, and its book was closed before the first build — so
 * the instance's id, or null when there was nothing to build.
 */
export async function handDatasets(env: Env, market: MarketConfig, day: number, tradesSha256?: string): Promise<string | null> {
  if (tradesSha256 !== undefined) {
    const bucket = billed(env, "HISTORY");
    const held = await Promise.all(DATASET_TYPES.map((type) => bucket.head(datasetKey(type, day, market.symbol))));
    if (held.every((object) => object !== null) && held[0]!.customMetadata?.[FROM_ZIP_METADATA] === tradesSha256) return null;
  }
  const id = datasetsInstanceId(market.symbol, day, Date.now());
  const trades = tradesSha256 !== undefined;
  await env.DATASETS.create({ id, params: { market, day, trades, ...(trades ? { tradesSha256 } : {}) } satisfies DatasetParams });
  return id;
}

/**
 * Hands a market's day to an instance again, once its datasets expired and someone asks for them:
 * one instance a market-day a week at most (`againId`). `trades`: the day's trades zip is in R2,
 * and the trades are read from it. Returns whether this call created it.
 */
export function handDatasetsAgain(env: Env, market: MarketConfig, day: number, now: number, trades: boolean): Promise<boolean> {
  return createOnce(env.DATASETS, againId(`tardis-${market.symbol}-${dayName(day)}`, now), { market, day, trades } satisfies DatasetParams);
}

/** `datasets-work/BTCUSDT/2026-12-06/<instance>/<base>.gz`: a step's pieces, until the files are put. */
const pieceKey = (params: DatasetParams, instance: string, first: number) =>
  `datasets-work/${params.market.symbol}/${dayName(params.day)}/${instance}/${first}.gz`;

export class DatasetsWorkflow extends WorkflowEntrypoint<Env, DatasetParams> {
  override async run(event: Readonly<WorkflowEvent<DatasetParams>>, step: WorkflowStep): Promise<DatasetFiles> {
    const params = event.payload;
    const id = event.instanceId;
    return inRounds(
      step,
      async (named) => {
        // Every segment holding the day is closed and published this long after it.
        const ready = params.day + DAY_MS + BOOK_FILES_AFTER_MS;
        if (Date.now() < ready) await step.sleep(named("wait for the day's last book segments"), ready - Date.now());
        const trades = await step.do(named("trades"), FILE_STEP, () => this.trades(params));
        const segments = await step.do(named("the day's book segments"), FILE_STEP, () =>
          spanSegments(this.env.DB, params.market.symbol, params.day, params.day + DAY_MS),
        );
        let progress: Progress = { next: 0, carry: EMPTY_CARRY, pieces: [] };
        while (progress.next < segments.length) {
          const before = progress;
          progress = await step.do(named(`book from segment ${segments[before.next]}`), FILE_STEP, () => this.bookPiece(params, id, segments, before));
        }
        const done = progress;
        const book = await step.do(named("put the book's datasets"), FILE_STEP, () => this.putBook(params, id, done));
        await step.do(named("done"), FILE_STEP, async () => {
          await deletePieces(
            billed(this.env, "HISTORY"),
            done.pieces.map((piece) => pieceKey(params, id, piece.first)),
          );
          await reportBuilt(this.env, id, "datasets", "written");
        });
        return { symbol: params.market.symbol, date: dayName(params.day), files: [trades, ...book] };
      },
      (round, error) => reportFailed(this.env, id, "datasets", round, error),
    );
  }

  /**
   * The `trades` dataset, from the day's trades zip (docs/history.md#daily-files): the header, then
   * each hour's rows gzipped apart, where each starts in the object's metadata. A day without a
   * trades zip has the header and 24 empty hours.
   */
  private async trades(params: DatasetParams): Promise<DatasetFiles["files"][number]> {
    const { market, day } = params;
    const bucket = billed(this.env, "HISTORY");
    const hours = Array.from({ length: 24 }, () => new GzipMember());
    if (params.trades) {
      const key = dailyKey("trades", market.symbol, day);
      const zip = await bucket.get(key);
      if (!zip) throw new Error(`${key} is not written: the day's trades are read from it`);
      // Inflated a slice at a time, whole lines made into rows and each hour's deflated as they
      // gather, a rest between: no long turn, and only deflated bytes held, for a day of trades.
      for await (const lines of firstEntryLines(new Uint8Array(await zip.arrayBuffer()))) {
        for (const [hour, rows] of tradeHourRows(market.symbol, day, lines).entries()) if (rows.length > 0) await hours[hour]!.add(rows);
        await yieldTurn(1);
      }
    }
    const members: Uint8Array[] = [gzipSync(DATASET_HEADERS.trades)];
    for (const hour of hours) members.push(await hour.end());
    // Where each member ends: the header's, then each hour's.
    const ends: number[] = [];
    for (const member of members) ends.push((ends.at(-1) ?? 0) + member.length);
    const key = datasetKey("trades", day, market.symbol);
    const bytes = ends.at(-1)!;
    const customMetadata = { [TRADE_HOURS_METADATA]: JSON.stringify(ends), ...(params.tradesSha256 ? { [FROM_ZIP_METADATA]: params.tradesSha256 } : {}) };
    await putInSlices(bucket, key, bytes, { ...DATASET_PUT, customMetadata }, async (send) => {
      for (const member of members) await send(member);
    });
    return { key, bytes };
  }

  /** Up to CHUNK_SEGMENTS segments' rows of the day, each type gzipped on its own, the three one R2 object. */
  private async bookPiece(params: DatasetParams, id: string, segments: number[], before: Progress): Promise<Progress> {
    const { market, day } = params;
    const bucket = billed(this.env, "HISTORY");
    const rows = new BookDayRows(market.symbol, before.carry);
    let cursor = before.cursor;
    let next = before.next;
    for (let taken = 0; next < segments.length && taken < CHUNK_SEGMENTS; taken++, next++) {
      const segment = await readSegment(bucket, market.symbol, segments[next]!);
      const { opening, messages } = segmentMessages(segment, market, day - 1, cursor, day + DAY_MS - 1);
      const book = new MessageBook(market);
      book.apply(opening);
      if (cursor === undefined) rows.opening(book, day);
      for (const message of messages) rows.change(book, message.time, book.apply(message));
      cursor = messages.at(-1)?.sequence ?? opening.sequence;
      await yieldTurn(1);
      if (Object.values(rows.rows).reduce((n, text) => n + text.length, 0) >= PIECE_CSV_BYTES) {
        next += 1;
        break;
      }
    }
    const parts: Uint8Array[] = [];
    for (const type of BOOK_DATASET_TYPES) parts.push(await gzipInSlices(rows.rows[type]));
    const bytes = parts.map((part) => part.length);
    const total = bytes.reduce((n, b) => n + b, 0);
    await putInSlices(bucket, pieceKey(params, id, segments[before.next]!), total, {}, async (send) => {
      for (const part of parts) await send(part);
    });
    return { next, ...(cursor !== undefined ? { cursor } : {}), carry: rows.carry, pieces: [...before.pieces, { first: segments[before.next]!, bytes }] };
  }

  /** Each book type's file: its header, then its part of every piece (gzip members laid end to end are one gzip file). */
  private async putBook(params: DatasetParams, id: string, progress: Progress): Promise<DatasetFiles["files"]> {
    const bucket = billed(this.env, "HISTORY");
    const files: DatasetFiles["files"] = [];
    for (const [t, type] of BOOK_DATASET_TYPES.entries()) {
      const header = gzipSync(DATASET_HEADERS[type as BookDatasetType]);
      const parts = progress.pieces.map((piece) => {
        const offset = piece.bytes.slice(0, t).reduce((n, b) => n + b, 0);
        return { read: pieceReader(bucket, pieceKey(params, id, piece.first), offset, piece.bytes[t]!), bytes: piece.bytes[t]! };
      });
      const bytes = header.length + parts.reduce((n, p) => n + p.bytes, 0);
      const key = datasetKey(type as DatasetType, params.day, params.market.symbol);
      await putInSlices(bucket, key, bytes, DATASET_PUT, async (send) => {
        await send(header);
        for (const part of parts) await send(await part.read());
      });
      files.push({ key, bytes });
    }
    return files;
  }
}
