import { seriesKey } from "./counts";
import { type MetricsHolder, metricsOn } from "./holder";

/** Rows a storage call wrote and read, as the runtime bills them, and the table written (`kv`, `alarm` for those calls). */
type RowsCounted = (written: number, read: number, table?: string) => void;

/** The table a writing statement names; `schema` for any other (CREATE, DROP, ALTER). */
const WRITES = /^\s*(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)/i;

/**
 * The table family a statement writes: a market's own prefix (`m_{SYMBOL}_`, `market-storage.ts`)
 * and an hour's suffix (`trade_ids_{hour}`) taken off, so a venue's thousands of tables are a
 * few dozen series.
 */
export function tableOf(query: string): string {
  const name = WRITES.exec(query)?.[1];
  return name === undefined ? "schema" : name.replace(/^m_[A-Z0-9]+_/, "").replace(/_[0-9]+$/, "");
}

/** The count of keys a KV call names: one key, or each of an array's or an object's. */
function keysIn(keys: unknown): number {
  if (typeof keys === "string") return 1;
  if (Array.isArray(keys)) return keys.length;
  return keys !== null && typeof keys === "object" ? Object.keys(keys).length : 1;
}

/** Binds a storage object's own methods to it, so a proxy hands them on unchanged. */
function passThrough<T extends object>(target: T, prop: string | symbol): unknown {
  const value = Reflect.get(target, prop, target);
  return typeof value === "function" ? value.bind(target) : value;
}

/**
 * SQL whose every statement's rows are counted from the runtime's own cursor counters
 * (`rowsWritten`, `rowsRead`: each index entry is a row written). A cursor's counts grow while it
 * is read, so they are taken at the end of the turn that ran it (a microtask), when the
 * synchronous reads of that turn are done.
 */
function meteredSql(sql: SqlStorage, counted: RowsCounted): { sql: SqlStorage; settle: () => void } {
  let pending: [string, SqlStorageCursor<Record<string, SqlStorageValue>>][] = [];
  const settle = () => {
    if (pending.length === 0) return;
    let read = 0;
    const written = new Map<string, number>();
    for (const [query, cursor] of pending) {
      read += cursor.rowsRead;
      if (cursor.rowsWritten > 0) {
        const table = tableOf(query);
        written.set(table, (written.get(table) ?? 0) + cursor.rowsWritten);
      }
    }
    pending = [];
    if (read > 0) counted(0, read);
    for (const [table, rows] of written) counted(rows, 0, table);
  };
  const exec = (query: string, ...bindings: unknown[]) => {
    const cursor = sql.exec(query, ...bindings);
    if (pending.length === 0) queueMicrotask(settle);
    pending.push([query, cursor]);
    return cursor;
  };
  return { sql: new Proxy(sql, { get: (target, prop) => (prop === "exec" ? exec : passThrough(target, prop)) }), settle };
}

/** The synchronous KV API of a SQLite-backed object: one row a key put, deleted or read. */
function meteredKv(kv: SyncKvStorage, counted: RowsCounted): SyncKvStorage {
  const wrapped: Partial<SyncKvStorage> = {
    get: ((key: string) => {
      counted(0, 1);
      return kv.get(key);
    }) as SyncKvStorage["get"],
    put: ((key: string, value: unknown) => {
      counted(1, 0, "kv");
      return kv.put(key, value);
    }) as SyncKvStorage["put"],
    delete: ((key: string) => {
      counted(1, 0, "kv");
      return kv.delete(key);
    }) as SyncKvStorage["delete"],
    list: ((options?: SyncKvListOptions) => {
      const entries = [...kv.list(options)];
      counted(0, Math.max(1, entries.length));
      return entries[Symbol.iterator]();
    }) as SyncKvStorage["list"],
  };
  return new Proxy(kv, { get: (target, prop) => (prop in wrapped ? wrapped[prop as keyof SyncKvStorage] : passThrough(target, prop)) });
}

