/**
 * A zip archive of one file, deflated (docs/history.md#daily-files): the same bytes in give the
 * same archive out, because the entry's time is fixed by the caller (the file's day) and deflate
 * is deterministic for one runtime. Up to 4 GiB (no ZIP64).
 */

import { crc32 } from "../../client/src/checksum";
import { toHex } from "../core/encoding";

/** The most a file or its compressed form may be without ZIP64. */
export const ZIP_MAX_BYTES = 0xffff_ffff;

async function deflateRaw(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** MS-DOS date and time of a UTC day's midnight, as zip headers carry them. */
function dosDate(day: Date): [time: number, date: number] {
  return [0, ((day.getUTCFullYear() - 1980) << 9) | ((day.getUTCMonth() + 1) << 5) | day.getUTCDate()];
}

/** What a zip's one entry says of its data. */
export interface ZipEntry {
  crc: number;
  /** The deflated bytes. */
  compressed: number;
  /** The file's bytes. */
  size: number;
}

/**
 * The bytes around one deflated entry named `name`, dated `day` (00:00): the local header before
 * the data, and the central directory and its end after it (the data ending at `header.length +
 * entry.compressed`). One shape for a zip made in memory and one assembled in R2 from pieces.
 */
export function zipFrame(name: string, entry: ZipEntry, day: Date): { header: Uint8Array; trailer: Uint8Array } {
  if (entry.size > ZIP_MAX_BYTES || entry.compressed > ZIP_MAX_BYTES) throw new Error(`${name} is ${entry.size} bytes: more than a zip without ZIP64 holds`);
  const [time, date] = dosDate(day);
  const nameBytes = new TextEncoder().encode(name);
  const local = new DataView(new ArrayBuffer(30));
  const central = new DataView(new ArrayBuffer(46));
  const end = new DataView(new ArrayBuffer(22));
  // Local file header: signature, version 2.0, no flags, deflate, time, date, CRC, sizes, name length.
  local.setUint32(0, 0x04034b50, true);
  local.setUint16(4, 20, true);
  local.setUint16(8, 8, true);
  local.setUint16(10, time, true);
  local.setUint16(12, date, true);
  local.setUint32(14, entry.crc, true);
  local.setUint32(18, entry.compressed, true);
  local.setUint32(22, entry.size, true);
  local.setUint16(26, nameBytes.length, true);
  // Central directory entry: the same, made by version 2.0, the local header at offset 0.
  central.setUint32(0, 0x02014b50, true);
  central.setUint16(4, 20, true);
  central.setUint16(6, 20, true);
  central.setUint16(10, 8, true);
  central.setUint16(12, time, true);
  central.setUint16(14, date, true);
  central.setUint32(16, entry.crc, true);
  central.setUint32(20, entry.compressed, true);
  central.setUint32(24, entry.size, true);
  central.setUint16(28, nameBytes.length, true);
  const centralOffset = 30 + nameBytes.length + entry.compressed;
  // End of central directory: one entry, its size and offset.
  end.setUint32(0, 0x06054b50, true);
  end.setUint16(8, 1, true);
  end.setUint16(10, 1, true);
  end.setUint32(12, 46 + nameBytes.length, true);
  end.setUint32(16, centralOffset, true);
  return {
    header: concat([new Uint8Array(local.buffer), nameBytes]),
    trailer: concat([new Uint8Array(central.buffer), nameBytes, new Uint8Array(end.buffer)]),
  };
}

/** The byte arrays one after another, in one. */
export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** `name` holding `data`, deflated, dated `day` (00:00). */
export async function zipOne(name: string, data: Uint8Array, day: Date): Promise<Uint8Array> {
  if (data.length > ZIP_MAX_BYTES) throw new Error(`${name} is ${data.length} bytes: more than a zip without ZIP64 holds`);
  const compressed = await deflateRaw(data);
  const { header, trailer } = zipFrame(name, { crc: crc32(data), compressed: compressed.length, size: data.length }, day);
  return concat([header, compressed, trailer]);
}

/** A file's SHA-256 as hex, as its `.CHECKSUM` line gives it. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", bytes));
}
