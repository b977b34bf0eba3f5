/**
 * A live subscription that starts in the past (docs/streams.md#from-any-moment): the book as it
 * stood at `from` and every change and trade since, read from the market's history a page at a
 * time (./catch-up-pages.ts) and sent as the client takes them (./catch-up-window.ts), until the
 * stream meets the shard's own live copy — then the connection becomes one of its live
 * subscribers, with nothing missed or sent twice.
 *
 * Where they meet: the shard's copy of a book stands at the last live message's `sequence`, and
 * it keeps its last live messages (`ResumeLog`). History is read up to that sequence; if the copy
 * moved on meanwhile, its kept messages continue exactly from there (they start at that sequence
 * + 1); if it moved further than they reach, history is read again. The check and the switch are
 * one synchronous step, so no live message falls between. Trades meet the same way by trade id;
 * a trade the market committed before history was read but whose live message is still on its
 * way is held back from this connection by a floor (its id).
 */

import { sleep } from "../core/cross-request-wait";
import { problem } from "../core/problem";
import type { WireTrade } from "../domain/wire-trade";
import { logFailure } from "../logs/log";
import { findMarket } from "../registry/copy";
import { bookPage, type PageSource, type StreamCatchUp, streamAt, tradesPage } from "./catch-up-pages";
import { CATCH_UP_WINDOW_BYTES, moreRefusal, paceWait, pauseToken } from "./catch-up-window";
import { type StreamName, streamFrame } from "./protocol";
import type { WireBook } from "./wire-book";

export { CATCH_UP_WINDOW_BYTES } from "./catch-up-window";

/** How far back `from` may be: a catch-up's reads grow with the time it covers. */
export const MAX_CATCH_UP_MS = 24 * 60 * 60 * 1000;
/** Connections catching up at once on one shard (each holds at most a window and a page a stream). */
const MAX_CATCH_UPS_PER_SHARD = 16;
/** Book and trades streams one catch-up may take. */
const MAX_CATCH_UP_STREAMS = 10;
/**
 * Reads in a row that bring nothing while the live copy is ahead. What the shard streamed may still
 * be staged for its market's tick (history holds what is committed), so each empty read waits
 * longer before the next — 100 ms, then 200, 400, 800: about 1.5 s in all, past a tick and a
 * commit. Then the history does not reach the copy: a book goes live from the copy's snapshot, a
 * trades stream's catch-up fails, told (CATCH_UP_FAILED) — never live past trades it did not send.
 */
const MOST_EMPTY_READS = 5;
const EMPTY_READ_WAIT_MS = 100;

/** What a connection's attachment keeps of its catch-up through hibernation: the moment, and per stream the last sequence or trade id sent. */
export interface CatchUpState {
  from: number;
  cursors: Record<string, number | null>;
  /** The token of the pause last sent (./catch-up-window.ts): the next `more` names it. */
  token?: string;
}

interface Run {
  from: number;
  credit: number;
  /** When the current window began: the next waits for the pace (`paceWait`). */
  windowAt: number;
  /** The token of the pause last sent; undefined while a window is being sent. */
  token?: string;
  pumping: boolean;
  streams: Map<string, StreamCatchUp>;
}

/** What catch-ups need of their shard. */
export interface CatchUpHost extends PageSource {
  send(ws: WebSocket, text: string): void;
  /** The stream's sources publish here again (after a wake-up); false when they could not be asked. */
  ensure(ws: WebSocket, streams: StreamName[]): Promise<boolean>;
  /** The socket becomes a live subscriber of the stream: nothing may await between a meeting's check and this. */
  goLive(ws: WebSocket, name: string): void;
  /** Keeps the catch-up's state in the socket's attachment (undefined: it ended). */
  save(ws: WebSocket, state: CatchUpState | undefined): void;
  /** The state an attachment kept, after a wake-up. */
  stored(ws: WebSocket): CatchUpState | undefined;
  parse(name: string): StreamName | null;
  /** Counts for the operator's metrics (docs/operations.md#metrics). */
  count(
    family: "mds_stream_catch_ups_total" | "mds_stream_catch_up_reads_total" | "mds_stream_catch_up_bytes_total" | "mds_history_closed_reads_total",
    labels: Record<string, string>,
    n: number,
  ): void;
}

export type Refusal = { code: "CATCH_UP_LIMIT" | "INVALID_MESSAGE"; message: string };

/** The shard's copy of a book, every level, as a book message: where a catch-up goes live from now. */
function wholeCopy(name: string, copy: WireBook): string {
  return streamFrame(name, copy.snapshot(Number.MAX_SAFE_INTEGER));
}

