import { describe, expect, it } from "vitest";
import { MAX_REQUEST_BYTES, readRequest } from "../../src/binance/ws-api";

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
});
