/**
 * What the limits and keys promise (docs/limits.md), as a plain model the access model test
 * (./access.model.test.ts) checks the real answers against. The service's clock is not the test's,
 * so each answer is known only to have been decided between its sending and its arrival: the model
 * finds only what is certain — eleven admissions surely within one second, an answer to a key sent
 * after its revocation was answered — never what the clocks' slack could explain.
 */

/** One answer as the client saw it: decided somewhere in [sentAt, answeredAt]. */
export interface Seen {
  sentAt: number;
  answeredAt: number;
  status: number;
}

/** One principal's window: `limit` admissions in any rolling second, never more. */
export class WindowModel {
  private readonly admitted: Seen[] = [];

  constructor(
    readonly name: string,
    readonly limit: number,
  ) {}

  /** Records an answer; returns what it breaks, if anything. */
  record(seen: Seen): string | undefined {
    if (seen.status !== 200) return undefined;
    this.admitted.push(seen);
    this.admitted.sort((a, b) => a.sentAt - b.sentAt);
    // limit + 1 admissions whose last arrival came less than a second after the first's sending were surely in one second.
    for (let k = this.limit; k < this.admitted.length; k++) {
      const group = this.admitted.slice(k - this.limit, k + 1);
      const last = Math.max(...group.map((s) => s.answeredAt));
      if (last - group[0]!.sentAt < 1_000) return `${this.name}: ${this.limit + 1} admitted within ${last - group[0]!.sentAt} ms`;
    }
    // What can no longer be in a window with a later request is dropped.
    while (this.admitted.length > 0 && this.admitted[0]!.answeredAt < seen.sentAt - 5_000) this.admitted.shift();
    return undefined;
  }
}

/** An account key: its rights end when its revocation is answered. */
export class KeyModel {
  /** When the revocation's 204 arrived. */
  revokedAt: number | undefined;
  readonly window: WindowModel;

  constructor(
    readonly id: string,
    readonly secret: string,
    limit: number,
  ) {
    this.window = new WindowModel(`key ${id}`, limit);
  }

  /** Checks a signed request's answer (`forged`: a signature not made with the secret); returns what it breaks. */
  answer(seen: Seen, forged: boolean): string | undefined {
    const allowed = forged
      ? [401, 429]
      : this.revokedAt !== undefined && seen.sentAt > this.revokedAt
        ? [401, 429]
        : this.revokedAt === undefined
          ? [200, 429]
          : [200, 401, 429];
    if (!allowed.includes(seen.status)) {
      const why = forged
        ? "a forged signature"
        : this.revokedAt !== undefined && seen.sentAt > this.revokedAt
          ? `sent ${seen.sentAt - this.revokedAt} ms after its revocation was answered`
          : "an active key";
      return `key ${this.id}, ${why}: answered ${seen.status}, expected one of ${allowed.join(", ")}`;
    }
    return forged ? undefined : this.window.record(seen);
  }
}
