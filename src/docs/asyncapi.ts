import { KEY_ID_PATTERN } from "../access/keys";
import { SIGNATURE_PATTERN, TIMESTAMP_PATTERN } from "../access/signature";
import { SERVERS } from "../core/openapi";
import { MAX_UNACKED } from "../publish/protocol";
import { MAX_CONNECTIONS_PER_PRINCIPAL, MAX_MESSAGE_BYTES, MAX_MESSAGES_PER_SECOND, MAX_STREAMS_PER_CONNECTION } from "../streams/protocol";
import { type Json, MESSAGES, PUBLISH_MESSAGES, REPLAY_MESSAGES, SENT } from "./asyncapi-messages";

const replayQuery = {
  streams: { type: "string", description: "Up to 10 of book.{SYMBOL} and trades.{SYMBOL}, comma-separated" },
  from: { type: "integer", description: "Unix ms: the replay opens with each book as it stood then" },
  to: { type: "integer", description: "Unix ms: the last moment replayed, at most 24 h after from" },
  speed: { type: "number", minimum: 0, maximum: 1000, default: 1, description: "Times real time; 0: as fast as the service sends" },
};

function channel(address: string, title: string, description: string, query: Json, messages: Json = MESSAGES): Json {
  return {
    address,
    title,
    description,
    messages: Object.fromEntries(Object.keys(messages).map((name) => [name, { $ref: `#/components/messages/${name}` }])),
    bindings: { ws: { bindingVersion: "0.1.0", method: "GET", query: { type: "object", properties: query } } },
  };
}

/** The query form of a signed WebSocket upgrade, with the patterns the Worker enforces (not copies of them). */
function signedQuery(path: string): Json {
  return {
    apiKey: { type: "string", pattern: KEY_ID_PATTERN.source },
    timestamp: { type: "string", pattern: TIMESTAMP_PATTERN.source, description: "Unix ms" },
    signature: { type: "string", pattern: SIGNATURE_PATTERN.source, description: `HMAC-SHA256 of timestamp + "\\nGET\\n${path}\\n", hex` },
  };
}

const streamsQuery = {
  streams: {
    type: "string",
    description:
      "Comma-separated streams to subscribe at connect, e.g. book.BTCUSDT,ticker.BTCUSDT; their markets' group decides the shard (docs/streams.md#placement)",
  },
  resume: {
    type: "string",
    description:
      "Books to continue after a lost connection, each with the client's last sequence: book.BTCUSDT:1234,book.ETHUSDT:88 (docs/streams.md#resuming)",
  },
  from: { type: "string", description: "Unix ms: the book and trades streams named start then and catch up into live (docs/streams.md#from-any-moment)" },
};
const limits = `At most ${MAX_CONNECTIONS_PER_PRINCIPAL} connections at a time, ${MAX_MESSAGES_PER_SECOND} client messages a second of at most ${MAX_MESSAGE_BYTES} bytes, ${MAX_STREAMS_PER_CONNECTION} streams per connection (docs/streams.md).`;

/**
 * The streams as an AsyncAPI 3 document (`GET /asyncapi.json`): both WebSocket endpoints, every
 * message each way, and the data payloads from the same zod schemas as the REST answers.
 *
 * @example
 * app.get("/asyncapi.json", (c) => c.json(asyncApiDocument()));
 */
export function asyncApiDocument(): Json {
  const operations: Json = {};
  for (const name of ["public", "signed"]) {
    const ref = { $ref: `#/channels/${name}` };
    const of = (names: string[]) => names.map((message) => ({ $ref: `#/channels/${name}/messages/${message}` }));
    operations[`${name}Send`] = { action: "send", channel: ref, title: `Client messages on ${name} streams`, messages: of(SENT) };
    operations[`${name}Receive`] = {
      action: "receive",
      title: `Server messages on ${name} streams`,
      channel: ref,
      messages: of(Object.keys(MESSAGES).filter((message) => !SENT.includes(message))),
    };
  }
  const publish = { $ref: "#/channels/publish" };
  operations.publishSend = {
    action: "send",
    channel: publish,
    title: "Ingest batches on the publisher channel",
    messages: [{ $ref: "#/channels/publish/messages/batch" }, { $ref: "#/channels/publish/messages/batches" }],
  };
  operations.publishReceive = {
    action: "receive",
    channel: publish,
    title: "Answers on the publisher channel",
    messages: [{ $ref: "#/channels/publish/messages/batchResult" }, { $ref: "#/channels/publish/messages/batchError" }],
  };
  operations.replayReceive = {
    action: "receive",
    channel: { $ref: "#/channels/replay" },
    title: "A replay's messages",
    messages: Object.keys(REPLAY_MESSAGES)
      .filter((message) => message !== "more")
      .map((message) => ({ $ref: `#/channels/replay/messages/${message}` })),
  };
  operations.replaySend = {
    action: "send",
    channel: { $ref: "#/channels/replay" },
    title: "The next window of a replay",
    messages: [{ $ref: "#/channels/replay/messages/more" }],
  };
  return {
    asyncapi: "3.0.0",
    info: {
      title: "Market Data Service streams",
      version: "2.5.0",
      description:
        "WebSocket streams of the Market Data Service: tickers, best bid/ask, trades, order books with checksums, candles, prices and a heartbeat. Decimals are strings, times Unix milliseconds. The REST API is in /openapi.json.",
    },
    defaultContentType: "application/json",
    servers: { local: { ...SERVERS.local, protocol: "ws" }, production: { ...SERVERS.production, protocol: "wss" } },
    channels: {
      public: channel("/api/ws", "Public streams", `For anyone, per client address. ${limits}`, streamsQuery),
      signed: channel(
        "/v1/ws",
        "Signed streams",
        `For an API key with the stream permission: the signed headers of docs/signing.md, or (browsers) apiKey, timestamp and signature in the query, the signature over GET and the path /v1/ws alone. ${limits}`,
        { ...streamsQuery, ...signedQuery("/v1/ws") },
      ),
      publish: channel(
        "/v1/publish",
        "The publisher channel",
        `For an API key with the publish permission, signed like /v1/ws (the path /v1/publish): ingest batches for any market, each answered with its id; one market's batches in the order sent; at most ${MAX_UNACKED} unanswered batches per connection (docs/publishing.md#the-publisher-channel).`,
        signedQuery("/v1/publish"),
        PUBLISH_MESSAGES,
      ),
      replay: channel(
        "/api/replay",
        "Replay of the past",
        `The messages live subscribers got on book.{SYMBOL} and trades.{SYMBOL} between from and to: each book as it stood at from (a snapshot), then its 100 ms deltas and the trades in time order, paced at speed, and replayEnded last (docs/history.md#replay). For anyone, per client address; one of its ${MAX_CONNECTIONS_PER_PRINCIPAL} connections. After each 1 MiB a paused message: the client answers {"op":"more","token":…} to go on (within 60 s, else 1008).`,
        replayQuery,
        REPLAY_MESSAGES,
      ),
    },
    operations,
    components: { messages: { ...MESSAGES, ...PUBLISH_MESSAGES, replayEnded: REPLAY_MESSAGES.replayEnded, replayPaused: REPLAY_MESSAGES.replayPaused } },
  };
}
