import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { crc32 } from "../../client/src/checksum";
import { PART_BYTES, ZipStreamWriter } from "../../src/history/zip-stream";
import { recordingBucket } from "../support/recording-bucket";
import { unzip } from "../support/zip";

const hex = async (bytes: Uint8Array) => [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

describe("a zip streamed to R2 (src/history/zip-stream.ts)", () => {
  it.each([
    ["small: one put", 1_000],
    ["larger than a part: a multipart upload", 800_000],
  ])(
    "%s — unzips to the text written, with its CRC, and the SHA-256 returned is the object's",
    async (_, rows) => {
      const key = `test/zip-stream-${rows}.zip`;
      const recorded = recordingBucket(env.HISTORY);
      const writer = new ZipStreamWriter(recorded.bucket, key, "rows.csv", new Date(Date.UTC(2026, 10, 25)));
      let text = "";
      let seed = rows;
      // Rows of pseudo-random digits: deflate keeps about half, so 800,000 rows outgrow a part.
      for (let chunk = 0; chunk < 10; chunk++) {
        const lines: string[] = [];
        for (let i = 0; i < rows / 10; i++) {
          seed = (seed * 1103515245 + 12345) % 2147483648;
          lines.push(`${chunk * rows + i},${seed},${(seed * 7) % 1000003},bid,${seed % 97}\n`);
        }
        const part = lines.join("");
        text += part;
        await writer.write(part);
      }
      const { bytes, sha256 } = await writer.close();
      const object = await env.HISTORY.get(key);
      const zip = new Uint8Array(await object!.arrayBuffer());
      expect([zip.length, object!.size], "the bytes counted are the object's").toEqual([bytes, bytes]);
      if (rows > 1_000) expect(bytes, "more than one part").toBeGreaterThan(PART_BYTES);
      expect(sha256, "the SHA-256 taken on the way").toBe(await hex(zip));
      const file = await unzip(zip);
      expect([file.name, file.flags & 8, file.crc], "name, sizes after the data, CRC of the text").toEqual(["rows.csv", 8, crc32(text)]);
      expect(file.text === text, "the text written, unchanged").toBe(true);
      // An hourly file is put in R2's Infrequent Access class (docs/history.md#storage-class), by either path.
      expect(recorded.classes.get(key), "the storage class asked for").toBe("InfrequentAccess");
    },
    120_000,
  );
});
