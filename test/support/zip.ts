import { expect } from "vitest";

/** The one file of a zip read through its central directory, as unzip does (the sizes in the local header, or after the data). */
export async function unzip(zip: Uint8Array): Promise<{ name: string; text: string; crc: number; flags: number }> {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const end = zip.length - 22;
  expect(view.getUint32(end, true), "the end of central directory record").toBe(0x06054b50);
  const central = view.getUint32(end + 16, true);
  expect(view.getUint32(central, true), "a central directory entry").toBe(0x02014b50);
  const [flags, crc, compressed, size, nameLength] = [
    view.getUint16(central + 8, true),
    view.getUint32(central + 16, true),
    view.getUint32(central + 20, true),
    view.getUint32(central + 24, true),
    view.getUint16(central + 28, true),
  ];
  const name = new TextDecoder().decode(zip.subarray(central + 46, central + 46 + nameLength));
  const localName = view.getUint16(26, true);
  const data = zip.subarray(30 + localName, 30 + localName + compressed);
  const raw = new Uint8Array(await new Response(new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"))).arrayBuffer());
  expect(raw.length, "the size the directory states").toBe(size);
  if (flags & 8) {
    const descriptor = 30 + localName + compressed;
    expect([view.getUint32(descriptor, true), view.getUint32(descriptor + 4, true)], "the data descriptor: its signature and the CRC").toEqual([
      0x08074b50,
      crc,
    ]);
  } else {
    expect([view.getUint32(14, true), view.getUint32(18, true), view.getUint32(22, true)], "the local header's CRC and sizes").toEqual([crc, compressed, size]);
  }
  return { name, text: new TextDecoder().decode(raw), crc, flags };
}
