/**
 * The book checksum computed from its definition in docs/streams.md#checksums, independently of
 * src/: the text built here, and CRC-32 bit by bit (no table), so a shared mistake cannot hide.
 */
export function documentedChecksum(bids: readonly (readonly [string, string])[], asks: readonly (readonly [string, string])[]): number {
  const side = (levels: readonly (readonly [string, string])[]) =>
    levels
      .slice(0, 25)
      .map((level) => `${level[0]}:${level[1]}`)
      .join(",");
  const bytes = new TextEncoder().encode(`${side(bids)}|${side(asks)}`);
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
