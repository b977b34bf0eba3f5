import { gunzipSync } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { GzipMember, gzipInSlices } from "../../src/history/sliced-put";
import { firstEntryLines, zipOne } from "../../src/history/zip";

describe("a day's file read and written a slice at a time (src/history/zip.ts, sliced-put.ts)", () => {
  it("a zip's entry handed on in whole lines gives every non-empty line once, in order, whatever the lines' lengths across the inflater's slices (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ unit: fc.constantFrom(..."0123456789,.abc"), maxLength: 400 }), { minLength: 1, maxLength: 2_000 }),
        async (lines) => {
          const text = lines.join("\n");
          const zip = await zipOne("day.csv", new TextEncoder().encode(text), new Date(0));
          const pieces: string[] = [];
          for await (const piece of firstEntryLines(zip)) {
            pieces.push(piece);
          }
          // Empty lines carry nothing (a CSV's last newline): the rows are every other line, once, in order.
          const rows = (all: string[]) => all.flatMap((piece) => piece.split("\n")).filter((line) => line.length > 0);
          expect(rows(pieces), "the lines, each once, in order").toEqual(rows([text]));
        },
      ),
      { numRuns: 40 },
    );
  });

  it("text gzipped a slice at a time is the text (a member gunzip reads whole)", async () => {
    const text = Array.from({ length: 20_000 }, (_, i) => `binance,BTCUSDT,${i}000,${i}000,${i},buy,97000.1,0.5`).join("\n");
    expect(gunzipSync(await gzipInSlices(text)).toString(), "gunzipped").toBe(text);
    expect(gunzipSync(await gzipInSlices("")).toString(), "an empty member").toBe("");
  });

  it("a member written as its text comes is the text, whatever the pieces' sizes across its slices (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat({ max: 100_000 }), { maxLength: 12 }), async (sizes) => {
        const pieces = sizes.map((size, i) => String.fromCharCode(97 + (i % 26)).repeat(size));
        const member = new GzipMember();
        for (const piece of pieces) await member.add(piece);
        expect(gunzipSync(await member.end()).toString(), `pieces of ${sizes.join(", ")}`).toBe(pieces.join(""));
      }),
      { numRuns: 40 },
    );
  });
});
