import { marketObject, objectCalls } from "../core/object-ids";
import { type ProblemResult, problem, unwrap } from "../core/problem";
import type { MarketConfig } from "../domain/market-config";
import { grantsMarket, type MarketGrant } from "../domain/market-config";
import type { BookOutcome } from "../domain/order-book";
import { ensureRegistry } from "../registry/copy";
import { type IngestBatch, toIngestBatch } from "./ingest-check";
import { resolveMarket } from "./lookup";
import type { IngestBody } from "./schemas";

export interface IngestResult {
  symbol: string;
  acceptedTrades: number;
  duplicateTrades: number;
  sequence: number;
  /** What the batch's book update did, when it had one: `duplicate` is an identical replay, a no-op. */
  book?: BookOutcome;
}

/**
 * The market a batch names, if `grant` lets its publisher write it (docs/publishing.md#publish-keys):
 * 403 `FORBIDDEN_MARKET` otherwise, before anything of the batch is looked at.
 */
function grantedMarket(grant: MarketGrant, symbol: string): MarketConfig {
  const market = resolveMarket(symbol);
  if (!grantsMarket(grant, market.symbol)) {
    throw problem("FORBIDDEN_MARKET", `this publishing key may not write ${market.symbol}; the operator grants markets per key`, { symbol: market.symbol });
  }
  return market;
}

/**
 * The one ingest path: `POST /v1/ingest`, the publisher channel and the demo feed all come
 * through here with a schema-validated body and their publisher's grant, and the market's
 * single writer applies it.
 */
export async function ingest(env: Env, grant: MarketGrant, body: IngestBody, now = Date.now(), options: IngestOptions = {}): Promise<IngestResult> {
  await ensureRegistry(env);
  return ingestReady(env, grant, body, now, options);
}

/**
 * `ingest` once the registry copy is ensured (`ensureRegistry`): the batch is checked and on its
 * way before anything is awaited, so a caller that calls in a market's order keeps that order
 * (the publisher channel ensures the registry once a message and then takes its batches in turn).
 */
export async function ingestReady(
  env: Env,
  grant: MarketGrant,
  body: IngestBody,
  now: number,
  { via, commit = "tick" }: IngestOptions = {},
): Promise<IngestResult> {
  let market = grantedMarket(grant, body.symbol);
  // Checked at its host, against the newest rules there: a channel's thread only routes (docs/benchmarks.md#one-channel).
  if (via) {
    objectCalls.ingest += 1;
    return unwrap(await via.call(market, body, commit)) as IngestResult;
  }
  // The market holds the newest rules: checked against an older copy's, the batch is checked again.
  for (;;) {
    objectCalls.ingest += 1;
    const answer = unwrap(await marketObject(env, market).ingest(market, toIngestBatch(market, body, now), commit));
    if (!("newerConfig" in answer)) return answer;
    market = answer.newerConfig;
  }
}

/** How a batch goes to its market (the market's own stub by default) and when it is written. */
export interface IngestOptions {
  via?: IngestVia;
  commit?: IngestCommit;
}

/**
 * When the market writes the batch (docs/design.md#the-write-path): with its tick's other batches
 * (`tick`: the publisher channel, which keeps many in flight), or at once with whatever is staged
 * (`now`: `POST /v1/ingest`, whose publisher has one request in flight per market — a tick would
 * hold its one batch and only add the wait).
 */
export type IngestCommit = "tick" | "now";

/**
 * How a caller that keeps a market's batches in order pipelines them (the publisher channel): it
 * sends them on its own way (`call`, gathering a host's batches into one call) in the order given,
 * so the next batch may go as soon as this one is on its way — not after its answer, which waits
 * for the group's tick (docs/design.md#the-write-path). The body goes as the publisher wrote it
 * (its shape checked): its host checks it against the market's scales and rules.
 */
export interface IngestVia {
  call(market: MarketConfig, body: IngestBody, commit: IngestCommit): Promise<IngestAnswer>;
}

/** What a market answers when the caller's config is older than the one it holds: validate again with this one. */
interface NewerConfig {
  newerConfig: MarketConfig;
}

/** A batch as the publisher channel hands it to a market's host (`encodeIngestCall`, ingest-wire.ts): the body checked there. */
export interface IngestItem {
  market: MarketConfig;
  /** The body's JSON (its shape checked, its decimals not yet): embedded whole in the call's one string. */
  body: string;
  commit: IngestCommit;
}

/**
 * What a channel of the version before sent (an array, while a deploy rolls): the batch checked
 * against `market` at the channel, as `encodeIngestBatch` writes it or as its values.
 */
export interface CheckedIngestItem {
  market: MarketConfig;
  batch: string | IngestBatch;
  commit: IngestCommit;
}

/** A market's answer to a batch: applied (or not), refused, or checked against an older config than it holds. */
export type IngestAnswer = IngestResult | ProblemResult | NewerConfig;
