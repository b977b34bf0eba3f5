import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  admitMessage,
  frameBytes,
  MAX_MESSAGE_BYTES,
  MAX_STREAMS_PER_CONNECTION,
  parseClientMessage,
  parseStreamName,
  planSubscribe,
  planUnsubscribe,
} from "../../src/streams/protocol";
import { defaultMarkets, registry } from "../support/registry";

const MARKETS = await defaultMarkets();
const QUOTE_ASSETS = (await registry()).quotes;

const ALL_STREAMS = [...["ticker", "trades", "book"].flatMap((kind) => MARKETS.map((m) => `${kind}.${m.symbol}`)), ...QUOTE_ASSETS.map((q) => `prices.${q}`)];

describe("stream names (docs/streams.md)", () => {
  it("every listed market has ticker, trades and book streams and every quote a prices stream", () => {
    for (const name of ALL_STREAMS) expect(parseStreamName(name)?.name).toBe(name);
    expect(parseStreamName("book.BTCUSDT")).toEqual({ name: "book.BTCUSDT", kind: "book", subject: "BTCUSDT" });
    expect(parseStreamName("prices.USDT")).toEqual({ name: "prices.USDT", kind: "prices", subject: "USDT" });
  });

  it("a subject in any case or written BASE-QUOTE, BASE_QUOTE or BASE/QUOTE names the canonical stream", () => {
    expect(parseStreamName("trades.btcusdt")?.name).toBe("trades.BTCUSDT");
    expect(parseStreamName("book.btc-usdt")?.name).toBe("book.BTCUSDT");
    expect(parseStreamName("ticker.ETH_btc")?.name).toBe("ticker.ETHBTC");
    expect(parseStreamName("book.SOL/USDT")?.name).toBe("book.SOLUSDT");
    expect(parseStreamName("prices.usdc")?.name).toBe("prices.USDC");
  });

  it("unknown markets, quotes, kinds and malformed names are not streams", () => {
    for (const name of [
      "book.DOGEUSDT",
      "book.BTCU-SDT",
      "prices.EUR",
      "prices.ETH",
      "candles.BTCUSDT",
      "BTCUSDT",
      ".BTCUSDT",
      "book.",
      "book",
      "",
      "book.BTC USDT",
      `book.${"A".repeat(70)}`,
    ]) {
      expect(parseStreamName(name)).toBeNull();
    }
    for (const value of [null, 1, {}, ["book.BTCUSDT"], undefined]) expect(parseStreamName(value)).toBeNull();
  });

  it("any string is either no stream or one of the listed streams, and its canonical name parses to itself", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.constantFrom(...ALL_STREAMS).map((s) => s.toLowerCase()),
        ),
        (raw) => {
          const parsed = parseStreamName(raw);
          if (parsed === null) return;
          expect(ALL_STREAMS).toContain(parsed.name);
          expect(parseStreamName(parsed.name)).toEqual(parsed);
        },
      ),
    );
  });
});

describe("client messages", () => {
  it("subscribe, unsubscribe, list and ping parse with their ids", () => {
    expect(parseClientMessage('{"op":"subscribe","id":1,"streams":["book.BTCUSDT"]}')).toEqual({
      ok: true,
      message: { op: "subscribe", id: 1, streams: ["book.BTCUSDT"] },
    });
    expect(parseClientMessage('{"op":"unsubscribe","id":"a","streams":[]}')).toEqual({ ok: true, message: { op: "unsubscribe", id: "a", streams: [] } });
    expect(parseClientMessage('{"op":"list","id":3}')).toEqual({ ok: true, message: { op: "list", id: 3 } });
    expect(parseClientMessage('{"op":"ping"}')).toEqual({ ok: true, message: { op: "ping", id: null } });
  });

  it("non-JSON and non-objects are INVALID_MESSAGE; other ops UNKNOWN_OP with the id echoed", () => {
    for (const text of ["not json", "", "[1,2]", "null", "42", '"ping"', "{"]) {
      expect(parseClientMessage(text)).toMatchObject({ ok: false, code: "INVALID_MESSAGE", id: null });
    }
    expect(parseClientMessage('{"op":"subscribe","id":7,"streams":"book.BTCUSDT"}')).toMatchObject({ ok: false, code: "INVALID_MESSAGE", id: 7 });
    expect(parseClientMessage('{"op":"dance","id":9}')).toMatchObject({ ok: false, code: "UNKNOWN_OP", id: 9 });
    expect(parseClientMessage('{"id":9}')).toMatchObject({ ok: false, code: "UNKNOWN_OP", id: 9 });
  });

  it("only a number or a short string is echoed as the id", () => {
    expect(parseClientMessage(`{"op":"list","id":"${"x".repeat(65)}"}`)).toEqual({ ok: true, message: { op: "list", id: null } });
    expect(parseClientMessage('{"op":"list","id":{"a":1}}')).toEqual({ ok: true, message: { op: "list", id: null } });
  });

  it("no text makes the parser throw", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (text) => {
        expect(() => parseClientMessage(text)).not.toThrow();
      }),
    );
  });
});

