/**
 * A market's day as files (docs/history.md#daily-files), built off the market host by a Cloudflare
 * Workflow (docs/design.md#files-off-the-writer). The nightly run (or the operator) asks each host
 * which days to hand on — yesterday if it traded, and past days a late trade reached — and creates
 * an instance a day. The instance opens the day on the host (its last trade id, its klines, one
 * bounded read; the day's late-trade mark cleared in the same turn) and writes the klines' files;
 * then, a step at a time, it takes the day's trades by trade id — the archived chunks it reads from
 * R2 itself, the hot ones from the host a page at a time — and deflates each file's part into a
 * piece kept in R2; a last step copies the pieces into the trades and aggTrades zips. A day that
 * still fails after its rounds is reported, and marked on its host so the next night hands it again.
 */
import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { marketObject } from "../core/object-ids";
import { unwrap } from "../core/problem";
import { intSetting } from "../core/settings";
import { DAY_MS } from "../domain/intervals";
import type { MarketConfig } from "../domain/market-config";
import { billed } from "../metrics/billed-bindings";
import { blockPieces, type PackedTrade } from "../writes/trade-blocks";
import { readChunk } from "./chunk-reads";
import {
  aggTradesCsv,
  csvName,
  DAILY_KLINE_INTERVALS,
  type DayFiles,
  type DayOpened,
  dailyKey,
  dayName,
  klinesCsv,
  packedWireTrade,
  tradesCsv,
} from "./daily-files";
import { handDatasets } from "./datasets-workflow";
import { putChecksum, ZIP_PUT } from "./file-storage";
import { againId, createOnce, FILE_ROUNDS, FILE_STEP, inRounds, PIECE_CSV_BYTES, reportBuilt, reportFailed } from "./file-workflows";
import { yieldTurn } from "./sliced-put";
import { type ArchivedTrade, withinPage } from "./trade-archive";
import { sha256Hex, type ZipEntry, zipOne } from "./zip";
import { deletePieces, EMPTY_ENTRY, PieceWriter, pieceReader, putBothPieces, putZipOfPieces } from "./zip-pieces";

/** What the run hands a day's instance: the market as listed then, and the day's start (UTC ms). */
export interface DayParams {
  market: MarketConfig;
  day: number;
  /** Built again after its trades files expired (`handDayAgain`): its klines files, kept, are not written, nor its datasets handed. */
  again?: boolean;
}

/** The day as opened, less its klines (written by that step): what the later steps need. */
type Opened = Omit<DayOpened, "klines"> & { files: DayFiles["files"] };

/** Where the trades' steps have got to: the next trade id, the trades taken, each file's entry so far and the pieces made. */
export interface Progress {
  next: number;
  count: number;
  /** The host's pages asked for, and the bytes of hot blocks they copied. */
  hostCalls: number;
  hostBytes: number;
  entries: { trades: ZipEntry; aggTrades: ZipEntry };
  /** Per piece (one R2 object, named by the first trade id it asked for): its trades bytes, then its aggTrades bytes. */
  pieces: { first: number; trades: number; aggTrades: number }[];
}

/** Trades made into CSV and deflated between two turns of the thread: a few ms of work each. */
const SLICE_TRADES = 500;
/**
 * The rest after each slice (about 3.5 ms of CPU for 500 trades): a day's build is background work
 * and takes at most about half of the thread it shares — 200,000 trades in about 3.8 s of wall
 * time instead of 1.4 s, no more CPU (docs/benchmarks.md#isolation).
 */
const SLICE_REST_MS = 5;

/** Pages (a host's hot page, or up to eight archived chunks) a step takes at most, whatever their CSV's size: `DAILY_STEP_PAGES`, 1–64. */
const stepPages = (setting: string | undefined) => intSetting(setting, 1, 64, 16);

/**
 * Hands a day whose trades files expired (DAILY_TRADE_FILES_KEPT_DAYS) to an instance again when
 * someone asks for them: its trades read again from the archive's chunks, one instance a market-day
 * a week at most (`againId`). "none": the market did not trade that day (no klines file, kept for
 * ever, was written for it); "skipped": the week's instance read a different count of trades than
 * the day's candles hold, so wrote no trades files (`DayFiles.skipped`).
 *
 * @example
 * if ((await handDayAgain(env, market, day, Date.now())) === "none") throw problem("NOT_FOUND", "…");
 */
export async function handDayAgain(env: Env, market: MarketConfig, day: number, now: number): Promise<"building" | "none" | "skipped"> {
  if ((await billed(env, "HISTORY").head(dailyKey("klines/1d", market.symbol, day))) === null) return "none";
  const id = againId(`day-${market.symbol}-${dayName(day)}`, now);
  if (await createOnce(env.DAILY_FILES, id, { market, day, again: true } satisfies DayParams)) return "building";
  const { status, output } = await (await env.DAILY_FILES.get(id)).status();
  return status === "complete" && (output as DayFiles | undefined)?.skipped !== undefined ? "skipped" : "building";
}

