import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { auditOf, operatorRoute } from "../admin/auth";
import type { AuditContext } from "../audit/audit-log";
import { marketObject, registryObject } from "../core/object-ids";
import { problem } from "../core/problem";
import { createdJson, jsonBody, okJson, problemResponses } from "../core/schemas";
import { requireSymbol } from "../core/symbols";
import { ASSET_CODE, ASSET_CODE_RULE, MAX_LISTINGS_PER_REQUEST, type MarketConfig, marketView } from "../domain/market-config";
import type { AppEnv } from "../http/env";
import { createRouter } from "../http/router";
import { logFailure } from "../logs/log";
import { AssetSchema, MarketSchema, PairParam } from "../market/schemas";
import { adoptRegistry } from "./copy";
import { listAssets, listMarkets, type MarketChange, patchMarket, readRegistry, revertMarket, setAssetStatus, setMarketStatus } from "./store";

const AssetCode = z.string().regex(ASSET_CODE, ASSET_CODE_RULE);
const RuleDecimal = z.string().max(40).openapi({ description: "A positive plain decimal" });

const AssetListingSchema = z
  .object({
    asset: AssetCode.openapi({ example: "ADA" }),
    name: z.string().trim().min(1).max(100).openapi({ example: "Cardano" }),
    decimals: z.number().int().min(0).max(36).openapi({ example: 6, description: "On-chain decimals" }),
  })
  .strict()
  .openapi("AssetListing");

const MarketListingSchema = z
  .object({
    base: AssetCode.openapi({ example: "ADA" }),
    quote: AssetCode.openapi({ example: "USDT" }),
    tickSize: RuleDecimal.openapi({ example: "0.0001", description: "Price increment; its decimals are the market's price scale, fixed at listing" }),
    stepSize: RuleDecimal.openapi({ example: "0.1", description: "Quantity increment; its decimals are the quantity scale, fixed at listing" }),
    minQty: RuleDecimal.openapi({ example: "1", description: "At least stepSize, a whole number of steps" }),
    maxQty: RuleDecimal.openapi({ example: "10000000", description: "At least minQty, a whole number of steps" }),
    minNotional: RuleDecimal.openapi({ example: "1", description: "Least price × quantity of a trade, in the quote asset" }),
  })
  .strict()
  .openapi("MarketListing");

const RuleChangeSchema = MarketListingSchema.omit({ base: true, quote: true })
  .partial()
  .strict()
  .refine((change) => Object.keys(change).length > 0, "name at least one of tickSize, stepSize, minQty, maxQty, minNotional")
  .openapi("MarketRuleChange");

/** One item or an array of up to 500: the answer has the same form. */
const oneOrMany = <T extends z.ZodType>(item: T) => z.union([item, z.array(item).min(1).max(MAX_LISTINGS_PER_REQUEST)]);
/**
 * Lists what was sent — one item or an array — publishes the change and answers in the form sent.
 * Field paths of a bulk request start with the item's index, as the schema's own errors do.
 */
async function listAsSent<I, O>(env: Env, input: I | I[], list: (items: I[], path: (i: number) => string) => Promise<O[]>): Promise<O | O[]> {
  const bulk = Array.isArray(input);
  const listed = await list(bulk ? input : [input], (i) => (bulk ? `body.${i}.` : "body."));
  await publish(env);
  return bulk ? listed : listed[0]!;
}

/**
 * Publishes a committed change: the Registry object reads D1 again, this isolate takes the new
 * copy at once, and every other one within REGISTRY_REFRESH_MS. The change is committed either
 * way: a publication that fails is made by the Registry object's own reload within a minute.
 */
async function publish(env: Env): Promise<void> {
  try {
    adoptRegistry(await registryObject(env).reload());
  } catch (error) {
    logFailure("registry publication failed", { error });
  }
}

/**
 * A committed change of a market's rules or status is in force for ingest before the operator's
 * answer: the market object is told at once (isolates with an older registry copy send batches
 * checked against older rules, and the market sends those back with its newer config). If the
 * market cannot be told, the change is undone and the answer is 503: nothing changed
 * (docs/operations.md#halts-and-rule-changes-in-force-before-the-answer).
 */
async function enforce(env: Env, change: MarketChange, audit: AuditContext): Promise<MarketConfig> {
  if (change.after === change.before) return change.after;
  try {
    await marketObject(env, change.after).configure(change.after);
  } catch (error) {
    logFailure("market could not be told of a change; undoing it", { symbol: change.after.symbol, error: error });
    await revertMarket(env.DB, change, { ...audit, at: Date.now() });
    await publish(env);
    throw problem(
      "UNAVAILABLE",
      `the ${change.after.symbol} market could not be told of the change, so it was undone; send it again`,
      {},
      { "Retry-After": "1" },
    );
  }
  await publish(env);
  return change.after;
}

const StatusBody = z.object({ status: z.enum(["TRADING", "HALTED", "DELISTED"]) }).strict();

/** A route that changes one market (its rules, its status) with a JSON body, and answers the market as it now stands. */
function marketChange<M extends "patch" | "put", P extends string, B extends z.ZodType>(
  method: M,
  path: P,
  body: B,
  words: { operationId: string; summary: string; description: string },
) {
  return operatorRoute(method, path, {
    ...words,
    request: { params: PairParam, ...jsonBody(body) },
    responses: { ...okJson(MarketSchema, "The market"), ...problemResponses(400, 401, 404, 409, 413, 415, 429, 503) },
  });
}

