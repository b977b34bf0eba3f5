/**
 * An R2 put whose body goes out a slice at a time, with the thread's other work between
 * (docs/design.md#files-off-the-writer). A file job shares its thread with other work — locally
 * with every market host, and R2's local store takes a put on that thread too — so a body handed
 * over whole is one long turn of copying and hashing; handed over in slices, no turn is long.
 * The length is known before the first byte (a zip's frame and its pieces' sizes are), so it is
 * one put: R2 stores all of it or nothing, a short or a long body fails it, and there is no
 * multipart upload to abort or to pay for part by part. R2 takes up to 5 GB in one put; a zip
 * without ZIP64 is at most 4 GiB.
 */

import { gzipSync } from "node:zlib";
import { sleep } from "../core/cross-request-wait";
import { concatBytes, toHex } from "../core/encoding";

/**
 * A slice of a put's body: a few ms of copying and hashing, here and in R2's store (locally on the
 * same thread: at 256 KiB a slice the two took about three quarters of it for the second a day's
 * zip is copied, and the group's acknowledgements waited; bench:isolation's day-files phase).
 */
export const PUT_SLICE_BYTES = 64 * 1024;

/** The rest after each slice: a put takes at most about half of the thread it shares. */
const PUT_SLICE_REST_MS = 5;

/**
 * Rests between two slices of a long job, so the thread's other work runs (a Workflow's step shares
 * its thread with other isolates): `ms` of rest after a slice of a few ms holds the job to about
 * half of the thread. The isolate's clock does not move while it computes, so the rest is fixed
 * rather than as long as the slice took.
 */
export function yieldTurn(ms = 0): Promise<void> {
  return sleep(ms);
}

/**
 * A gzip member written as its text comes: what is added gathers until a slice (PUT_SLICE_BYTES),
 * which is deflated in one short turn, a rest after it; `end` gives the member's bytes. Only the
 * deflated bytes are held — a day's trades dataset built from text held whole, 24 hours of it,
 * kept tens of MB alive, and the isolate's major collections paused every object on the thread
 * for 200 ms at a time (bench:isolation's day-files phase). A member never deflated (a slice or
 * less) is gzipped at once; a stream is opened only when written.
 *
 * @example
 * const member = new GzipMember();
 * for (const rows of pages) await member.add(rows);
 * const bytes = await member.end();
 */
export class GzipMember {
  private pending = "";
  private stream?: { writer: WritableStreamDefaultWriter<Uint8Array>; chunks: Uint8Array[]; reading: Promise<void> };
  private readonly encoder = new TextEncoder();

  async add(text: string): Promise<void> {
    this.pending += text;
    while (this.pending.length >= PUT_SLICE_BYTES) {
      const slice = this.pending.slice(0, PUT_SLICE_BYTES);
      this.pending = this.pending.slice(PUT_SLICE_BYTES);
      await this.deflate(slice);
    }
  }

  async end(): Promise<Uint8Array> {
    if (!this.stream) return new Uint8Array(gzipSync(this.pending));
    if (this.pending.length > 0) await this.deflate(this.pending);
    this.pending = "";
    await this.stream.writer.close();
    await this.stream.reading;
    return concatBytes(this.stream.chunks);
  }

  private async deflate(slice: string): Promise<void> {
    if (!this.stream) {
      // Read by its own reader as it is written (closing one read through a Response once hung under load).
      const stream = new CompressionStream("gzip");
      const chunks: Uint8Array[] = [];
      const reader = stream.readable.getReader();
      const reading = (async () => {
        for (let read = await reader.read(); !read.done; read = await reader.read()) chunks.push(read.value);
      })();
      this.stream = { writer: stream.writable.getWriter(), chunks, reading };
    }
    await this.stream.writer.write(this.encoder.encode(slice));
    await yieldTurn(PUT_SLICE_REST_MS);
  }
}

/**
 * Text gzipped a slice at a time (`GzipMember`): an hour of a day's trades as CSV is about a
 * megabyte, which `gzipSync` deflates in one long turn of the thread.
 *
 * @example
 * const member = await gzipInSlices(csv);
 */
export async function gzipInSlices(text: string): Promise<Uint8Array> {
  const member = new GzipMember();
  await member.add(text);
  return member.end();
}

/**
 * Puts `length` bytes under `key`, as `write` sends them (in order, any sizes), with a rest after
 * every PUT_SLICE_BYTES; returns their SHA-256 (hex). A `write` that throws, or
 * that sends other than `length` bytes, fails the put and nothing is stored under `key`.
 *
 * @example
 * const sha256 = await putInSlices(bucket, key, header.length + data.length, ZIP_PUT, async (send) => {
 *   await send(header);
 *   await send(data);
 * });
 */
export async function putInSlices(
  bucket: R2Bucket,
  key: string,
  length: number,
  options: R2PutOptions,
  write: (send: (bytes: Uint8Array) => Promise<void>) => Promise<void>,
): Promise<string> {
  const { readable, writable } = new FixedLengthStream(length);
  const put = bucket.put(key, readable, options);
  // Awaited once the body is sent; a put that fails before then also fails the writes.
  put.catch(() => undefined);
  const body = writable.getWriter();
  const digest = new crypto.DigestStream("SHA-256");
  const hash = digest.getWriter();
  // Bytes sent since the last rest: many small parts share a rest, a large one is cut.
  let unrested = 0;
  const send = async (bytes: Uint8Array) => {
    for (let at = 0; at < bytes.length; ) {
      const slice = bytes.subarray(at, at + PUT_SLICE_BYTES - unrested);
      await hash.write(slice);
      await body.write(slice);
      at += slice.length;
      unrested += slice.length;
      if (unrested < PUT_SLICE_BYTES) continue;
      unrested = 0;
      await yieldTurn(PUT_SLICE_REST_MS);
    }
  };
  try {
    await write(send);
    await body.close();
  } catch (error) {
    await body.abort(error).catch(() => undefined);
    throw error;
  }
  await put;
  await hash.close();
  return toHex(await digest.digest);
}
