import { z } from "@hono/zod-openapi";
import { ProblemSchema, TimestampMs } from "../core/schemas";
import { KLINE_INTERVALS } from "../domain/intervals";
import {
  AveragePriceSchema,
  BookTickerSchema,
  IngestResultSchema,
  KlineSchema,
  Level,
  PricesSchema,
  StatusSchema,
  TickerSchema,
  TradeSchema,
  WindowSchema,
} from "../market/schemas";
import { MAX_BATCHES_PER_MESSAGE, MAX_UNACKED, PublishMessageSchema } from "../publish/protocol";
import { CATCH_UP_WINDOW_BYTES, MAX_CATCH_UP_MS } from "../streams/catch-up";
import { CATCH_UP_BYTES_PER_SECOND } from "../streams/catch-up-window";
import { GOING_AWAY, SERVICE_RESTART } from "../streams/planned-close";
import { ERROR_CODES, KEEPALIVE_REQUEST, KEEPALIVE_RESPONSE, MAX_STREAMS_PER_CONNECTION, TICKER_WINDOWS } from "../streams/protocol";

export type Json = Record<string, unknown>;

/** A zod schema as the JSON Schema (draft 7) an AsyncAPI payload takes; the same schemas validate and document REST. */
function schemaOf(schema: z.ZodType): Json {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { target: "draft-7", io: "output", unrepresentable: "any" }) as Json;
  return rest;
}

const BookMessageSchema = z.object({
  type: z.enum(["snapshot", "delta"]),
  firstSequence: z
    .number()
    .int()
    .optional()
    .describe(
      "A delta's first sequence: the previous message's sequence + 1. A delta merges the updates firstSequence…sequence of one 100 ms interval (a publisher's snapshot among them comes as a delta too)",
    ),
  sequence: z.number().int().describe("The book's sequence after this message"),
  time: TimestampMs.describe("When the market applied it"),
  checksum: z.number().int().describe("CRC-32 of the best 25 levels a side after this message (docs/streams.md#checksums)"),
  bids: z.array(Level).describe('Snapshot: up to 100 best first; delta: levels to set, quantity "0" removes'),
  asks: z.array(Level),
});
const KlineStreamSchema = KlineSchema.extend({
  interval: z.enum(KLINE_INTERVALS),
  closed: z.boolean().describe("True once, when the candle's interval has ended"),
});
const HeartbeatSchema = z.object({ time: TimestampMs, sequence: z.number().int().describe("Rises by 1 per heartbeat of the shard") });
const MessageId = {
  description: "Echoed in the answer: a number or a string of up to 64 characters",
  oneOf: [{ type: "number" }, { type: "string", maxLength: 64 }],
};

const SYMBOL = "[A-Z0-9]{2,20}";
/** A message of the protocol, named and titled by its key. */
function message(name: string, summary: string, payload: Json, contentType = "application/json"): Json {
  return { name, title: name, summary, contentType, payload };
}
/** A server data message: `{stream, data}`. */
function streamMessage(name: string, pattern: string, data: Json, summary: string): Json {
  return message(name, summary, { type: "object", required: ["stream", "data"], properties: { stream: { type: "string", pattern }, data } });
}
/** A client request `{op, id?, …}`. */
function clientRequest(op: string, summary: string, extra: Json = {}, required: string[] = ["op"]): Json {
  return message(op, summary, { type: "object", required, properties: { op: { type: "string", const: op }, id: MessageId, ...extra } });
}
const StreamList = { type: "array", maxItems: MAX_STREAMS_PER_CONNECTION, items: { type: "string", maxLength: 64 } };
/** The `id` of an answer: the request's, or null when it had none. */
const AnswerId = { oneOf: [MessageId, { type: "null" }] };

