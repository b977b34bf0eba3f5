import { type AuditContext, auditStatement } from "../audit/audit-log";
import { type FieldError, problem } from "../core/problem";
import {
  type AssetConfig,
  type AssetStatus,
  changeRules,
  deriveMarket,
  type MarketConfig,
  type MarketListing,
  type MarketStatus,
  type RegistrySnapshot,
  type RuleChange,
  STATUS_TRANSITIONS,
} from "../domain/market-config";

/**
 * The registry's system of record in D1 (migrations/0001_schema.sql). Only the operator API and
 * the Registry object come here: market-data requests read an isolate's copy.
 */

type MarketRow = {
  symbol: string;
  base: string;
  quote: string;
  price_scale: number;
  quantity_scale: number;
  tick_size: string;
  step_size: string;
  min_qty: string;
  max_qty: string;
  min_notional: string;
  status: MarketStatus;
  ordinal: number;
  revision: number;
};

function toMarket(row: MarketRow): MarketConfig {
  return {
    symbol: row.symbol,
    base: row.base,
    quote: row.quote,
    priceScale: row.price_scale,
    quantityScale: row.quantity_scale,
    status: row.status,
    rules: { tickSize: row.tick_size, stepSize: row.step_size, minQty: row.min_qty, maxQty: row.max_qty, minNotional: row.min_notional },
    ordinal: row.ordinal,
    revision: row.revision,
  };
}

const BUMP_VERSION = "UPDATE registry_version SET version = version + 1 WHERE id = 1";

/** The whole registry at its current version, read in one consistent batch. */
export async function readRegistry(db: D1Database): Promise<RegistrySnapshot> {
  const [version, assets, markets] = await db.batch([
    db.prepare("SELECT version FROM registry_version WHERE id = 1"),
    db.prepare("SELECT asset, name, decimals, status FROM assets ORDER BY listed_at, rowid"),
    db.prepare("SELECT * FROM markets ORDER BY ordinal"),
  ]);
  return {
    version: (version!.results[0] as { version: number } | undefined)?.version ?? 0,
    assets: assets!.results as unknown as AssetConfig[],
    markets: (markets!.results as unknown as MarketRow[]).map(toMarket),
  };
}

/** A unique-constraint failure means another change won a race: nothing was written, its audit record neither. */
async function commit(db: D1Database, statements: D1PreparedStatement[]): Promise<void> {
  try {
    await db.batch([...statements, db.prepare(BUMP_VERSION)]);
  } catch (error) {
    if (/UNIQUE|PRIMARY KEY|constraint/i.test(String(error))) {
      throw problem(
        "ALREADY_EXISTS",
        "another registry change listed the same symbol or asset at the same moment; nothing was written — send the request again",
      );
    }
    throw error;
  }
}

function failIfAny(errors: FieldError[], what: string): void {
  if (errors.length > 0) throw problem("VALIDATION_FAILED", `${what}: nothing was listed (a request is all or nothing)`, { errors });
}

/** Lists assets, all or nothing: a code already listed (or twice in the request) is 409 naming every one. */
export async function listAssets(
  db: D1Database,
  assets: Omit<AssetConfig, "status">[],
  audit: AuditContext,
  path: (i: number) => string,
): Promise<AssetConfig[]> {
  const now = audit.at;
  const existing = new Set((await db.prepare("SELECT asset FROM assets").all<{ asset: string }>()).results.map((r) => r.asset));
  const seen = new Set<string>();
  const taken: string[] = [];
  assets.forEach((a, i) => {
    if (existing.has(a.asset) || seen.has(a.asset)) taken.push(`${path(i)}asset`);
    seen.add(a.asset);
  });
  if (taken.length > 0) {
    throw problem("ALREADY_EXISTS", "some assets are already listed (or named twice); nothing was listed", {
      errors: taken.map((p) => ({ path: p, message: "is already listed" })),
    });
  }
  const insert = db.prepare("INSERT INTO assets (asset, name, decimals, status, listed_at) VALUES (?, ?, ?, 'ACTIVE', ?)");
  await commit(db, [
    ...assets.map((a) => insert.bind(a.asset, a.name, a.decimals, now)),
    auditStatement(db, audit, "asset.list", assets.map((a) => a.asset).join(","), { assets }),
  ]);
  return assets.map((a) => ({ ...a, status: "ACTIVE" }));
}