/** Records a change of the market `pair` names, puts it in force (`enforce`) and answers the market as it now stands. */
async function answerChange(c: Context<AppEnv>, pair: string, change: (symbol: string, audit: AuditContext) => Promise<MarketChange>) {
  const audit = auditOf(c);
  return c.json(marketView(await enforce(c.env, await change(requireSymbol(pair).symbol, audit), audit)), 200);
}

/**
 * The registry's operator routes, mounted at `/admin` (docs/operations.md#listing-markets):
 * list assets and markets, change a market's rules or status, read the system of record.
 *
 * @example
 * app.route("/admin", registryRoutes);
 */
export const registryRoutes = createRouter()
  .openapi(
    operatorRoute("post", "/assets", {
      operationId: "createAssets",
      summary: "List assets: one, or an array of up to 500 (all or nothing)",
      description: "An asset code already listed (or named twice) is 409 ALREADY_EXISTS naming each; a request that fails lists nothing.",
      request: jsonBody(oneOrMany(AssetListingSchema)),
      responses: { ...createdJson(oneOrMany(AssetSchema), "What was listed, in the form sent"), ...problemResponses(400, 401, 409, 413, 415, 429, 503) },
    }),
    async (c) => c.json(await listAsSent(c.env, c.req.valid("json"), (items, path) => listAssets(c.env.DB, items, auditOf(c), path)), 201),
  )
  .openapi(
    operatorRoute("put", "/assets/{asset}/status", {
      operationId: "setAssetStatus",
      summary: "Change an asset's status: ACTIVE ⇄ INACTIVE",
      description:
        "An INACTIVE asset takes no new market (400 naming base or quote) and leaves GET /api/prices; markets already listed with it keep their status until the operator changes it.",
      request: {
        params: z.object({ asset: AssetCode.openapi({ param: { name: "asset", in: "path" }, example: "ADA" }) }),
        ...jsonBody(z.object({ status: z.enum(["ACTIVE", "INACTIVE"]) }).strict()),
      },
      responses: { ...okJson(AssetSchema, "The asset"), ...problemResponses(400, 401, 404, 413, 415, 429, 503) },
    }),
    async (c) => {
      const asset = await setAssetStatus(c.env.DB, c.req.valid("param").asset, c.req.valid("json").status, auditOf(c));
      await publish(c.env);
      return c.json(asset, 200);
    },
  )
  .openapi(
    operatorRoute("get", "/assets", {
      operationId: "listAllAssets",
      summary: "Every asset (the system of record)",
      responses: { ...okJson(z.object({ version: z.number().int(), assets: z.array(AssetSchema) }), "Assets"), ...problemResponses(401, 429, 503) },
    }),
    async (c) => {
      const { version, assets } = await readRegistry(c.env.DB);
      return c.json({ version, assets }, 200);
    },
  )
  .openapi(
    operatorRoute("post", "/markets", {
      operationId: "createMarkets",
      summary: "List markets: one, or an array of up to 500 (all or nothing)",
      description:
        "symbol = base + quote; priceScale and quantityScale are the decimals of tickSize and stepSize. Both assets must be listed and active. A listing that fails any check is 400 naming every failing field (`errors`, paths `body.{i}.{field}`); a symbol already listed is 409 ALREADY_EXISTS. Nothing is listed unless everything is. Bodies up to 256 KiB.",
      request: jsonBody(oneOrMany(MarketListingSchema)),
      responses: { ...createdJson(oneOrMany(MarketSchema), "The markets listed, in the form sent"), ...problemResponses(400, 401, 409, 413, 415, 429, 503) },
    }),
    async (c) =>
      c.json(await listAsSent(c.env, c.req.valid("json"), async (items, path) => (await listMarkets(c.env.DB, items, auditOf(c), path)).map(marketView)), 201),
  )
  .openapi(
    operatorRoute("get", "/markets", {
      operationId: "listAllMarkets",
      summary: "Every market, delisted ones too, in listing order (the system of record)",
      responses: {
        ...okJson(
          z.object({
            version: z.number().int().openapi({ description: "The registry version" }),
            markets: z.array(MarketSchema.extend({ revision: z.number().int() })),
          }),
          "Markets",
        ),
        ...problemResponses(401, 429, 503),
      },
    }),
    async (c) => {
      const { version, markets } = await readRegistry(c.env.DB);
      return c.json({ version, markets: markets.map((m) => ({ ...marketView(m), revision: m.revision })) }, 200);
    },
  )
  .openapi(
    marketChange("patch", "/markets/{pair}", RuleChangeSchema, {
      operationId: "changeMarketRules",
      summary: "Change a market's trading rules (the scales stay as listed)",
      description:
        "In force for the market's next ingest batch before the answer (if the market cannot be told, the change is undone: 503). tickSize and stepSize may change within the market's scales (0.01 → 0.05, not 0.001). Resting levels that no longer fit stay until the publisher changes or removes them; new and changed levels must fit. A delisted market is 409.",
    }),
    async (c) => answerChange(c, c.req.valid("param").pair, (symbol, audit) => patchMarket(c.env.DB, symbol, c.req.valid("json"), audit)),
  )
  .openapi(
    marketChange("put", "/markets/{pair}/status", StatusBody, {
      operationId: "setMarketStatus",
      summary: "Change a market's status: TRADING ⇄ HALTED, either → DELISTED (final)",
      description:
        "In force before the answer: a halted market refuses ingest from the next batch on; a delisted one leaves every listing, answers 404, and its streams end. If the market object cannot be told, the change is undone and the answer is 503 UNAVAILABLE (nothing changed). Recorded in the audit log.",
    }),
    async (c) => answerChange(c, c.req.valid("param").pair, (symbol, audit) => setMarketStatus(c.env.DB, symbol, c.req.valid("json").status, audit)),
  );
