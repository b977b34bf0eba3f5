/**
 * A zip archive of one file, deflated (docs/history.md#daily-files): the same bytes in give the
 * same archive out, because the entry's time is fixed by the caller (the file's day) and deflate
 * is deterministic for one runtime. Up to 4 GiB (no ZIP64).
 */

import { crc32 } from "../../client/src/checksum";
import { concatBytes, toHex } from "../core/encoding";

/** The most a file or its compressed form may be without ZIP64. */
const ZIP_MAX_BYTES = 0xffff_ffff;

async function deflateRaw(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** MS-DOS date and time of a UTC day's midnight, as zip headers carry them. */
function dosDate(day: Date): [time: number, date: number] {
  return [0, ((day.getUTCFullYear() - 1980) << 9) | ((day.getUTCMonth() + 1) << 5) | day.getUTCDate()];
}

/** A header's field: its size in bytes and its value. */
type Field = [bytes: 2 | 4, value: number];

/** Fields one after another, little-endian, as the zip format lays out its headers. */
function littleEndian(fields: Field[]): Uint8Array {
  const view = new DataView(new ArrayBuffer(fields.reduce((n, [bytes]) => n + bytes, 0)));
  let at = 0;
  for (const [bytes, value] of fields) {
    if (bytes === 2) view.setUint16(at, value, true);
    else view.setUint32(at, value, true);
    at += bytes;
  }
  return new Uint8Array(view.buffer);
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
  // What the local header and the central directory entry both say: version 2.0 needed, no flags,
  // deflate, time, date, CRC, sizes, the name's length, no extra field.
  const entryFields: Field[] = [
    [2, 20],
    [2, 0],
    [2, 8],
    [2, time],
    [2, date],
    [4, entry.crc],
    [4, entry.compressed],
    [4, entry.size],
    [2, nameBytes.length],
    [2, 0],
  ];
  const local = littleEndian([[4, 0x04034b50], ...entryFields]);
  // The central directory entry: made by version 2.0; no comment, disk 0, no attributes, the local header at offset 0.
  const central = littleEndian([[4, 0x02014b50], [2, 20], ...entryFields, [2, 0], [2, 0], [2, 0], [4, 0], [4, 0]]);
  // Its end: disk 0, one entry of one, the directory's size and offset, no comment.
  const end = littleEndian([
    [4, 0x06054b50],
    [2, 0],
    [2, 0],
    [2, 1],
    [2, 1],
    [4, central.length + nameBytes.length],
    [4, local.length + nameBytes.length + entry.compressed],
    [2, 0],
  ]);
  return {
    header: concatBytes([local, nameBytes]),
    trailer: concatBytes([central, nameBytes, end]),
  };
}

/** `name` holding `data`, deflated, dated `day` (00:00). */
export async function zipOne(name: string, data: Uint8Array, day: Date): Promise<Uint8Array> {
  if (data.length > ZIP_MAX_BYTES) throw new Error(`${name} is ${data.length} bytes: more than a zip without ZIP64 holds`);
  const compressed = await deflateRaw(data);
  const { header, trailer } = zipFrame(name, { crc: crc32(data), compressed: compressed.length, size: data.length }, day);
  return concatBytes([header, compressed, trailer]);
}

/** A file's SHA-256 as hex, as its `.CHECKSUM` line gives it. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", bytes));
}

/** Compressed bytes handed to the inflater at a time by `firstEntryLines`: a few hundred KB of text out. */
const INFLATE_SLICE_BYTES = 16 * 1024;

/**
 * The text of a zip's first entry, as this file writes one (a local header with its sizes, no data
 * descriptor), inflated a slice at a time and handed on in whole lines — so a day's file is never
 * one long turn of inflating and decoding.
 *
 * @example
 * for await (const lines of firstEntryLines(zip)) rowsOf(lines);
 */
export async function* firstEntryLines(zip: Uint8Array): AsyncGenerator<string> {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  if (zip.length < 30 || view.getUint32(0, true) !== 0x04034b50) throw new Error("not a zip: no local file header");
  const compressed = view.getUint32(18, true);
  const start = 30 + view.getUint16(26, true) + view.getUint16(28, true);
  const data = zip.subarray(start, start + compressed);
  let at = 0;
  const slices = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= data.length) controller.close();
      else controller.enqueue(data.slice(at, (at += INFLATE_SLICE_BYTES)));
    },
  });
  const reader = slices.pipeThrough(new DecompressionStream("deflate-raw")).pipeThrough(new TextDecoderStream()).getReader();
  let carried = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const text = carried + value;
    const cut = text.lastIndexOf("\n");
    carried = cut === -1 ? text : text.slice(cut + 1);
    if (cut !== -1) yield text.slice(0, cut);
  }
  if (carried.length > 0) yield carried;
}