/**
 * Lists markets, all or nothing (docs/operations.md#listing-markets): every failing item is
 * named — 400 for rules and assets, 409 `ALREADY_EXISTS` when every failure is a symbol taken.
 */
export async function listMarkets(db: D1Database, listings: MarketListing[], audit: AuditContext, path: (i: number) => string): Promise<MarketConfig[]> {
  const now = audit.at;
  const [assetRows, marketRows, maxRow] = await db.batch([
    db.prepare("SELECT asset, status FROM assets"),
    db.prepare("SELECT symbol FROM markets"),
    db.prepare("SELECT COALESCE(MAX(ordinal), -1) AS max FROM markets"),
  ]);
  const assets = new Map((assetRows!.results as { asset: string; status: string }[]).map((r) => [r.asset, r.status]));
  const symbols = new Set((marketRows!.results as { symbol: string }[]).map((r) => r.symbol));
  const first = ((maxRow!.results[0] as { max: number }).max ?? -1) + 1;
  const invalid: FieldError[] = [];
  const taken: FieldError[] = [];
  const markets: MarketConfig[] = [];
  listings.forEach((listing, i) => {
    const at = path(i);
    for (const leg of ["base", "quote"] as const) {
      const status = assets.get(listing[leg]);
      if (status === undefined) invalid.push({ path: `${at}${leg}`, message: `${listing[leg]} is not a listed asset (POST /admin/assets first)` });
      else if (status !== "ACTIVE") invalid.push({ path: `${at}${leg}`, message: `${listing[leg]} is not active` });
    }
    const derived = deriveMarket(listing, first + i, at);
    if (derived.errors) {
      invalid.push(...derived.errors);
      return;
    }
    if (symbols.has(derived.market.symbol)) taken.push({ path: `${at}symbol`, message: `${derived.market.symbol} is already listed` });
    symbols.add(derived.market.symbol);
    markets.push(derived.market);
  });
  failIfAny(invalid.concat(invalid.length > 0 ? taken : []), "some listings are not valid");
  if (taken.length > 0) throw problem("ALREADY_EXISTS", "some symbols are already listed (or named twice); nothing was listed", { errors: taken });
  const insert = db.prepare(
    "INSERT INTO markets (symbol, base, quote, price_scale, quantity_scale, tick_size, step_size, min_qty, max_qty, min_notional, status, ordinal, revision, listed_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  );
  await commit(db, [
    ...markets.map((m) =>
      insert.bind(
        m.symbol,
        m.base,
        m.quote,
        m.priceScale,
        m.quantityScale,
        m.rules.tickSize,
        m.rules.stepSize,
        m.rules.minQty,
        m.rules.maxQty,
        m.rules.minNotional,
        m.status,
        m.ordinal,
        m.revision,
        now,
        now,
      ),
    ),
    auditStatement(db, audit, "market.list", markets.map((m) => m.symbol).join(","), { listings }),
  ]);
  return markets;
}

async function readMarket(db: D1Database, symbol: string): Promise<MarketConfig> {
  const row = await db.prepare("SELECT * FROM markets WHERE symbol = ?").bind(symbol).first<MarketRow>();
  if (!row) throw problem("UNKNOWN_SYMBOL", `${symbol} is not a listed market`);
  return toMarket(row);
}

/** Writes a market's new rules or status, with its audit record, if nobody changed it since it was read (else 409, nothing written). */
async function update(db: D1Database, before: MarketConfig, after: MarketConfig, audit: AuditContext, action: string, change: unknown): Promise<MarketConfig> {
  const now = audit.at;
  const { rules } = after;
  const statement = db
    .prepare(
      "UPDATE markets SET tick_size = ?, step_size = ?, min_qty = ?, max_qty = ?, min_notional = ?, status = ?, revision = ?, updated_at = ? WHERE symbol = ? AND revision = ?",
    )
    .bind(rules.tickSize, rules.stepSize, rules.minQty, rules.maxQty, rules.minNotional, after.status, after.revision, now, after.symbol, before.revision);
  const record = auditStatement(db, audit, action, after.symbol, change, true);
  const [result] = await db.batch([statement, record, db.prepare(BUMP_VERSION)]);
  if (result!.meta.changes !== 1) {
    // The version bump ran alone: harmless (copies re-read an unchanged registry).
    throw problem("ALREADY_EXISTS", `${after.symbol} was changed by another request at the same moment; read it and send the change again`);
  }
  return after;
}

/** New trading rules for a market (the scales stay as listed); a delisted market takes none. */
/** A committed market change: the config before and after (the same object when nothing changed). */
export interface MarketChange {
  before: MarketConfig;
  after: MarketConfig;
}

export async function patchMarket(db: D1Database, symbol: string, change: RuleChange, audit: AuditContext): Promise<MarketChange> {
  const market = await readMarket(db, symbol);
  if (market.status === "DELISTED") throw problem("MARKET_NOT_TRADING", `${symbol} is delisted; delisting is final`);
  const { rules, errors } = changeRules(market, change);
  failIfAny(errors, `the new rules of ${symbol} are not valid`);
  const after = await update(db, market, { ...market, rules, revision: market.revision + 1 }, audit, "market.rules", { from: market.rules, to: rules });
  return { before: market, after };
}

/** TRADING ⇄ HALTED, either → DELISTED, which is final. */
export async function setMarketStatus(db: D1Database, symbol: string, status: MarketStatus, audit: AuditContext): Promise<MarketChange> {
  const market = await readMarket(db, symbol);
  if (!STATUS_TRANSITIONS[market.status].includes(status)) throw problem("MARKET_NOT_TRADING", `${symbol} is delisted; delisting is final`);
  if (market.status === status) return { before: market, after: market };
  const after = await update(db, market, { ...market, status, revision: market.revision + 1 }, audit, "market.status", { from: market.status, to: status });
  return { before: market, after };
}

/**
 * Undoes a committed change the market could not be told of (docs/operations.md#halts-and-rule-changes-in-force-before-the-answer): the rules
 * and status of `before` come back at a newer revision, so no copy mistakes the undone one for current.
 */
export async function revertMarket(db: D1Database, change: MarketChange, audit: AuditContext): Promise<MarketConfig> {
  const { before, after } = change;
  const restored = { ...after, rules: before.rules, status: before.status, revision: after.revision + 1 };
  return update(db, after, restored, audit, "market.revert", {
    reason: "the market object could not be told; the change was undone",
    revision: after.revision,
  });
}

/**
 * An asset's status: an INACTIVE asset takes no new market and leaves the prices; the markets
 * already listed with it keep trading until the operator halts or delists them.
 */
export async function setAssetStatus(db: D1Database, asset: string, status: AssetStatus, audit: AuditContext): Promise<AssetConfig> {
  const [updated] = await db.batch([
    db.prepare("UPDATE assets SET status = ? WHERE asset = ?").bind(status, asset),
    auditStatement(db, audit, "asset.status", asset, { to: status }, true),
    db.prepare(BUMP_VERSION),
  ]);
  if (updated!.meta.changes !== 1) throw problem("NOT_FOUND", `${asset} is not a listed asset`);
  const row = await db.prepare("SELECT asset, name, decimals, status FROM assets WHERE asset = ?").bind(asset).first<AssetConfig>();
  return row!;
}