/**
 * The shard's catch-ups, one at most per connection. A catch-up's own memory is its window (what
 * the runtime may hold unsent for a client that stops reading) and a page per stream; its reads
 * are the market's history pages (`bookReplay`, the trades by id), never the group's journal.
 */
export class CatchUps {
  private readonly runs = new Map<WebSocket, Run>();
  /** Per trades stream, the connections that must not get a live trade at or below an id (sent from history already). */
  private readonly floors = new Map<string, Map<WebSocket, number>>();

  constructor(private readonly host: CatchUpHost) {}

  /** Why a catch-up of `count` streams from `from` may not start on this connection now, or undefined. */
  refusal(ws: WebSocket, from: number, count: number, now: number): Refusal | undefined {
    if (from > now) return { code: "INVALID_MESSAGE", message: `from (${from}) is in the future: leave it out to start now` };
    if (from < now - MAX_CATCH_UP_MS)
      return { code: "INVALID_MESSAGE", message: `from is at most ${MAX_CATCH_UP_MS / 3_600_000} hours back; use GET /api/replay for older` };
    if (count > MAX_CATCH_UP_STREAMS) return { code: "CATCH_UP_LIMIT", message: `at most ${MAX_CATCH_UP_STREAMS} book and trades streams catch up at once` };
    if (this.runs.has(ws) || this.host.stored(ws)) return { code: "CATCH_UP_LIMIT", message: "this connection is catching up already: one catch-up at a time" };
    if (this.runs.size >= MAX_CATCH_UPS_PER_SHARD)
      return { code: "CATCH_UP_LIMIT", message: `at most ${MAX_CATCH_UPS_PER_SHARD} connections catch up at once here; try again shortly` };
    return undefined;
  }

  /** Whether a catch-up here still needs the stream's messages (its source stays registered). */
  wants(name: string): boolean {
    for (const run of this.runs.values()) if (run.streams.has(name)) return true;
    return false;
  }

  /** The streams a connection is catching up (not live yet), kept or running. */
  catchingUp(ws: WebSocket): string[] {
    const run = this.runs.get(ws);
    return run ? [...run.streams.keys()] : Object.keys(this.host.stored(ws)?.cursors ?? {});
  }

  /**
   * Starts a catch-up: its first page of every stream is read before the subscribe is answered,
   * so history that is not kept is the subscribe's error. Then `pump` sends.
   */
  async open(ws: WebSocket, from: number, streams: StreamName[]): Promise<void> {
    const run: Run = { from, credit: CATCH_UP_WINDOW_BYTES, windowAt: Date.now(), pumping: false, streams: new Map() };
    for (const stream of streams) run.streams.set(stream.name, streamAt(stream, undefined));
    this.runs.set(ws, run);
    this.save(ws, run);
    this.host.count("mds_stream_catch_ups_total", { result: "started" }, 1);
    try {
      for (const s of run.streams.values()) if (!this.meetsBookAtOnce(run, s)) await this.read(run, s);
    } catch (error) {
      // It never started: its state goes, and nothing else of the connection's (floors of earlier catch-ups stay).
      this.runs.delete(ws);
      this.host.save(ws, undefined);
      throw error;
    }
  }

  /**
   * `{"op":"more","token":…}`: another window, earned by naming the last pause's token (else the
   * refusal, to be answered); after a wake-up, the catch-up goes on from what its attachment kept.
   */
  async more(ws: WebSocket, token: string | undefined): Promise<string | undefined> {
    const run = this.runs.get(ws);
    const stored = run ? undefined : this.host.stored(ws);
    if (!run && !stored) return undefined;
    const refusal = moreRefusal(run ? run.token : stored?.token, token);
    if (refusal) return refusal;
    const going = run ?? (await this.resume(ws, stored!));
    if (!going) return undefined;
    going.token = undefined;
    // The pace: a window no sooner than a second after the last began (a second `more` is refused meanwhile: no token).
    const wait = paceWait(going.windowAt, Date.now());
    if (wait > 0) await sleep(wait);
    if (this.runs.get(ws) !== going) return undefined;
    going.windowAt = Date.now();
    going.credit = CATCH_UP_WINDOW_BYTES;
    await this.pump(ws);
    return undefined;
  }

  /** A catch-up after a wake-up, from what its attachment kept (undefined: it could not go on, and went live). */
  private async resume(ws: WebSocket, stored: CatchUpState): Promise<Run | undefined> {
    const streams = Object.keys(stored.cursors)
      .map((name) => this.host.parse(name))
      .filter((s): s is StreamName => s !== null);
    const run: Run = { from: stored.from, credit: 0, windowAt: 0, pumping: false, streams: new Map() };
    for (const stream of streams) run.streams.set(stream.name, streamAt(stream, stored.cursors[stream.name] ?? undefined));
    this.runs.set(ws, run);
    if (await this.host.ensure(ws, streams)) return run;
    this.fail(ws, run, "the streams' sources could not be asked again");
    return undefined;
  }