describe("subscribe and unsubscribe plans", () => {
  it("a subscribe adds the new canonical names once, in order", () => {
    const plan = planSubscribe(["book.BTCUSDT"], ["book.btcusdt", "trades.BTCUSDT", "trades.BTC-USDT", "prices.USDT"]);
    expect(plan.ok && plan.streams.map((s) => s.name)).toEqual(["trades.BTCUSDT", "prices.USDT"]);
  });

  it("one unknown name refuses the whole request with UNKNOWN_STREAM", () => {
    expect(planSubscribe([], ["book.BTCUSDT", "book.DOGEUSDT"])).toMatchObject({
      ok: false,
      code: "UNKNOWN_STREAM",
      message: expect.stringContaining("book.DOGEUSDT"),
    });
    expect(planUnsubscribe(["book.BTCUSDT"], ["book.BTCUSDT", 42])).toMatchObject({ ok: false, code: "UNKNOWN_STREAM" });
  });

  it("51 names in one request, or more than 50 on a connection, are TOO_MANY_STREAMS", () => {
    expect(
      planSubscribe(
        [],
        Array.from({ length: 51 }, () => "book.BTCUSDT"),
      ),
    ).toMatchObject({ ok: false, code: "TOO_MANY_STREAMS" });
    const fifty = Array.from({ length: MAX_STREAMS_PER_CONNECTION }, (_, i) => `s${i}`);
    expect(planSubscribe(fifty, ["book.BTCUSDT"])).toMatchObject({ ok: false, code: "TOO_MANY_STREAMS" });
    expect(planSubscribe(fifty.slice(1), ["book.BTCUSDT"])).toMatchObject({ ok: true });
  });

  it("a connection never holds more than 50 streams, whatever it asks for", () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.constantFrom(...ALL_STREAMS, "book.NOPE"), { maxLength: 60 }), { maxLength: 10 }), (requests) => {
        let held: string[] = [];
        for (const request of requests) {
          const plan = planSubscribe(held, request);
          if (plan.ok) held = [...held, ...plan.streams.map((s) => s.name)];
          expect(new Set(held).size).toBe(held.length);
          expect(held.length).toBeLessThanOrEqual(MAX_STREAMS_PER_CONNECTION);
        }
      }),
    );
  });

  it("an unsubscribe removes only streams the connection holds", () => {
    const plan = planUnsubscribe(["book.BTCUSDT", "prices.USDT"], ["book.btcusdt", "ticker.ETHUSDT"]);
    expect(plan.ok && plan.streams.map((s) => s.name)).toEqual(["book.BTCUSDT"]);
  });
});

describe("inbound limits", () => {
  it("admits what a naive log model admits: at most 10 messages in any rolling second", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 200 }), (gaps) => {
        const times: number[] = [];
        const log: number[] = [];
        let now = 1_000_000;
        for (const gap of gaps) {
          now += gap;
          log.push(now);
          const expected = log.filter((t) => t > now - 1000).length <= 10;
          expect(admitMessage(times, now)).toBe(expected);
        }
      }),
    );
  });

  it("the 11th message within a second is refused, the next second is fresh", () => {
    const times: number[] = [];
    for (let i = 0; i < 10; i++) expect(admitMessage(times, 5000 + i)).toBe(true);
    expect(admitMessage(times, 5500)).toBe(false);
    expect(admitMessage(times, 7000)).toBe(true);
  });

  it("frames are measured in UTF-8 bytes against 4 KiB", () => {
    expect(frameBytes("a".repeat(MAX_MESSAGE_BYTES))).toBe(MAX_MESSAGE_BYTES);
    expect(frameBytes("é".repeat(2049))).toBeGreaterThan(MAX_MESSAGE_BYTES);
    expect(frameBytes("€".repeat(1366))).toBe(4098);
    expect(frameBytes(new ArrayBuffer(10))).toBe(10);
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 3000 }), (text) => {
        expect(frameBytes(text) > MAX_MESSAGE_BYTES).toBe(new TextEncoder().encode(text).length > MAX_MESSAGE_BYTES);
      }),
    );
  });
});