/** The native streams' messages, both ways (docs/streams.md). */
export const MESSAGES: Record<string, Json> = {
  subscribe: clientRequest(
    "subscribe",
    "Adds streams to the connection (all or none); with from, its book and trades streams start at that moment and catch up into live (docs/streams.md#from-any-moment)",
    { streams: StreamList, from: { type: "integer", description: `Unix ms, at most ${MAX_CATCH_UP_MS / 3_600_000} h back` } },
    ["op", "streams"],
  ),
  unsubscribe: clientRequest("unsubscribe", "Removes streams (one not held is not an error)", { streams: StreamList }, ["op", "streams"]),
  list: clientRequest("list", "Asks which streams the connection holds"),
  ping: clientRequest("ping", "Asks for the server's time (answered by the shard)"),
  more: clientRequest(
    "more",
    `Asks a catch-up for its next window (${CATCH_UP_WINDOW_BYTES / 1024} KiB), naming the token of the paused message that ended the last; any other more is an INVALID_MESSAGE error and earns nothing. A window starts no sooner than its size at ${CATCH_UP_BYTES_PER_SECOND / 1024} KiB a second after the last began`,
    { token: { type: "string", maxLength: 64, description: "The last paused message's token" } },
    ["op", "token"],
  ),
  keepalive: message(
    "keepalive",
    `The text frame ${KEEPALIVE_REQUEST}: answered ${KEEPALIVE_RESPONSE} by the runtime, without waking the shard`,
    { type: "string", const: KEEPALIVE_REQUEST },
    "text/plain",
  ),
  ack: message(
    "ack",
    "Answer to subscribe, unsubscribe or list: every stream the connection holds, in subscription order. The connect's own subscription (?streams=) is answered first, with id null, and names in resumed the books it continues where ?resume= said (docs/streams.md#resuming)",
    {
      type: "object",
      required: ["id", "result"],
      properties: {
        id: AnswerId,
        result: {
          type: "object",
          required: ["streams"],
          properties: {
            streams: StreamList,
            resumed: { ...StreamList, description: "Books continued from the sequence named at connect: no snapshot follows for them" },
            from: { type: "integer", description: "The moment asked: the streams in catchingUp start there" },
            catchingUp: { ...StreamList, description: "Book and trades streams that start at from; each ends its catch-up with a live message" },
            startsNow: { ...StreamList, description: "Streams of a subscribe with from that start now (candles, tickers, …)" },
          },
        },
      },
    },
  ),
  error: message("error", "A request that changed nothing", {
    type: "object",
    required: ["id", "error"],
    properties: {
      id: AnswerId,
      error: { type: "object", required: ["code", "message"], properties: { code: { type: "string", enum: [...ERROR_CODES] }, message: { type: "string" } } },
    },
  }),
  pong: message("pong", "Answer to the JSON ping, with the server's time", {
    type: "object",
    required: ["op", "time"],
    properties: { op: { type: "string", const: "pong" }, time: { type: "integer" }, id: MessageId },
  }),
  closing: message("closing", "Unasked: a planned close (docs/streams.md#planned-closes); the connection closes with `code` and `reason` at `closeAt`", {
    type: "object",
    required: ["op", "code", "reason", "closeAt"],
    properties: {
      op: { type: "string", const: "closing" },
      code: { type: "integer", enum: [GOING_AWAY, SERVICE_RESTART] },
      reason: { type: "string" },
      closeAt: { type: "integer", description: "Epoch ms" },
    },
  }),
  paused: message("paused", "A catch-up's window is sent: answer more with its token for the next (docs/streams.md#from-any-moment)", {
    type: "object",
    required: ["type", "streams", "time", "token"],
    properties: {
      type: { type: "string", const: "paused" },
      streams: StreamList,
      time: { type: "integer", description: "Unix ms the catch-up has reached" },
      token: { type: "string", pattern: "^[0-9a-f]{16}$", description: "Named by the more that asks the next window" },
    },
  }),
  live: message("live", "A stream's catch-up met the live stream: what follows on it is live, continuing without a gap", {
    type: "object",
    required: ["type", "stream"],
    properties: {
      type: { type: "string", const: "live" },
      stream: { type: "string", maxLength: 64 },
      sequence: { type: "integer", description: "book: the sequence of the last message before this one" },
      tradeId: { oneOf: [{ type: "integer" }, { type: "null" }], description: "trades: the last trade id sent before this one (null: none since from)" },
    },
  }),
  keepaliveAnswer: message("keepaliveAnswer", "The runtime's answer to the text frame ping", { type: "string", const: KEEPALIVE_RESPONSE }, "text/plain"),
  ticker: streamMessage(
    "ticker",
    `^ticker\\.${SYMBOL}$`,
    schemaOf(TickerSchema),
    "ticker.{SYMBOL}: the 24 h ticker, at most once a second, when the market changed",
  ),
  tickerWindow: streamMessage(
    "tickerWindow",
    `^ticker\\.${SYMBOL}\\.(${TICKER_WINDOWS.join("|")})$`,
    schemaOf(WindowSchema),
    "ticker.{SYMBOL}.{1h|4h|1d}: the rolling window's statistics (as GET /api/window), opening a whole window before the current minute; with the ticker, at most once a second",
  ),
  avgPrice: streamMessage(
    "avgPrice",
    `^avgPrice\\.${SYMBOL}$`,
    schemaOf(AveragePriceSchema),
    "avgPrice.{SYMBOL}: the volume-weighted price of the current minute and the four before it, when it changed, at most once a second",
  ),
  bookTicker: streamMessage(
    "bookTicker",
    `^bookTicker\\.${SYMBOL}$`,
    schemaOf(BookTickerSchema),
    "bookTicker.{SYMBOL}: the best bid and ask on every change, at most one per 100 ms",
  ),
  trades: streamMessage(
    "trades",
    `^trades\\.${SYMBOL}$`,
    schemaOf(z.array(TradeSchema)),
    "trades.{SYMBOL}: each accepted trade once, an interval's trades in one message (in tradeId order), at most one message per 100 ms",
  ),
  book: streamMessage(
    "book",
    `^book\\.${SYMBOL}$`,
    schemaOf(BookMessageSchema),
    "book.{SYMBOL}: a snapshot, then at most one delta per 100 ms, each starting at the last sequence + 1 (firstSequence) and merging its interval's updates",
  ),
  kline: streamMessage(
    "kline",
    `^kline\\.${SYMBOL}\\.(${KLINE_INTERVALS.join("|")})(@\\+08:00)?$`,
    schemaOf(KlineStreamSchema),
    "kline.{SYMBOL}.{interval}[@+08:00]: the latest candle (in UTC, or at +08:00 for the intervals that offset moves) when it changed, at most once a second, and once more closed",
  ),
  prices: streamMessage(
    "prices",
    "^prices\\.[A-Z0-9]{1,16}$",
    schemaOf(PricesSchema),
    "prices.{QUOTE}: the prices answer, at most once a second (QUOTE: any quote asset of a listed market)",
  ),
  tickers: streamMessage(
    "tickers",
    "^tickers$",
    schemaOf(z.array(TickerSchema)),
    "tickers: every market's ticker that changed since the last message, at most once a second (all markets on one subscription)",
  ),
  tickersWindow: streamMessage(
    "tickersWindow",
    `^tickers\\.(${TICKER_WINDOWS.join("|")})$`,
    schemaOf(z.array(WindowSchema)),
    "tickers.{1h|4h|1d}: every market's rolling window that changed since the last message, at most once a second",
  ),
  status: streamMessage(
    "status",
    "^status$",
    schemaOf(StatusSchema),
    "status: the venue's status and announcements (the body of GET /api/status), at subscribe and whenever an announcement is made, changed or deleted, starts or ends",
  ),
  heartbeat: streamMessage("heartbeat", "^heartbeat$", schemaOf(HeartbeatSchema), "heartbeat: every 5 s while subscribed"),
};
/** The client's messages among them. */
export const SENT = ["subscribe", "unsubscribe", "list", "ping", "more", "keepalive"];

