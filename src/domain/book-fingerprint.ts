/**
 * Fingerprints of book updates (53-bit cyrb53 over their text): what a market keeps of the updates
 * it applied, to tell a publisher's resend from a conflict (docs/publishing.md#resending). Pure.
 */
/** An update as its fingerprint reads it (the order book's `BookUpdate` is one). */
interface BookUpdate {
  type: "snapshot" | "delta";
  sequence: number;
  bids: readonly (readonly [bigint, bigint])[];
  asks: readonly (readonly [bigint, bigint])[];
}

/**
 * A short fingerprint of an update (53-bit cyrb53 over its text): recognises an identical replay
 * of the last applied update without keeping the update itself.
 */
export function bookFingerprint(update: BookUpdate): string {
  return updateFingerprint(update.type, update.sequence, update.bids, update.asks);
}

/** {@link bookFingerprint} of an update as its parts, levels as units or their decimal text (as a stored entry holds them): the same text either way. */
export function updateFingerprint(
  type: "snapshot" | "delta",
  sequence: number,
  bids: readonly (readonly [bigint | string, bigint | string])[],
  asks: readonly (readonly [bigint | string, bigint | string])[],
): string {
  return cyrb53(`${type}|${sequence}|${bids.map(([p, q]) => `${p}:${q}`).join(",")}|${asks.map(([p, q]) => `${p}:${q}`).join(",")}`);
}

/** The fingerprint of a batch of updates: an exact resend of the whole batch is recognised as one. */
export function batchFingerprint(updates: readonly BookUpdate[]): string {
  return updates.length === 1 ? bookFingerprint(updates[0]!) : cyrb53(updates.map(bookFingerprint).join(";"));
}

function cyrb53(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}