/** The instance of a market's day, handed at `at` (a day handed again, after a late trade, is a new instance). */
export function dayInstanceId(symbol: string, day: number, at: number): string {
  return `day-${symbol}-${dayName(day)}-${at.toString(36)}`;
}

/** A stored block's parse cut into pieces of about this many bytes (a 1.2 MB block was the build's longest single call). */
const BLOCK_PIECE_BYTES = 64 * 1024;

/** A host's stored block's trades, parsed a piece at a time with the slices' rest between. */
async function blockRows(text: string): Promise<PackedTrade[]> {
  const rows: PackedTrade[] = [];
  for (const trades of blockPieces(text, BLOCK_PIECE_BYTES)) {
    for (const trade of trades) rows.push(trade);
    await yieldTurn(SLICE_REST_MS);
  }
  return rows;
}

/** `daily-files-work/BTCUSDT/2026-11-26/<instance>/1.deflate`: a step's pieces (the trades', then the aggTrades'), until the zips are put. */
function pieceKey(params: DayParams, instance: string, first: number): string {
  return `daily-files-work/${params.market.symbol}/${dayName(params.day)}/${instance}/${first}.deflate`;
}

export class DailyFilesWorkflow extends WorkflowEntrypoint<Env, DayParams> {
  override async run(event: Readonly<WorkflowEvent<DayParams>>, step: WorkflowStep): Promise<DayFiles> {
    const params = event.payload;
    const id = event.instanceId;
    // Opened once: a later round goes on from the same trade id, with the pieces already made.
    let opened: Opened | undefined;
    let progress: Progress = { next: 1, count: 0, hostCalls: 0, hostBytes: 0, entries: { trades: EMPTY_ENTRY, aggTrades: EMPTY_ENTRY }, pieces: [] };
    return inRounds(
      step,
      async (named) => {
        opened ??= await step.do(named("open the day, write its klines"), FILE_STEP, () => this.open(params));
        const day: DayFiles = { symbol: params.market.symbol, date: dayName(params.day), trades: opened.trades, files: [...opened.files] };
        // An imported day has candles but no trades: its klines files only.
        if (opened.live > 0) {
          while (progress.next <= opened.throughSeq) {
            const before = progress;
            const through = opened.throughSeq;
            progress = await step.do(named(`trades from ${before.next}`), FILE_STEP, () => this.piece(params, id, through, before));
          }
          // Never a short file: the trades read must be the live trades the day's candles count.
          if (progress.count !== opened.live)
            day.skipped = `${progress.count} trades read, ${opened.live} counted by the day's candles: the trades files were not written`;
          else day.files.push(...(await step.do(named("zip the trades"), FILE_STEP, () => this.zip(params, id, progress))));
        }
        // What the day cost its host: the open and each page (their bytes copied, never parsed there).
        day.host = { calls: 1 + progress.hostCalls, bytes: progress.hostBytes };
        await step.do(named("done"), FILE_STEP, () => this.done(params, id, day, progress));
        // Tardis's datasets of the day read its trades from the zip just written (docs/tardis.md#datasets);
        // a day built again is asked for its files, not its datasets (built again when asked, from this zip).
        if (params.again) return day;
        const zipped = day.files.find((file) => file.key === dailyKey("trades", params.market.symbol, params.day));
        await step.do(named("hand the datasets"), FILE_STEP, () => handDatasets(this.env, params.market, params.day, zipped?.sha256));
        return day;
      },
      async (round, error) => {
        await reportFailed(this.env, id, "day", round, error);
        if (round + 1 < FILE_ROUNDS) return;
        // Given up: its host marks the day again, so the next night's run hands it once more.
        unwrap(await marketObject(this.env, params.market).markDay(params.market, params.day));
      },
    );
  }

  /** The day as its host holds it now, and its three klines files written. */
  private async open(params: DayParams): Promise<Opened> {
    const day = unwrap(await marketObject(this.env, params.market).openDay(params.market, params.day));
    const files = day.trades > 0 && !params.again ? await putKlineFiles(billed(this.env, "HISTORY"), params.market.symbol, params.day, day.klines) : [];
    return { throughSeq: day.throughSeq, trades: day.trades, live: day.live, files };
  }

