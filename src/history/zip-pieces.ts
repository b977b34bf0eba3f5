/**
 * A zip of one CSV built a piece at a time, each piece in its own Workflow step
 * (docs/history.md#book-files): a piece is its part of the CSV deflated on its own and ended with
 * a sync flush — raw deflate streams joined that way are one stream, the last piece ending it — so
 * no step holds deflate's state for the next; the CRC is carried from piece to piece. The pieces,
 * once all are made, are copied into the zip in R2 in parts of PART_BYTES (a multipart upload once
 * there is more than one part), its SHA-256 taken on the way. Up to 4 GiB of CSV (no ZIP64).
 */
import { constants, deflateRawSync } from "node:zlib";
import { crc32 } from "../../client/src/checksum";
import { toHex } from "../core/encoding";
import { ZIP_PUT } from "./file-storage";
import { concat, type ZipEntry, zipFrame } from "./zip";

/** R2 takes parts of one size but the last, at least 5 MiB. */
export const PART_BYTES = 8 * 1024 * 1024;

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
  private readonly parts: Uint8Array[] = [];

  constructor(public entry: ZipEntry) {}

  add(text: string): void {
    if (text.length === 0) return;
    const { bytes, entry } = deflatePiece(text, this.entry, false);
    this.parts.push(bytes);
    this.entry = entry;
  }

  end(): void {
    const { bytes, entry } = deflatePiece("", this.entry, true);
    this.parts.push(bytes);
    this.entry = entry;
  }

  get bytes(): Uint8Array {
    return concat(this.parts);
  }
}

/**
 * Rests between two slices of a long job, so the thread's other work runs (a Workflow's step shares
 * its thread with other isolates): `ms` of rest after a slice of a few ms holds the job to about
 * half of the thread. The isolate's clock does not move while it computes, so the rest is fixed
 * rather than as long as the slice took.
 */
export function yieldTurn(ms = 0): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Two files' pieces of one step as one R2 object (a put, not two): the first's bytes, then the second's. */
export function bothPieces(first: Uint8Array, second: Uint8Array): Uint8Array {
  return concat([first, second]);
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
 * comes), summed up by `entry`; returns its bytes and SHA-256 (hex). A failure aborts the
 * multipart upload it began.
 */
export async function putZipOfPieces(
  bucket: R2Bucket,
  key: string,
  name: string,
  day: Date,
  entry: ZipEntry,
  pieces: (() => Promise<Uint8Array>)[],
): Promise<{ bytes: number; sha256: string }> {
  const sink = new R2Sink(bucket, key);
  const { header, trailer } = zipFrame(name, entry, day);
  try {
    await sink.write(header);
    let data = 0;
    for (const piece of pieces) {
      const bytes = await piece();
      data += bytes.length;
      await sink.write(bytes);
    }
    if (data !== entry.compressed) throw new Error(`${key}: the pieces hold ${data} bytes, ${entry.compressed} were made`);
    await sink.write(trailer);
  } catch (error) {
    await sink.abort();
    throw error;
  }
  const bytes = sink.bytes;
  return { bytes, sha256: await sink.close() };
}

/** The bytes of a file in R2 as they come: one put if they fit in a part, else a multipart upload. */
class R2Sink {
  private readonly buffered: Uint8Array[] = [];
  private bufferedBytes = 0;
  private upload: R2MultipartUpload | undefined;
  private readonly parts: R2UploadedPart[] = [];
  private readonly digest = new crypto.DigestStream("SHA-256");
  private readonly digestWriter = this.digest.getWriter();
  bytes = 0;

  constructor(
    private readonly bucket: R2Bucket,
    private readonly key: string,
  ) {}

  async write(chunk: Uint8Array): Promise<void> {
    this.bytes += chunk.length;
    await this.digestWriter.write(chunk);
    this.buffered.push(chunk);
    this.bufferedBytes += chunk.length;
    while (this.bufferedBytes >= PART_BYTES) await this.part(this.take(PART_BYTES));
  }

  private take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let at = 0;
    while (at < n) {
      const head = this.buffered[0]!;
      const used = Math.min(head.length, n - at);
      out.set(head.subarray(0, used), at);
      at += used;
      if (used === head.length) this.buffered.shift();
      else this.buffered[0] = head.subarray(used);
    }
    this.bufferedBytes -= n;
    return out;
  }

  private async part(bytes: Uint8Array): Promise<void> {
    this.upload ??= await this.bucket.createMultipartUpload(this.key, ZIP_PUT);
    this.parts.push(await this.upload.uploadPart(this.parts.length + 1, bytes));
  }

  /** A failed file: the multipart upload begun, if any, is aborted (R2 would keep its parts). */
  async abort(): Promise<void> {
    await this.upload?.abort().catch(() => undefined);
  }

  /** Puts what is left; returns the file's SHA-256 (hex). A failure aborts the multipart upload. */
  async close(): Promise<string> {
    try {
      const rest = this.take(this.bufferedBytes);
      if (this.upload) {
        if (rest.length > 0) await this.part(rest);
        await this.upload.complete(this.parts);
      } else {
        await this.bucket.put(this.key, rest, ZIP_PUT);
      }
    } catch (error) {
      await this.abort();
      throw error;
    }
    await this.digestWriter.close();
    return toHex(await this.digest.digest);
  }
}