/**
 * An object's storage with what it bills counted: SQL by the cursors' counters, the KV calls one
 * row a key, and each `setAlarm`/`deleteAlarm` one row written (the alarm is a row).
 */
function meteredStorage(storage: DurableObjectStorage, counted: RowsCounted): { storage: DurableObjectStorage; settle: () => void } {
  const { sql, settle } = meteredSql(storage.sql, counted);
  const kv = meteredKv(storage.kv, counted);
  const wrapped: Record<string, unknown> = {
    sql,
    kv,
    get: (keys: string | string[], options?: DurableObjectGetOptions) => {
      counted(0, keysIn(keys));
      return storage.get(keys as string[], options);
    },
    put: (keys: string | Record<string, unknown>, value?: unknown, options?: DurableObjectPutOptions) => {
      counted(keysIn(keys), 0, "kv");
      return typeof keys === "string" ? storage.put(keys, value, options) : storage.put(keys, value as DurableObjectPutOptions);
    },
    delete: (keys: string | string[], options?: DurableObjectPutOptions) => {
      counted(keysIn(keys), 0, "kv");
      return storage.delete(keys as string[], options);
    },
    setAlarm: (time: number | Date, options?: DurableObjectSetAlarmOptions) => {
      counted(1, 0, "alarm");
      return storage.setAlarm(time, options);
    },
    deleteAlarm: (options?: DurableObjectSetAlarmOptions) => {
      counted(1, 0, "alarm");
      return storage.deleteAlarm(options);
    },
  };
  const metered = new Proxy(storage, { get: (target, prop) => (typeof prop === "string" && prop in wrapped ? wrapped[prop] : passThrough(target, prop)) });
  return { storage: metered, settle };
}

/**
 * How a request reached an object: an RPC call or `fetch`, its alarm, a WebSocket message (billed
 * 20 to a request), or a call on an RPC session the object handed out (`../rpc-sessions/`: the
 * session's opening was the billed call; the calls on it are not billed).
 */
export type RequestKind = "call" | "alarm" | "message" | "session";

/**
 * What one Durable Object bills, counted where it happens (docs/operations.md#metrics): the rows
 * its storage wrote and read and the requests it served, as `mds_storage_rows_written_total`,
 * `mds_storage_rows_read_total` and `mds_object_requests_total`, labelled with the object's class.
 * The counts go into `holder` (the isolate's, shared by the objects it runs: `MeteredObject`).
 *
 * @example
 * this.meter = new ObjectMeter("market", env, isolateMetrics);
 * this.store = new MarketStore(this.meter.storage(ctx.storage));
 */
export class ObjectMeter {
  private readonly on: boolean;
  /** The series keys, made once: counting a request is a map update. */
  private readonly keys: { written: string; read: string } & Record<RequestKind, string>;
  /** The per-table series keys, made once each. */
  private readonly tableKeys = new Map<string, string>();
  /** Counts the rows of the statements run so far (else counted at the end of their turn). */
  private readonly settlers: (() => void)[] = [];

  constructor(
    readonly object: string,
    env: Env,
    readonly holder: MetricsHolder,
  ) {
    this.on = metricsOn(env);
    this.keys = {
      written: seriesKey("mds_storage_rows_written_total", { object }),
      read: seriesKey("mds_storage_rows_read_total", { object }),
      call: seriesKey("mds_object_requests_total", { object, kind: "call" }),
      alarm: seriesKey("mds_object_requests_total", { object, kind: "alarm" }),
      message: seriesKey("mds_object_requests_total", { object, kind: "message" }),
      session: seriesKey("mds_object_requests_total", { object, kind: "session" }),
    };
  }

  /** `storage` with its rows counted (as it is when metrics are off). */
  storage(storage: DurableObjectStorage): DurableObjectStorage {
    if (!this.on) return storage;
    const metered = meteredStorage(storage, (written, read, table) => this.rows(written, read, table));
    this.settlers.push(metered.settle);
    return metered.storage;
  }

