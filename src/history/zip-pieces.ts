/**
 * A zip of one CSV built a piece at a time, each piece in its own Workflow step
 * (docs/history.md#book-files): a piece is its part of the CSV deflated on its own and ended with
 * a sync flush — raw deflate streams joined that way are one stream, the last piece ending it — so
 * no step holds deflate's state for the next; the CRC is carried from piece to piece. The pieces,
 * once all are made, are copied into the zip in R2 by one put sent a slice at a time
 * (`putInSlices`), its SHA-256 taken on the way. Up to 4 GiB of CSV (no ZIP64).
 */
import { constants, deflateRawSync } from "node:zlib";
import { crc32 } from "../../client/src/checksum";
import { ZIP_PUT } from "./file-storage";
import { putInSlices } from "./sliced-put";
import { type ZipEntry, zipFrame } from "./zip";

/**
 * One piece of a CSV, deflated: `text` after the pieces `before` summed up. Returns the piece's
 * bytes and the entry so far (the CRC and sizes carried on).
 */
export function deflatePiece(text: string, before: ZipEntry, last: boolean): { bytes: Uint8Array; entry: ZipEntry } {
  const data = new TextEncoder().encode(text);
  const bytes = new Uint8Array(deflateRawSync(data, { finishFlush: last ? constants.Z_FINISH : constants.Z_SYNC_FLUSH }));
  return { bytes, entry: { crc: crc32(data, before.crc), compressed: before.compressed + bytes.length, size: before.size + data.length } };
}

export const EMPTY_ENTRY: ZipEntry = { crc: 0, compressed: 0, size: 0 };

/**
 * One file's piece made a slice at a time: each slice of CSV deflated and sync-flushed as it comes
 * (the slices joined are one deflate stream, as the pieces are), so no one call holds the thread
 * for a whole piece's CSV; `end` finishes the stream after the file's last slice.
 */
export class PieceWriter {
  /** The piece's bytes as deflated, slice by slice (put as they are, never joined in memory). */
  readonly parts: Uint8Array[] = [];
  /** Their length. */
  length = 0;

  constructor(public entry: ZipEntry) {}

  add(text: string): void {
    if (text.length === 0) return;
    this.push(deflatePiece(text, this.entry, false));
  }

  end(): void {
    this.push(deflatePiece("", this.entry, true));
  }

  private push({ bytes, entry }: { bytes: Uint8Array; entry: ZipEntry }): void {
    this.parts.push(bytes);
    this.length += bytes.length;
    this.entry = entry;
  }
}

/** Two files' pieces of one step as one R2 object (a put, not two): the first's bytes, then the second's. */
export async function putBothPieces(bucket: R2Bucket, key: string, first: Uint8Array[], second: Uint8Array[]): Promise<void> {
  const parts = [...first, ...second];
  await putInSlices(bucket, key, byteLength(parts), {}, async (send) => {
    for (const part of parts) await send(part);
  });
}

/** The bytes of all of `parts`. */
function byteLength(parts: Uint8Array[]): number {
  return parts.reduce((n, part) => n + part.length, 0);
}

/** A Workflow's pieces deleted once its zips are put, a thousand keys a call (R2's most). */
export async function deletePieces(bucket: R2Bucket, keys: string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 1_000) await bucket.delete(keys.slice(i, i + 1_000));
}

/** Reads one file's part of a step's R2 object of pieces when its turn comes (nothing read for an empty part). */
export function pieceReader(bucket: R2Bucket, key: string, offset: number, length: number): () => Promise<Uint8Array> {
  return async () => {
    const object = length > 0 ? await bucket.get(key, { range: { offset, length } }) : null;
    return object ? new Uint8Array(await object.arrayBuffer()) : new Uint8Array();
  };
}

/**
 * Puts the zip of `name` whose deflated data are `pieces` (read in order, each when its turn
 * comes), summed up by `entry`, as one put sent a slice at a time (its length is known from the
 * entry); returns its bytes and SHA-256 (hex). A piece that is not the size the entry counts
 * fails the put: nothing is stored under `key`.
 */
export async function putZipOfPieces(
  bucket: R2Bucket,
  key: string,
  name: string,
  day: Date,
  entry: ZipEntry,
  pieces: (() => Promise<Uint8Array>)[],
): Promise<{ bytes: number; sha256: string }> {
  const { header, trailer } = zipFrame(name, entry, day);
  const bytes = header.length + entry.compressed + trailer.length;
  const sha256 = await putInSlices(bucket, key, bytes, ZIP_PUT, async (send) => {
    await send(header);
    let data = 0;
    for (const piece of pieces) {
      const part = await piece();
      data += part.length;
      // Checked before it is sent: a longer body would fail the put with a vaguer error.
      if (data > entry.compressed) break;
      await send(part);
    }
    if (data !== entry.compressed) throw new Error(`${key}: the pieces hold ${data} bytes, ${entry.compressed} were made`);
    await send(trailer);
  });
  return { bytes, sha256 };
}
