/**
 * A zip of one file written as it is made (docs/history.md#book-files): the CSV is deflated as its
 * rows come, the CRC and sizes follow the data (a data descriptor), and the bytes go to R2 in
 * parts of PART_BYTES — a multipart upload once there is more than one part — with their SHA-256
 * taken on the way. Memory holds one part and what deflate holds, whatever the file's size.
 * Up to 4 GiB of CSV (no ZIP64).
 */
import { crc32 } from "../../client/src/checksum";
import { ZIP_PUT } from "./file-storage";
import { ZIP_MAX_BYTES } from "./zip";

/** R2 takes parts of one size but the last, at least 5 MiB. */
export const PART_BYTES = 8 * 1024 * 1024;

function dosDate(day: Date): number {
  return ((day.getUTCFullYear() - 1980) << 9) | ((day.getUTCMonth() + 1) << 5) | day.getUTCDate();
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
      await this.upload?.abort().catch(() => undefined);
      throw error;
    }
    await this.digestWriter.close();
    return [...new Uint8Array(await this.digest.digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  }
}

/** One CSV file zipped into R2 as its text comes (`write`), finished by `close`. */
export class ZipStreamWriter {
  private readonly sink: R2Sink;
  private readonly name: Uint8Array;
  private readonly date: number;
  private readonly deflate = new CompressionStream("deflate-raw");
  private readonly input = this.deflate.writable.getWriter();
  private readonly pumped: Promise<void>;
  private crc = 0;
  private size = 0;
  private compressed = 0;
  private readonly encoder = new TextEncoder();

  constructor(bucket: R2Bucket, key: string, csvName: string, day: Date) {
    this.sink = new R2Sink(bucket, key);
    this.name = this.encoder.encode(csvName);
    this.date = dosDate(day);
    const header = new DataView(new ArrayBuffer(30));
    // Local file header: version 2.0, flag 8 (sizes and CRC in a descriptor after the data), deflate.
    header.setUint32(0, 0x04034b50, true);
    header.setUint16(4, 20, true);
    header.setUint16(6, 8, true);
    header.setUint16(8, 8, true);
    header.setUint16(12, this.date, true);
    header.setUint16(26, this.name.length, true);
    const opened = this.sink.write(new Uint8Array(header.buffer)).then(() => this.sink.write(this.name));
    this.pumped = opened
      .then(async () => {
        const reader = this.deflate.readable.getReader();
        for (let read = await reader.read(); !read.done; read = await reader.read()) {
          this.compressed += read.value.length;
          await this.sink.write(read.value);
        }
      })
      .catch(async (error) => {
        // R2 failed: the writes waiting on deflate fail too, rather than wait for ever.
        await this.input.abort(error).catch(() => undefined);
        throw error;
      });
    this.pumped.catch(() => undefined); // seen by close, or by the write it fails
  }

  async write(text: string): Promise<void> {
    if (text.length === 0) return;
    const bytes = this.encoder.encode(text);
    this.size += bytes.length;
    if (this.size > ZIP_MAX_BYTES) throw new Error(`more than ${ZIP_MAX_BYTES} bytes: a zip without ZIP64 holds no more`);
    this.crc = crc32(bytes, this.crc);
    await this.input.ready;
    await this.input.write(bytes);
  }

  /** Ends the file: the descriptor, the central directory; returns its bytes and SHA-256 (hex). */
  async close(): Promise<{ bytes: number; sha256: string }> {
    await this.input.close();
    await this.pumped;
    const descriptor = new DataView(new ArrayBuffer(16));
    descriptor.setUint32(0, 0x08074b50, true);
    descriptor.setUint32(4, this.crc, true);
    descriptor.setUint32(8, this.compressed, true);
    descriptor.setUint32(12, this.size, true);
    await this.sink.write(new Uint8Array(descriptor.buffer));
    const centralOffset = this.sink.bytes;
    const central = new DataView(new ArrayBuffer(46));
    central.setUint32(0, 0x02014b50, true);
    central.setUint16(4, 20, true);
    central.setUint16(6, 20, true);
    central.setUint16(8, 8, true);
    central.setUint16(10, 8, true);
    central.setUint16(14, this.date, true);
    central.setUint32(16, this.crc, true);
    central.setUint32(20, this.compressed, true);
    central.setUint32(24, this.size, true);
    central.setUint16(28, this.name.length, true);
    await this.sink.write(new Uint8Array(central.buffer));
    await this.sink.write(this.name);
    const end = new DataView(new ArrayBuffer(22));
    end.setUint32(0, 0x06054b50, true);
    end.setUint16(8, 1, true);
    end.setUint16(10, 1, true);
    end.setUint32(12, 46 + this.name.length, true);
    end.setUint32(16, centralOffset, true);
    await this.sink.write(new Uint8Array(end.buffer));
    const bytes = this.sink.bytes;
    return { bytes, sha256: await this.sink.close() };
  }
}