  /** Counts now the rows of statements whose turn has not ended (before a hand-over). */
  settleRows(): void {
    for (const settle of this.settlers) settle();
  }

  rows(written: number, read: number, table = "other"): void {
    if (written > 0) {
      this.holder.counts.addSeries(this.keys.written, written);
      let key = this.tableKeys.get(table);
      if (key === undefined) this.tableKeys.set(table, (key = seriesKey("mds_storage_table_rows_written_total", { object: this.object, table })));
      this.holder.counts.addSeries(key, written);
    }
    if (read > 0) this.holder.counts.addSeries(this.keys.read, read);
  }

  request(kind: RequestKind = "call"): void {
    if (this.on) this.holder.counts.addSeries(this.keys[kind]);
  }
}

/** An object with a meter (see `meterRequests`). */
export interface Metered {
  readonly meter: ObjectMeter;
  /** Called after each counted request: hands the counts on when due (the object's own rule). */
  afterRequest?(): void;
}

/** After a counted request: its rows counted, the counts handed on when due. */
function settled(object: Metered): void {
  object.meter.settleRows();
  object.afterRequest?.();
}

/** Set by `callInSession` for the one metered call it makes next: counted as `session`, not `call`. */
let callingInSession = false;

/** The names of the methods `meterRequests` wrapped, per class prototype (the ones a session may call). */
const meteredNames = new WeakMap<object, Set<string>>();

/** Runs one request of `object`: counted as `kind`, its rows counted when it is done, the counts handed on when due. */
function runMetered<T extends Metered>(object: T, kind: RequestKind, method: (...args: unknown[]) => unknown, args: unknown[]): unknown {
  object.meter.request(kind);
  let result: unknown;
  try {
    result = method.apply(object, args);
  } catch (error) {
    settled(object);
    throw error;
  }
  // An async method's rows are counted when it is done.
  if (result instanceof Promise) return result.finally(() => settled(object));
  settled(object);
  return result;
}

/**
 * Counts every request an object class serves: wraps the named methods of its prototype (RPC
 * methods stay prototype methods, as the runtime requires), so no method can forget to count.
 * `fetch` and RPC methods count as `call`, `alarm` as `alarm`, `webSocketMessage` as `message`.
 *
 * @example
 * meterRequests(MarketObject, ["ingest", "answer", "alarm"]);
 */
export function meterRequests<T extends Metered>(cls: { prototype: T }, methods: readonly (keyof T & string)[]): void {
  const names = new Set<string>();
  meteredNames.set(cls.prototype, names);
  for (const name of methods) {
    const original = cls.prototype[name] as unknown as (this: T, ...args: unknown[]) => unknown;
    if (typeof original !== "function") throw new Error(`meterRequests: ${name} is not a method`);
    names.add(name);
    const kind: RequestKind = name === "alarm" ? "alarm" : name === "webSocketMessage" ? "message" : "call";
    Object.defineProperty(cls.prototype, name, {
      configurable: true,
      writable: true,
      value: function (this: T, ...args: unknown[]) {
        const counted = callingInSession ? "session" : kind;
        callingInSession = false;
        return runMetered(this, counted, original, args);
      },
    });
  }
}

/**
 * Calls a metered method of `object` as a call on one of its RPC sessions: counted as `session`
 * (not billed: the session's opening was), and otherwise as the method's own call is.
 */
export function callInSession<T extends Metered>(object: T, name: string, args: unknown[]): unknown {
  let metered = false;
  for (let proto = Object.getPrototypeOf(object); proto && !metered; proto = Object.getPrototypeOf(proto))
    metered = meteredNames.get(proto)?.has(name) ?? false;
  if (!metered) throw new Error(`callInSession: ${name} is not a metered method`);
  // Through the object's method as it stands (a test may have replaced it), counted as a session's call.
  callingInSession = true;
  try {
    return (object as unknown as Record<string, (...args: unknown[]) => unknown>)[name]!(...args);
  } finally {
    callingInSession = false;
  }
}
