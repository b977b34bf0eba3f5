/**
 * The order book checksum the service sends with every `book.{SYMBOL}` message and every
 * `GET /api/orderbook` answer: CRC-32 (IEEE 802.3, as zlib and PNG) of the best 25 levels a side,
 * written `price:quantity` exactly as sent, levels joined by `,`, bids then `|` then asks, both
 * best first. The service computes it with these same functions.
 */
export type Level = readonly [price: string, quantity: string];

/** Levels a side that the checksum covers. */
export const CHECKSUM_DEPTH = 25;

const TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

const encoder = new TextEncoder();

/** CRC-32 of a text's UTF-8 bytes (or of bytes), an unsigned 32-bit integer; `previous` continues the CRC of what came before. */
export function crc32(input: string | Uint8Array, previous = 0): number {
  let crc = (previous ^ 0xffffffff) >>> 0;
  if (typeof input === "string") {
    // ASCII (a book's levels always are): each character is its one UTF-8 byte, and no bytes are made.
    let ascii = crc;
    let i = 0;
    for (; i < input.length; i++) {
      const code = input.charCodeAt(i);
      if (code > 0x7f) break;
      ascii = TABLE[(ascii ^ code) & 0xff]! ^ (ascii >>> 8);
    }
    if (i === input.length) return (ascii ^ 0xffffffff) >>> 0;
  }
  for (const byte of typeof input === "string" ? encoder.encode(input) : input) crc = TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/**
 * The text a book's checksum is taken of.
 *
 * @example
 * checksumText([["97000.10", "0.50000"]], [["97001.00", "0.25000"]]) // "97000.10:0.50000|97001.00:0.25000"
 */
export function checksumText(bids: readonly Level[], asks: readonly Level[]): string {
  const side = (levels: readonly Level[]) =>
    levels
      .slice(0, CHECKSUM_DEPTH)
      .map(([price, quantity]) => `${price}:${quantity}`)
      .join(",");
  return `${side(bids)}|${side(asks)}`;
}

/**
 * CRC-32 of {@link checksumText}: compare it with a message's `checksum`.
 *
 * @example
 * bookChecksum([["97000.10", "0.50000"], ["96999.00", "1.00000"]], [["97001.00", "0.25000"]]) // 926182225
 */
export function bookChecksum(bids: readonly Level[], asks: readonly Level[]): number {
  return crc32(checksumText(bids, asks));
}
