import { describe, expect, it } from "vitest";
import vectors from "../../test/fixtures/signing-vectors.json";
import { requestTarget, sign, signaturePayload } from "../src/index.js";

describe("the client's request signing", () => {
  it.each(vectors.requestSigning)("matches the vector for $method $requestTarget", async (vector) => {
    const input = { timestamp: vector.timestamp, method: vector.method, requestTarget: vector.requestTarget, body: vector.body };
    expect(signaturePayload(input)).toBe(vector.payload);
    expect(await sign(vector.secret, input)).toBe(vector.signature);
  });

  it("builds the request target it signs: path parameters encoded, lists comma-joined, absent values left out, in the order given", () => {
    expect(requestTarget("/api/orderbook/{pair}", { pair: "BTC/USDT", depth: 10 })).toBe("/api/orderbook/BTC%2FUSDT?depth=10");
    expect(requestTarget("/v1/ticker/24hr", { symbols: ["BTCUSDT", "ETHUSDT"] })).toBe("/v1/ticker/24hr?symbols=BTCUSDT,ETHUSDT");
    expect(requestTarget("/v1/trades", { symbol: "BTCUSDT", limit: undefined, fromId: 7 })).toBe("/v1/trades?symbol=BTCUSDT&fromId=7");
    expect(requestTarget("/api/time", {})).toBe("/api/time");
    expect(() => requestTarget("/api/ticker/{pair}", {})).toThrow(/pair/);
  });
});