  /**
   * Sends what the client's credit allows, the streams' messages merged by time (a book message
   * before trades of the same moment), each stream switching to live where it meets the shard's
   * copy; then `{"type":"paused"}` when the window is spent, or nothing more when every stream is live.
   */
  async pump(ws: WebSocket): Promise<void> {
    const run = this.runs.get(ws);
    if (!run || run.pumping) return;
    run.pumping = true;
    // Counted once a pump, not once a message.
    let sent = 0;
    try {
      while (run.streams.size > 0 && run.credit > 0) {
        for (const s of [...run.streams.values()]) {
          if (s.buffer.length > 0 || this.meet(ws, run, s)) continue;
          await this.read(run, s);
          if (this.runs.get(ws) !== run || ws.readyState !== WebSocket.OPEN) return;
        }
        let next: StreamCatchUp | undefined;
        for (const s of run.streams.values()) if (s.buffer.length > 0 && (!next || s.buffer[0]!.time < next.buffer[0]!.time)) next = s;
        if (!next) continue;
        const message = next.buffer.shift()!;
        this.host.send(ws, message.text);
        next.cursor = message.cursor;
        run.credit -= message.text.length;
        sent += message.text.length;
      }
      if (this.runs.get(ws) !== run) return;
      if (run.streams.size > 0) run.token = pauseToken();
      this.save(ws, run);
      if (run.streams.size === 0) return this.end(ws);
      const time = Math.max(...[...run.streams.values()].map((s) => s.buffer[0]?.time ?? run.from));
      this.host.send(ws, JSON.stringify({ type: "paused", streams: [...run.streams.keys()], time, token: run.token }));
    } catch (error) {
      logFailure("catch-up failed", { error });
      if (this.runs.get(ws) === run) this.fail(ws, run, `history could not be read (${String(error).slice(0, 200)})`);
    } finally {
      run.pumping = false;
      if (sent > 0) this.host.count("mds_stream_catch_up_bytes_total", {}, sent);
    }
  }

  /** Streams left by an unsubscribe stop catching up. */
  drop(ws: WebSocket, names: readonly string[]): void {
    const run = this.runs.get(ws);
    if (!run) return;
    for (const name of names) run.streams.delete(name);
    this.save(ws, run);
    if (run.streams.size === 0) this.end(ws);
  }

  /** A closed connection: its catch-up and floors go. */
  forget(ws: WebSocket): void {
    this.runs.delete(ws);
    for (const [name, floors] of this.floors) {
      floors.delete(ws);
      if (floors.size === 0) this.floors.delete(name);
    }
  }

  /** The connections of a trades stream that a live trade may reach twice (held back below their floor). */
  floorsOf(name: string): ReadonlyMap<WebSocket, number> | undefined {
    return this.floors.get(name);
  }

  /** A live trades message for a connection with a floor: its trades above it (undefined: none), and the floor gone once passed. */
  aboveFloor(ws: WebSocket, name: string, trades: readonly WireTrade[]): string | undefined {
    const floors = this.floors.get(name);
    const floor = floors?.get(ws);
    if (!floors || floor === undefined) return streamFrame(name, trades);
    if (trades.length > 0 && trades[0]!.tradeId > floor) {
      floors.delete(ws);
      if (floors.size === 0) this.floors.delete(name);
      return streamFrame(name, trades);
    }
    const above = trades.filter((t) => t.tradeId > floor);
    return above.length > 0 ? streamFrame(name, above) : undefined;
  }

  /** A book whose moment is at or after the shard's copy: the copy's snapshot, and live at once. */
  private meetsBookAtOnce(run: Run, s: StreamCatchUp): boolean {
    if (s.stream.kind !== "book" || s.cursor !== undefined) return false;
    const copy = this.host.books.get(s.stream.subject);
    return copy !== undefined && run.from >= copy.time;
  }

