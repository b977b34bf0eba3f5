import type { DialectConnection, DialectOptions, StreamDialect } from "../streams/dialect";
import { MAX_STREAM_NAME_BYTES } from "../streams/protocol";
import { frame, merge, render } from "./stream-render";
import { BINANCE_MAX_MESSAGE_BYTES, BINANCE_MAX_STREAMS, type BinanceId, type BinanceStream, parseBinanceRequest, parseBinanceStream } from "./streams";
import * as binance from "./translate";

export const BINANCE_DIALECT = "binance";

function error(id: BinanceId, msg: string): string {
  return JSON.stringify({ error: { code: 2, msg: `Invalid request: ${msg}` }, id });
}

/**
 * Adds Binance streams, all or nothing, answering `{result: null, id}` (`answer` false at connect:
 * Binance sends nothing then) or Binance's error 2.
 */
async function subscribe(connection: DialectConnection, id: BinanceId, names: readonly string[], answer: boolean): Promise<void> {
  const streams: BinanceStream[] = [];
  for (const name of names) {
    const stream = parseBinanceStream(name);
    if (!stream) return connection.send(error(id, `${JSON.stringify(name).slice(0, 70)} is not a stream here (docs/binance.md#streams)`));
    streams.push(stream);
  }
  const outcome = await connection.subscribe(streams, answer ? JSON.stringify({ result: null, id }) : null);
  if (outcome === "too-many") {
    connection.send(error(id, `at most ${BINANCE_MAX_STREAMS} streams per connection, their names at most ${MAX_STREAM_NAME_BYTES} bytes in all`));
  } else if (outcome === "failed") connection.send(error(id, "the streams could not be subscribed; try again"));
}

/** Binance's `serverShutdown` event: raw, or `{"stream": "serverShutdown", "data": …}` on a combined connection. */
function serverShutdown(now: number, options: DialectOptions): string {
  const event = { e: "serverShutdown", E: now };
  return JSON.stringify(options.combined === true ? { stream: "serverShutdown", data: event } : event);
}

/**
 * Binance's stream dialect (docs/binance.md#streams) on the shards: its names, its SUBSCRIBE /
 * UNSUBSCRIBE / LIST_SUBSCRIPTIONS / SET_PROPERTY / GET_PROPERTY messages, raw or combined frames,
 * and `serverShutdown` before a planned close.
 */
export const binanceDialect: StreamDialect = {
  id: BINANCE_DIALECT,
  // Binance's own: 5 incoming messages a second on a stream connection, disconnected beyond.
  messagesPerSecond: 5,
  maxStreams: BINANCE_MAX_STREAMS,
  // One SUBSCRIBE may name all 1024 (about 69 KiB at the longest names), where a native message is 4 KiB.
  maxMessageBytes: BINANCE_MAX_MESSAGE_BYTES,
  parse: parseBinanceStream,
  // As Binance does, a name at connect that is no stream subscribes to nothing (CCXT connects to `/ws/0`).
  connect: (connection, names) =>
    subscribe(
      connection,
      null,
      names.filter((name) => parseBinanceStream(name) !== null),
      false,
    ),

  async message(connection, message) {
    const parsed = typeof message === "string" ? parseBinanceRequest(message) : parseBinanceRequest("");
    if (!parsed.ok) {
      if (!connection.warn()) connection.send(JSON.stringify(parsed.answer));
      return;
    }
    const request = parsed.request;
    switch (request.method) {
      case "LIST_SUBSCRIPTIONS":
        return connection.send(JSON.stringify({ result: connection.streams, id: request.id }));
      case "GET_PROPERTY":
        return connection.send(JSON.stringify({ result: connection.options.combined === true, id: request.id }));
      case "SET_PROPERTY":
        connection.setOptions({ combined: request.value === true });
        return connection.send(JSON.stringify({ result: null, id: request.id }));
      case "SUBSCRIBE":
        return subscribe(connection, request.id, request.params, true);
      case "UNSUBSCRIBE":
        connection.unsubscribe(request.params);
        return connection.send(JSON.stringify({ result: null, id: request.id }));
    }
  },

  render: (stream, data, book, now) => render(stream as BinanceStream, data, book, now),
  // `@depth` and `@depthN` at Binance's 1000 ms: what a second's events said, as one.
  merge: (stream, earlier, later) => merge(stream as BinanceStream, earlier, later),

  greet(stream, book) {
    const view = stream as BinanceStream;
    // A new `@depthN` subscriber gets the current partial book, so it need not wait for the next change.
    return view.kind === "depthPartial" && book ? [binance.partialDepthEvent(book.snapshot(view.levels!))] : [];
  },

  framing: (options) => (options.combined === true ? "combined" : "raw"),
  frame: (stream, payload, framing) => frame(stream as BinanceStream, payload, framing === "combined"),
  // Binance's own notice, before a planned close and a maintenance alike; a combined connection
  // gets it in its envelope, as every frame it gets.
  closingNotice: (_close, now, options) => serverShutdown(now, options),
  maintenanceNotice: (now, options) => serverShutdown(now, options),
};
