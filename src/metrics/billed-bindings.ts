import { seriesKey } from "./counts";
import { isolateMetrics, type MetricsHolder, metricsOn } from "./holder";

/**
 * The bindings Cloudflare bills per operation — KV, R2 and Workers Analytics Engine — with each
 * operation counted where it happens (docs/operations.md#metrics), so `npm run bench:cost` prices
 * them from a run instead of from formulas:
 *
 * - `mds_kv_operations_total{op}`: read (a key), write, delete, list;
 * - `mds_bucket_operations_total{class,storage}`: class A (put, multipart create/part/complete, list)
 *   and class B (get, head) by the storage class they touch (`Standard`, `InfrequentAccess`), and
 *   `free` (delete, abort); `mds_bucket_bytes_read_total{storage}`: bytes retrieved (Infrequent Access
 *   bills them);
 * - `mds_analytics_points_total`: data points written.
 *
 * The counts go into the isolate's holder, handed on as its other counts are.
 */

type BilledName = "PRICES" | "HISTORY" | "REQUEST_EVENTS";

/** The wrapped binding of each binding object, made once per isolate. */
const wrappedOf = new WeakMap<object, unknown>();

/** Bound methods pass through unchanged; the named ones are replaced. */
function overlay<T extends object>(target: T, replaced: Record<string, unknown>): T {
  return new Proxy(target, {
    get: (t, prop) => {
      if (typeof prop === "string" && prop in replaced) return replaced[prop];
      const value = Reflect.get(t, prop, t);
      return typeof value === "function" ? value.bind(t) : value;
    },
  });
}

/** What an R2 call touched: its class and storage class. */
type R2Class = "A" | "B" | "free";

function r2Counter(holder: MetricsHolder) {
  const op = (cls: R2Class, storage: string) => holder.counts.addSeries(seriesKey("mds_bucket_operations_total", { class: cls, storage }));
  const read = (storage: string, bytes: number) => {
    if (bytes > 0) holder.counts.addSeries(seriesKey("mds_bucket_bytes_read_total", { storage }), bytes);
  };
  return { op, read };
}

/** A storage class as R2 names it; a put without one takes the bucket's default, Standard. */
const classOf = (options: { storageClass?: string } | undefined) => options?.storageClass ?? "Standard";

/**
 * The storage class of an object read: as R2 reports it, or where the runtime does not (the local
 * R2 leaves it empty) by the service's own rule — its zips, and only they, are put in Infrequent
 * Access (`ZIP_PUT`, history/file-storage.ts).
 */
function storedClass(object: R2Object | null, key: string): string {
  if (object?.storageClass) return object.storageClass;
  return key.endsWith(".zip") ? "InfrequentAccess" : "Standard";
}

/** The bytes a get retrieved: its range's, or the whole object's. */
function bytesRetrieved(object: R2Object | R2ObjectBody | null): number {
  if (!object || !("body" in object)) return 0;
  const range = object.range as { offset?: number; length?: number; suffix?: number } | undefined;
  if (range?.length !== undefined) return range.length;
  if (range?.suffix !== undefined) return range.suffix;
  return object.size - (range?.offset ?? 0);
}

function billedR2(bucket: R2Bucket, holder: MetricsHolder): R2Bucket {
  const { op, read } = r2Counter(holder);
  const upload = (u: R2MultipartUpload, storage: string): R2MultipartUpload =>
    overlay(u, {
      uploadPart: (...args: Parameters<R2MultipartUpload["uploadPart"]>) => {
        op("A", storage);
        return u.uploadPart(...args);
      },
      complete: (...args: Parameters<R2MultipartUpload["complete"]>) => {
        op("A", storage);
        return u.complete(...args);
      },
      abort: () => {
        op("free", storage);
        return u.abort();
      },
    });
  return overlay(bucket, {
    put: (key: string, value: Parameters<R2Bucket["put"]>[1], options?: R2PutOptions) => {
      op("A", classOf(options));
      return bucket.put(key, value, options);
    },
    get: async (key: string, options?: R2GetOptions) => {
      const object = await bucket.get(key, options);
      const storage = storedClass(object, key);
      op("B", storage);
      read(storage, bytesRetrieved(object));
      return object;
    },
    head: async (key: string) => {
      const object = await bucket.head(key);
      op("B", storedClass(object, key));
      return object;
    },
    list: (options?: R2ListOptions) => {
      op("A", "Standard");
      return bucket.list(options);
    },
    delete: (keys: string | string[]) => {
      op("free", "Standard");
      return bucket.delete(keys);
    },
    createMultipartUpload: async (key: string, options?: R2MultipartOptions) => {
      op("A", classOf(options));
      return upload(await bucket.createMultipartUpload(key, options), classOf(options));
    },
    resumeMultipartUpload: (key: string, uploadId: string) =>
      // A resumed upload's class is not known here: its parts count as the zips' (Infrequent Access).
      upload(bucket.resumeMultipartUpload(key, uploadId), "InfrequentAccess"),
  });
}

function billedKv(kv: KVNamespace, holder: MetricsHolder): KVNamespace {
  const op = (name: string, n = 1) => holder.counts.addSeries(seriesKey("mds_kv_operations_total", { op: name }), n);
  const keys = (key: unknown) => (Array.isArray(key) ? key.length : 1);
  return overlay(kv, {
    get: (key: string | string[], ...rest: unknown[]) => {
      op("read", keys(key));
      return (kv.get as (...args: unknown[]) => unknown)(key, ...rest);
    },
    getWithMetadata: (key: string | string[], ...rest: unknown[]) => {
      op("read", keys(key));
      return (kv.getWithMetadata as (...args: unknown[]) => unknown)(key, ...rest);
    },
    put: (...args: Parameters<KVNamespace["put"]>) => {
      op("write");
      return kv.put(...args);
    },
    delete: (key: string) => {
      op("delete");
      return kv.delete(key);
    },
    list: (...args: Parameters<KVNamespace["list"]>) => {
      op("list");
      return kv.list(...args);
    },
  });
}

function billedPoints(dataset: AnalyticsEngineDataset, holder: MetricsHolder): AnalyticsEngineDataset {
  const key = seriesKey("mds_analytics_points_total");
  return overlay(dataset, {
    writeDataPoint: (point?: AnalyticsEngineDataPoint) => {
      holder.counts.addSeries(key);
      dataset.writeDataPoint(point);
    },
  });
}

/**
 * `env[name]` with its billed operations counted (as it is when metrics are off, or unbound).
 *
 * @example
 * await billed(env, "HISTORY").put(key, bytes);
 * const snapshot = await billed(env, "PRICES").get(PRICE_SNAPSHOT_KEY, "json");
 */
export function billed<K extends BilledName>(env: Env, name: K, holder: MetricsHolder = isolateMetrics): Env[K] {
  const binding = env[name] as Env[K] | undefined;
  if (!binding || !metricsOn(env)) return binding as Env[K];
  let wrapped = wrappedOf.get(binding) as Env[K] | undefined;
  if (!wrapped) {
    wrapped = (
      name === "HISTORY"
        ? billedR2(binding as R2Bucket, holder)
        : name === "PRICES"
          ? billedKv(binding as KVNamespace, holder)
          : billedPoints(binding as AnalyticsEngineDataset, holder)
    ) as Env[K];
    wrappedOf.set(binding, wrapped);
  }
  return wrapped;
}