  /**
   * Whether the stream meets the live one now (its buffer is empty): then what the shard kept
   * since the cursor is sent, the `live` mark, and the socket is a live subscriber. Synchronous.
   */
  private meet(ws: WebSocket, run: Run, s: StreamCatchUp): boolean {
    const { name, subject } = s.stream;
    if (s.stream.kind === "book") {
      const copy = this.host.books.get(subject);
      if (!copy) return false;
      if (this.meetsBookAtOnce(run, s)) {
        this.host.send(ws, wholeCopy(name, copy));
        s.cursor = copy.sequence;
      }
      if (s.cursor === undefined) return false;
      const kept = s.cursor === copy.sequence ? [] : this.host.recent.continuation(subject, s.cursor, copy.sequence);
      if (kept) return this.live(ws, run, s, kept, { sequence: s.cursor });
      if (s.emptyReads < MOST_EMPTY_READS) return false;
      // History does not reach the copy (it should): the copy's book, so the client is whole, and live.
      this.host.send(ws, wholeCopy(name, copy));
      return this.live(ws, run, s, [], { sequence: copy.sequence });
    }
    const last = this.host.recent.lastTradeId(subject);
    if (last === undefined) return s.exhausted && this.live(ws, run, s, [], { tradeId: s.cursor ?? null }, s.cursor);
    if (s.cursor !== undefined && s.cursor >= last) return this.live(ws, run, s, [], { tradeId: s.cursor }, s.cursor);
    const kept = s.cursor === undefined ? undefined : this.host.recent.tradesContinuation(subject, s.cursor);
    if (kept) return this.live(ws, run, s, kept, { tradeId: s.cursor }, s.cursor);
    if (s.emptyReads < MOST_EMPTY_READS) return false;
    // Neither history nor the shard's recent messages reach the live trades: going live would skip some, untold.
    this.fail(ws, run, `the trades of ${subject} after ${s.cursor ?? "from"} could not be read`);
    return true;
  }

  /** The mark first (where history ends), then the live messages the shard kept since, then live. */
  private live(ws: WebSocket, run: Run, s: StreamCatchUp, kept: readonly string[], mark: object, floor?: number): true {
    this.host.send(ws, JSON.stringify({ type: "live", stream: s.stream.name, ...mark }));
    for (const text of kept) this.host.send(ws, text);
    if (floor !== undefined && kept.length === 0) {
      const floors = this.floors.get(s.stream.name) ?? new Map<WebSocket, number>();
      floors.set(ws, floor);
      this.floors.set(s.stream.name, floors);
    }
    run.streams.delete(s.stream.name);
    this.host.goLive(ws, s.stream.name);
    return true;
  }

  /** Reads the stream's next page of history, up to where the shard's live copy stands now. */
  private async read(run: Run, s: StreamCatchUp): Promise<void> {
    const market = findMarket(s.stream.subject);
    if (!market) throw problem("NOT_FOUND", `${s.stream.subject} is no longer listed`);
    const before = s.cursor;
    this.host.count("mds_stream_catch_up_reads_total", { kind: s.stream.kind }, 1);
    s.buffer = s.stream.kind === "book" ? await bookPage(this.host, run.from, s, market) : await tradesPage(this.host, run.from, s, market);
    s.emptyReads = s.buffer.length === 0 && s.cursor === before ? s.emptyReads + 1 : 0;
    // Only while the live stream is ahead is there something a commit may still bring.
    if (s.emptyReads > 0 && s.emptyReads < MOST_EMPTY_READS && this.liveAhead(s)) await sleep(EMPTY_READ_WAIT_MS * 2 ** (s.emptyReads - 1));
  }

  /** Whether the shard's live copy stands past the stream's cursor (its book's sequence, its last trade id). */
  private liveAhead(s: StreamCatchUp): boolean {
    const mark = s.stream.kind === "book" ? this.host.books.get(s.stream.subject)?.sequence : this.host.recent.lastTradeId(s.stream.subject);
    return mark !== undefined && (s.cursor === undefined || s.cursor < mark);
  }

  /** The catch-up could not go on: its streams go live from now (a book with the copy's snapshot), and the client is told. */
  private fail(ws: WebSocket, run: Run, why: string): void {
    const names = [...run.streams.keys()];
    this.host.send(
      ws,
      JSON.stringify({ id: null, error: { code: "CATCH_UP_FAILED", message: `${why}; these streams continue live from now: ${names.join(", ")}` } }),
    );
    for (const s of [...run.streams.values()]) {
      const copy = s.stream.kind === "book" ? this.host.books.get(s.stream.subject) : undefined;
      if (copy) this.host.send(ws, wholeCopy(s.stream.name, copy));
      this.live(ws, run, s, [], copy ? { sequence: copy.sequence } : {});
    }
    this.end(ws, "failed");
  }

  private end(ws: WebSocket, result: "live" | "failed" = "live"): void {
    this.runs.delete(ws);
    this.host.save(ws, undefined);
    this.host.count("mds_stream_catch_ups_total", { result }, 1);
  }

  private save(ws: WebSocket, run: Run): void {
    const cursors: Record<string, number | null> = {};
    for (const [name, s] of run.streams) cursors[name] = s.cursor ?? null;
    this.host.save(ws, { from: run.from, cursors, ...(run.token && { token: run.token }) });
  }
}
