import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { answerFrame, MAX_REQUEST_BYTES, readRequest, resultFrame, WS_API_METHODS } from "../../src/binance/ws-api";

describe("a Binance WebSocket API frame, read (src/binance/ws-api.ts)", () => {
  it(`refuses a frame over ${MAX_REQUEST_BYTES} bytes before parsing it, and an id Binance would not take`, () => {
    const big = JSON.stringify({ id: 1, method: "depth", params: { symbol: "X".repeat(MAX_REQUEST_BYTES) } });
    expect(readRequest(big)).toMatchObject({ id: null, error: { status: 400, code: -1100 } });
    expect(readRequest(JSON.stringify({ id: "x".repeat(37), method: "ping" }))).toMatchObject({ id: null, error: { code: -1102 } });
    expect(readRequest(JSON.stringify({ id: 1.5, method: "ping" }))).toMatchObject({ id: null, error: { code: -1102 } });
  });

  it("maps a method to its REST route with the parameters as the query takes them", () => {
    const read = readRequest(JSON.stringify({ id: "a", method: "v3/ticker.price", params: { symbols: ["BTCUSDT", "ETHUSDT"], returnRateLimits: false } }));
    expect(read).toMatchObject({ id: "a", path: "ticker/price", returnRateLimits: false });
    expect("query" in read && read.query.get("symbols")).toBe('["BTCUSDT","ETHUSDT"]');
    expect(readRequest(JSON.stringify({ id: 2, method: "order.place" }))).toMatchObject({ id: 2, error: { code: -1020 } });
  });

  it("a method named like an object's own machinery (toString, constructor, __proto__, …) is an unknown method, -1020", () => {
    for (const method of ["toString", "constructor", "__proto__", "hasOwnProperty", "valueOf", "v3/toString"]) {
      expect(readRequest(JSON.stringify({ id: 3, method })), method).toMatchObject({ id: 3, error: { code: -1020 } });
    }
  });

  it("answers in Binance's error shape whatever the REST answer was: a problem document is -1001 (5xx) or -1003 (429); a 429 carries retryAfter", () => {
    const limits = [{ rateLimitType: "REQUEST_WEIGHT", interval: "SECOND", intervalNum: 1, limit: 10, count: 10 }];
    const problem = { type: "about:blank", code: "UNAVAILABLE", detail: "the market registry did not answer" };
    expect(JSON.parse(answerFrame(7, 503, problem, limits))).toEqual({
      id: 7,
      status: 503,
      error: { code: -1001, msg: "Internal error; unable to process your request. Please try again." },
      rateLimits: limits,
    });
    expect(JSON.parse(answerFrame("a", 429, { code: -1003, msg: "Too many requests" }, limits, 2_000, 1_000_000))).toEqual({
      id: "a",
      status: 429,
      error: { code: -1003, msg: "Too many requests", data: { serverTime: 1_000_000, retryAfter: 1_002_000 } },
      rateLimits: limits,
    });
    expect(JSON.parse(answerFrame(8, 429, null, undefined)).error.code, "a 429 without a Binance body").toBe(-1003);
  });

  it("a 200's frame from the result's JSON text is the frame answerFrame writes from the result itself, byte for byte", () => {
    const limits = fc.option(fc.array(fc.record({ rateLimitType: fc.string(), limit: fc.integer(), count: fc.nat() }), { maxLength: 2 }), { nil: undefined });
    const id = fc.oneof(fc.string({ maxLength: 36 }), fc.integer(), fc.constant(null));
    fc.assert(
      fc.property(id, fc.jsonValue(), limits, (id, result, rateLimits) => {
        expect(resultFrame(id, JSON.stringify(result), rateLimits), "the frame from the text").toBe(answerFrame(id, 200, result, rateLimits));
      }),
      { numRuns: 200 },
    );
  });
  it("any frame is a request for a known method's route or Binance's 400 error (-1100, -1102, -1020) that names the request's id when Binance would take it", () => {
    const id = fc.oneof(fc.constant(undefined), fc.constant(null), fc.integer(), fc.string({ maxLength: 40 }), fc.constantFrom(1.5, 2 ** 60, {}, [], true));
    const method = fc.oneof(
      fc.constantFrom(...Object.keys(WS_API_METHODS), "v3/depth", "order.place", "toString", ""),
      fc.jsonValue({ maxDepth: 1 }),
      fc.constant(undefined),
    );
    const value = fc.oneof(
      fc.string({ maxLength: 8 }),
      fc.double(),
      fc.boolean(),
      fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }),
      fc.jsonValue({ maxDepth: 2 }),
    );
    const params = fc.oneof(
      fc.constant(undefined),
      fc.dictionary(fc.constantFrom("symbol", "limit", "symbols", "returnRateLimits", "x"), value),
      fc.jsonValue({ maxDepth: 1 }),
    );
    const frame = fc.oneof(
      fc.record({ id, method, params }, { requiredKeys: [] }).map((f) => JSON.stringify(f)),
      fc.string({ maxLength: 40 }),
      fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
    );
    /** The model: the request Binance reads in a frame (its id, and its route or none), as docs/binance.md#websocket-api states it. */
    const model = (text: string): { id: unknown; path?: string } => {
      let sent: unknown;
      try {
        sent = JSON.parse(text);
      } catch {
        return { id: null };
      }
      if (sent === null || typeof sent !== "object" || Array.isArray(sent)) return { id: null };
      const { id, method, params = {} } = sent as { id?: unknown; method?: unknown; params?: unknown };
      if (!((typeof id === "string" && id.length <= 36) || id === null || Number.isSafeInteger(id))) return { id: null };
      const name = typeof method === "string" ? method.replace(/^v3\//, "") : "";
      const path = Object.hasOwn(WS_API_METHODS, name) ? WS_API_METHODS[name] : undefined;
      if (path === undefined || params === null || typeof params !== "object" || Array.isArray(params)) return { id };
      const taken = Object.entries(params).every(([key, v]) =>
        key === "returnRateLimits"
          ? typeof v === "boolean"
          : typeof v === "string" || typeof v === "boolean" || Number.isFinite(v) || (Array.isArray(v) && v.every((e) => typeof e === "string")),
      );
      return taken ? { id, path } : { id };
    };
    fc.assert(
      fc.property(frame, (text) => {
        const read = readRequest(text);
        const want = model(text);
        expect(read.id, "the id echoed when Binance takes it, else null").toEqual(want.id);
        if (want.path === undefined) {
          expect("error" in read, `${text} refused`).toBe(true);
          if ("error" in read) {
            expect(read.error.status, read.error.msg).toBe(400);
            expect([-1100, -1102, -1020], read.error.msg).toContain(read.error.code);
            expect(read.error.msg.length).toBeGreaterThan(0);
          }
        } else expect("path" in read && read.path, `${text} taken`).toBe(want.path);
      }),
      { numRuns: 1_000 },
    );
  });
});