/** The publisher channel's messages (docs/publishing.md#the-publisher-channel). */
export const PUBLISH_MESSAGES: Json = {
  batch: message("batch", "An ingest batch (the POST /v1/ingest body) with the client's id", schemaOf(PublishMessageSchema)),
  batches: message("batches", `1 to ${MAX_BATCHES_PER_MESSAGE} ingest batches in one message, taken in order as if sent one by one, each answered on its own`, {
    type: "array",
    minItems: 1,
    maxItems: MAX_BATCHES_PER_MESSAGE,
    items: schemaOf(PublishMessageSchema),
  }),
  batchResult: message(
    "batchResult",
    "The batch was applied (or was an exact resend) and is durable — written with its market's tick, at most 100 ms after it came: the ingest result",
    {
      type: "object",
      required: ["id", "result"],
      properties: { id: MessageId, result: schemaOf(IngestResultSchema) },
    },
  ),
  batchError: message(
    "batchError",
    `The batch was refused, nothing of it applied: the problem POST /v1/ingest would have answered; RATE_LIMITED past ${MAX_UNACKED} unanswered batches`,
    {
      type: "object",
      required: ["id", "error"],
      properties: { id: AnswerId, error: schemaOf(ProblemSchema) },
    },
  ),
};

/** The replay's own message; the others are the live streams' `book` and `trades` (docs/history.md#replay). */
export const REPLAY_MESSAGES: Json = {
  book: MESSAGES.book,
  trades: MESSAGES.trades,
  replayEnded: streamMessage(
    "replayEnded",
    "^replay$",
    {
      type: "object",
      required: ["type", "from", "to", "messages"],
      properties: {
        type: { type: "string", const: "replayEnded" },
        from: { type: "integer", description: "Unix ms, as asked" },
        to: { type: "integer", description: "Unix ms, as asked" },
        messages: { type: "integer", description: "Messages the replay sent before this one" },
      },
    },
    "replay: the replay's last message, after which the connection closes with 1000",
  ),
  replayPaused: streamMessage(
    "replayPaused",
    "^replay$",
    {
      type: "object",
      required: ["type", "token", "messages"],
      properties: {
        type: { type: "string", const: "paused" },
        token: { type: "string", pattern: "^[0-9a-f]{16}$", description: "Named by the more that asks the next window" },
        messages: { type: "integer", description: "Messages the replay sent before this one" },
      },
    },
    "replay: a window (1 MiB) is sent; the replay goes on once the client answers more with this token, and ends with 1008 if it does not within 60 s",
  ),
  more: clientRequest(
    "more",
    "Asks a replay for its next window, naming the token of the paused message that ended the last",
    { token: { type: "string", maxLength: 64 } },
    ["op", "token"],
  ),
};
