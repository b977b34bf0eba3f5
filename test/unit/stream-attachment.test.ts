import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { packNames, unpackNames } from "../../src/streams/attachment";
import { BINANCE_STREAM_KINDS } from "../support/binance-stream-kinds";

describe("stream names in a connection's attachment (src/streams/attachment.ts)", () => {
  it("unpack(pack(names)) is the names in their order, for any names of the protocols' characters", () => {
    const name = fc.stringMatching(/^[a-zA-Z0-9._@:+-]{1,40}$/);
    fc.assert(
      fc.property(fc.array(name, { maxLength: 200 }), (names) => {
        expect(unpackNames(packNames(names))).toEqual(names);
      }),
    );
  });

  it("keeps each symbol once: 1,024 streams of 64 markets take under 15 KiB", () => {
    const kinds = [...BINANCE_STREAM_KINDS, "kline_1m", "kline_1h@+08:00"];
    const names = Array.from({ length: 64 }, (_, i) => `longnamedasset${i}usdt`).flatMap((symbol) => kinds.map((kind) => `${symbol}@${kind}`));
    expect(names).toHaveLength(1024);
    expect(packNames(names).length).toBeLessThan(15 * 1024);
    expect(JSON.stringify(names).length, "as a plain list").toBeGreaterThan(16 * 1024);
  });

  it("reads an attachment with no names", () => {
    expect(unpackNames(undefined)).toEqual([]);
    expect(unpackNames(packNames([]))).toEqual([]);
  });
});
