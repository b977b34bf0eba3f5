import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { crc32 } from "../../client/src/checksum";
import { PUT_SLICE_BYTES } from "../../src/history/sliced-put";
import { deflatePiece, EMPTY_ENTRY, putZipOfPieces } from "../../src/history/zip-pieces";
import { recordingBucket } from "../support/recording-bucket";
import { unzip } from "../support/zip";

const hex = async (bytes: Uint8Array) => [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
const DAY = new Date(Date.UTC(2026, 10, 25));

/** Rows of pseudo-random digits: deflate keeps about half, so 800,000 rows make a zip of many slices. */
function rowsText(rows: number): string {
  const lines: string[] = [];
  let seed = rows;
  for (let i = 0; i < rows; i++) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    lines.push(`${i},${seed},${(seed * 7) % 1000003},bid,${seed % 97}\n`);
  }
  return lines.join("");
}

/** The text cut at `cuts`, each piece deflated after those before (as each Workflow step does), then put as one zip. */
async function zipInPieces(bucket: R2Bucket, key: string, text: string, cuts: number[]) {
  const bounds = [0, ...[...new Set(cuts)].sort((a, b) => a - b), text.length];
  let entry = EMPTY_ENTRY;
  const pieces: Uint8Array[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const piece = deflatePiece(text.slice(bounds[i], bounds[i + 1]), entry, i + 2 === bounds.length);
    pieces.push(piece.bytes);
    entry = piece.entry;
  }
  return {
    entry,
    ...(await putZipOfPieces(
      bucket,
      key,
      "rows.csv",
      DAY,
      entry,
      pieces.map((p) => () => Promise.resolve(p)),
    )),
  };
}

describe("a zip put in R2 from pieces deflated apart (src/history/zip-pieces.ts)", () => {
  it("any cuts of any text: the zip holds the text, its CRC and sizes, whichever pieces are empty", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: "grapheme-ascii", maxLength: 3_000 }), fc.array(fc.nat(3_000), { maxLength: 6 }), async (text, cuts) => {
        const key = "test/zip-pieces-property.zip";
        const { entry } = await zipInPieces(
          env.HISTORY,
          key,
          text,
          cuts.map((c) => Math.min(c, text.length)),
        );
        const file = await unzip(new Uint8Array(await (await env.HISTORY.get(key))!.arrayBuffer()));
        expect(file.text === text, `the text back, cut at ${cuts}`).toBe(true);
        expect([file.crc, entry.size], "the CRC carried piece to piece, and the size").toEqual([
          crc32(new TextEncoder().encode(text)),
          new TextEncoder().encode(text).length,
        ]);
      }),
      { numRuns: 40, seed: 54 },
    );
  });

  it.each([
    ["small: one slice", 1_000],
    ["large: many slices", 800_000],
  ])(
    "%s — unzips to the text, and the SHA-256 returned is the object's",
    async (_, rows) => {
      const key = `test/zip-pieces-${rows}.zip`;
      const recorded = recordingBucket(env.HISTORY);
      const text = rowsText(rows);
      const cuts = Array.from({ length: 9 }, (_, i) => Math.floor(((i + 1) * text.length) / 10));
      const { bytes, sha256 } = await zipInPieces(recorded.bucket, key, text, cuts);
      const object = await env.HISTORY.get(key);
      const zip = new Uint8Array(await object!.arrayBuffer());
      expect([zip.length, object!.size], "the bytes counted are the object's").toEqual([bytes, bytes]);
      if (rows > 1_000) expect(bytes, "more than ten slices").toBeGreaterThan(10 * PUT_SLICE_BYTES);
      expect(sha256, "the SHA-256 taken on the way").toBe(await hex(zip));
      const file = await unzip(zip);
      expect([file.name, file.crc], "name, CRC of the text").toEqual(["rows.csv", crc32(text)]);
      expect(file.text === text, "the text written, unchanged").toBe(true);
      // An hourly file is put in R2's Infrequent Access class (docs/history.md#storage-class), whatever its size.
      expect(recorded.classes.get(key), "the storage class asked for").toBe("InfrequentAccess");
    },
    120_000,
  );

  it.each([
    ["lost: shorter than the entry counts", () => new Uint8Array()],
    ["longer than the entry counts", (bytes: Uint8Array) => new Uint8Array(bytes.length + 1)],
    [
      "failing to be read",
      () => {
        throw new Error("the piece's object is gone");
      },
    ],
  ])(
    "a last piece %s, after many slices were sent: the put fails, nothing is stored under the key, and a put again succeeds",
    async (name, spoil) => {
      const key = `test/zip-pieces-spoiled-${name.split(":")[0]!.replaceAll(" ", "-")}.zip`;
      const text = rowsText(800_000);
      const [a, b] = [Math.floor(text.length * 0.45), Math.floor(text.length * 0.9)];
      const first = deflatePiece(text.slice(0, a), EMPTY_ENTRY, false);
      const second = deflatePiece(text.slice(a, b), first.entry, false);
      const third = deflatePiece(text.slice(b), second.entry, true);
      expect(first.bytes.length + second.bytes.length, "the first two pieces are sent before the third is read").toBeGreaterThan(10 * PUT_SLICE_BYTES);
      const spoiled = [() => Promise.resolve(first.bytes), () => Promise.resolve(second.bytes), async () => spoil(third.bytes)];
      await expect(putZipOfPieces(env.HISTORY, key, "rows.csv", DAY, third.entry, spoiled), "the spoiled piece is found").rejects.toThrow(/pieces hold|gone/);
      expect(await env.HISTORY.head(key), "no file under the key").toBeNull();
      const pieces = [first, second, third].map((piece) => () => Promise.resolve(piece.bytes));
      const { sha256 } = await putZipOfPieces(env.HISTORY, key, "rows.csv", DAY, third.entry, pieces);
      const zip = new Uint8Array(await (await env.HISTORY.get(key))!.arrayBuffer());
      expect(sha256, "the file put again, whole").toBe(await hex(zip));
      expect((await unzip(zip)).text === text, "the text, unchanged").toBe(true);
    },
    120_000,
  );
});