  /**
   * The day's trades from `before.next`, a few pages (archived chunks read here, the host's hot
   * blocks unpacked here), each file's part deflated a slice at a time into a piece, both pieces
   * one R2 object.
   */
  private async piece(params: DayParams, id: string, through: number, before: Progress): Promise<Progress> {
    const { market, day } = params;
    const host = marketObject(this.env, market);
    const files = { trades: new PieceWriter(before.entries.trades), aggTrades: new PieceWriter(before.entries.aggTrades) };
    let count = 0;
    let hostBytes = 0;
    let hostCalls = 0;
    let next = before.next;
    const most = stepPages(this.env.DAILY_STEP_PAGES);
    for (let pages = 0, bytes = 0; next <= through && pages < most && bytes < PIECE_CSV_BYTES; pages++) {
      const bounds = { startTime: day, endTime: day + DAY_MS - 1, fromId: next, before: through + 1 };
      const page = unwrap(await host.dayPage(market, day, next, through));
      hostCalls += 1;
      hostBytes += page.blocks.reduce((n, text) => n + text.length, 0);
      const sources: (() => Promise<ArchivedTrade[] | PackedTrade[]>)[] = [
        ...page.blocks.map((text) => () => blockRows(text)),
        async () => page.open as PackedTrade[],
        ...page.chunks.map((chunk) => () => readChunk(billed(this.env, "HISTORY"), market.symbol, chunk, bounds)),
      ];
      for (const source of sources) {
        const rows = await source();
        for (let i = 0; i < rows.length; i += SLICE_TRADES) {
          const slice = rows.slice(i, i + SLICE_TRADES);
          const trades = withinPage(
            slice.map((row) => (Array.isArray(row) ? packedWireTrade(market, row) : row)),
            bounds,
          );
          files.trades.add(tradesCsv(trades));
          files.aggTrades.add(aggTradesCsv(trades));
          count += trades.length;
          // About 70 bytes a trade in each file.
          bytes += trades.length * 140;
          await yieldTurn(SLICE_REST_MS);
        }
      }
      next = page.next;
    }
    const last = next > through;
    const moved = { next, count: before.count + count, hostCalls: before.hostCalls + hostCalls, hostBytes: before.hostBytes + hostBytes };
    // A piece of no rows adds nothing but the last, which ends the deflate streams.
    if (!last && count === 0) return { ...before, ...moved };
    if (last) for (const file of Object.values(files)) file.end();
    await putBothPieces(billed(this.env, "HISTORY"), pieceKey(params, id, before.next), files.trades.parts, files.aggTrades.parts);
    return {
      ...moved,
      entries: { trades: files.trades.entry, aggTrades: files.aggTrades.entry },
      pieces: [...before.pieces, { first: before.next, trades: files.trades.length, aggTrades: files.aggTrades.length }],
    };
  }

  /** The trades and aggTrades zips from their pieces, and their `.CHECKSUM`s. */
  private zip(params: DayParams, id: string, progress: Progress): Promise<DayFiles["files"]> {
    return putTradeZips(billed(this.env, "HISTORY"), params, progress, (first) => pieceKey(params, id, first));
  }

  /** The pieces go; the day is counted written (or empty), and no longer listed as failing. */
  private async done(params: DayParams, id: string, day: DayFiles, progress: Progress): Promise<void> {
    const keys = progress.pieces.map((piece) => pieceKey(params, id, piece.first));
    await deletePieces(billed(this.env, "HISTORY"), keys);
    await reportBuilt(this.env, id, "day", day.files.length > 0 ? "written" : "empty");
  }
}

/** A day's three klines zips (Infrequent Access) and their `.CHECKSUM`s (Standard). */
export async function putKlineFiles(bucket: R2Bucket, symbol: string, day: number, klines: DayOpened["klines"]): Promise<DayFiles["files"]> {
  const files: DayFiles["files"] = [];
  for (const interval of DAILY_KLINE_INTERVALS) {
    const key = dailyKey(`klines/${interval}`, symbol, day);
    const zip = await zipOne(csvName(key), new TextEncoder().encode(klinesCsv(klines[interval])), new Date(day));
    const sha256 = await sha256Hex(zip);
    await bucket.put(key, zip, ZIP_PUT);
    await putChecksum(bucket, key, sha256);
    files.push({ key, bytes: zip.length, sha256 });
  }
  return files;
}

/** The trades and aggTrades zips copied from the day's pieces (`keyOf` names a piece's R2 object), and their `.CHECKSUM`s. */
export async function putTradeZips(
  bucket: R2Bucket,
  params: DayParams,
  progress: Pick<Progress, "entries" | "pieces">,
  keyOf: (first: number) => string,
): Promise<DayFiles["files"]> {
  const files: DayFiles["files"] = [];
  for (const kind of ["trades", "aggTrades"] as const) {
    const key = dailyKey(kind, params.market.symbol, params.day);
    const pieces = progress.pieces.map((piece) =>
      pieceReader(bucket, keyOf(piece.first), kind === "trades" ? 0 : piece.trades, kind === "trades" ? piece.trades : piece.aggTrades),
    );
    const { bytes, sha256 } = await putZipOfPieces(bucket, key, csvName(key), new Date(params.day), progress.entries[kind], pieces);
    await putChecksum(bucket, key, sha256);
    files.push({ key, bytes, sha256 });
  }
  return files;
}
