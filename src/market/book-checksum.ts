import { crc32 } from "../core/crc32";

/** Levels a side that the checksum covers (docs/streams.md#checksums). */
export const CHECKSUM_DEPTH = 25;

type Level = readonly [price: string, quantity: string];

/**
 * The text a book's checksum is taken of: the best 25 bids (best first), then `|`, then the best
 * 25 asks (best first), each level `price:quantity` exactly as the service writes them, levels
 * joined by `,`. Both sides best first, as `GET /api/orderbook` lists them.
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

/** CRC-32 of `checksumText`, an unsigned 32-bit integer. */
export function bookChecksum(bids: readonly Level[], asks: readonly Level[]): number {
  return crc32(checksumText(bids, asks));
}
