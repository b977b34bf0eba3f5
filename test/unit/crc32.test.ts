import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { crc32 } from "../../client/src/checksum";

/** CRC-32 bit by bit over the text's UTF-8 bytes: the definition, no table, no shortcut. */
function bitwise(text: string): number {
  let crc = 0xffffffff;
  for (const byte of new TextEncoder().encode(text)) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

describe("the checksum's CRC-32 (client/src/checksum.ts)", () => {
  it("is CRC-32 of the text's UTF-8 bytes, ASCII (a book's levels, read without encoding) or not (property)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: "grapheme" }), fc.stringMatching(/^[0-9.:,|]{0,200}$/)), (text) => {
        expect(crc32(text), JSON.stringify(text)).toBe(bitwise(text));
      }),
    );
  });
});
