/** What Cloudflare lets one Durable Object's SQLite hold: 10 GB. */
const HOST_STORAGE_LIMIT_BYTES = 10 * 1000 ** 3;
/** From this share of the limit the host warns (`/status`, `mds_host_storage_warnings_total`). */
const STORAGE_WARN_SHARE = 0.8;
/** From this share the host refuses batches (503 `STORAGE_FULL`): the rest is for what it must still write (covers, minutes, the archive's deletes). */
const STORAGE_REFUSE_SHARE = 0.98;
/** The size is read at most this often (reading it is cheap, but a batch need not ask). */
const READ_EVERY_MS = 1_000;

/** Where a host's storage stands against its limit. */
export type StorageLevel = "ok" | "warn" | "full";

/**
 * A market host's storage against Cloudflare's 10 GB an object (docs/capacity.md#a-hosts-storage):
 * read from SQLite's own size at most once a second. Past 80 % it warns; past 98 % the host takes
 * no more batches — a clear refusal while there is still room for what it must write, never a
 * commit that fails half-way for want of space.
 *
 * @example
 * if (storage.level(Date.now()) === "full") return refusal;
 */
export class HostStorage {
  /** The limit (a test makes it small). */
  limitBytes = HOST_STORAGE_LIMIT_BYTES;
  private readAt = Number.NEGATIVE_INFINITY;
  private bytes = 0;

  constructor(private readonly sql: SqlStorage) {}

  /** SQLite's size now (at most a second old). */
  size(now: number): number {
    if (now - this.readAt >= READ_EVERY_MS) {
      this.readAt = now;
      this.bytes = this.sql.databaseSize;
    }
    return this.bytes;
  }

  level(now: number): StorageLevel {
    const share = this.size(now) / this.limitBytes;
    return share >= STORAGE_REFUSE_SHARE ? "full" : share >= STORAGE_WARN_SHARE ? "warn" : "ok";
  }
}
