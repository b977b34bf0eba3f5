import { accessGuard, addressGate, formerAddressGate, objectCalls } from "../core/object-ids";
import { type ProblemError, problem } from "../core/problem";
import type { MarketAnswer, MarketQuestion } from "../domain/market-answer";
import type { MarketConfig } from "../domain/market-config";
import { logFailure } from "../logs/log";
import { MAX_CONNECTIONS_PER_PRINCIPAL } from "../streams/protocol";
import type { GatedRead } from "./address-gate";
import { LocalRefusals } from "./local-refusals";
import { windowsFull } from "./principal-windows";
import { type Admission, rateLimitHeaders } from "./sliding-window";

/** This isolate's refusals, per principal (docs/limits.md). */
const refusals = new LocalRefusals();

/** docs/limits.md */
export const PUBLIC_LIMIT = 10;
/** What a refusal of the public limit says. */
export const PUBLIC_DETAIL = `${PUBLIC_LIMIT} requests per second per IP`;
export const SIGNED_LIMIT = 30;
/** Publishing has its own window per key, apart from its reads (docs/limits.md#publishing). */
export const PUBLISH_LIMIT = 200;
export const GATEWAY_LIMIT = 50;

/** The limits in machine-readable form, as `/api/markets` publishes them (docs/limits.md). */
export const RATE_LIMITS = [
  { scope: "ip", kind: "requests", limit: PUBLIC_LIMIT, windowMs: 1_000, appliesTo: "/api/*, /binance/*, /account/*, the dashboard's form posts" },
  { scope: "apiKey", kind: "requests", limit: SIGNED_LIMIT, windowMs: 1_000, appliesTo: "/v1/* reads" },
  { scope: "apiKey", kind: "requests", limit: PUBLISH_LIMIT, windowMs: 1_000, appliesTo: "POST /v1/ingest (its own window, apart from the key's reads)" },
  { scope: "gateway", kind: "requests", limit: GATEWAY_LIMIT, windowMs: 1_000, appliesTo: "POST /api/gateway/callback" },
  { scope: "ip", kind: "connections", limit: MAX_CONNECTIONS_PER_PRINCIPAL, windowMs: null, appliesTo: "/api/ws, /binance/ws, /binance/stream (together)" },
  { scope: "apiKey", kind: "connections", limit: MAX_CONNECTIONS_PER_PRINCIPAL, windowMs: null, appliesTo: "/v1/ws" },
] as const;

/** A signed request's window in its key's guard: publishing counts in one of its own (docs/limits.md#publishing). */
export function signedWindow(permission: string): { scope: "publish" | "requests"; limit: number; detail: string } {
  return permission === "publish"
    ? { scope: "publish", limit: PUBLISH_LIMIT, detail: `${PUBLISH_LIMIT} publishing requests per second per API key` }
    : { scope: "requests", limit: SIGNED_LIMIT, detail: `${SIGNED_LIMIT} requests per second per API key` };
}

/**
 * The 429 of docs/limits.md: `Retry-After` in whole seconds (at least 1), `retryAfterMs`
 * in the body, and the RateLimit-* headers of the window that refused.
 */
export function rateLimited(admission: Admission, detail: string): ProblemError {
  const retryAfterMs = Math.max(1, admission.resetMs);
  return problem("RATE_LIMITED", detail, { retryAfterMs }, { ...rateLimitHeaders(admission), "Retry-After": String(Math.ceil(retryAfterMs / 1000)) });
}

/**
 * A guard's answer, or 503 `UNAVAILABLE` if the guard cannot be reached: the limits fail
 * closed, so a request is never admitted without its guard's word.
 */
export async function fromGuard<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    logFailure("access guard unavailable", { error });
    throw problem("UNAVAILABLE", "the rate limiter did not answer; try again shortly", {}, { "Retry-After": "1" });
  }
}

/**
 * The 429 this isolate gives `principal` now without asking its guard, if it refused it before
 * (thrown by `admit` too; a caller checks first to skip work the refusal would throw away).
 */
export function localRefusal(principal: string, detail: string): ProblemError | undefined {
  const refused = refusals.refusal(principal, Date.now());
  return refused ? rateLimited(refused, detail) : undefined;
}

/**
 * Remembers a refusal of `principal` that did not come through {@link admit} (a signed request's
 * holder refused its key's window): this isolate refuses it without a call until the reset.
 */
export function rememberRefusal(principal: string, refused: Admission): void {
  refusals.remember(principal, refused, Date.now());
}

/**
 * Admits one request of `principal` (`ip:<addr>`, `key:<id>`, `gateway:<id>`) against `limit`
 * per rolling second in that principal's AccessGuard, or throws 429 `RATE_LIMITED`.
 * The returned admission gives the RateLimit-* headers for the answer ({@link rateLimitHeaders}).
 *
 * @example
 * const admission = await admit(env, `gateway:${id}`, GATEWAY_LIMIT);
 * setResponseHeaders(c, rateLimitHeaders(admission));
 */
export async function admit(env: Env, principal: string, limit: number, detail = `${limit} requests per second`): Promise<Admission> {
  const admission = await refusals.admit(principal, Date.now(), askFor(env, principal, limit), Date.now);
  if (!admission.allowed) throw rateLimited(admission, detail);
  return admission;
}

/** An address's limit is counted by its gate (docs/limits.md#address-gates), any other principal's by its own guard. */
function askFor(env: Env, principal: string, limit: number): () => Promise<Admission> {
  if (!isAddress(principal)) return () => fromGuard(accessGuard(env, principal).admit(limit));
  return async () => (await formerGate(env, principal, limit)) ?? counted(await fromGuard(addressGate(env, principal).admit(principal, limit)));
}

/**
 * While a change of ADDRESS_GATES rolls out (docs/limits.md#address-gates), an address the old
 * count put in another gate is admitted there first — its window is the one isolates of the old
 * count fill — and then by its gate now: refused by the first, it is refused (returned here).
 */
async function formerGate(env: Env, principal: string, limit: number): Promise<Admission | undefined> {
  const former = formerAddressGate(env, principal);
  if (!former) return undefined;
  const first = counted(await fromGuard(former.admit(principal, limit)));
  return first.allowed ? undefined : first;
}

function isAddress(principal: string): boolean {
  return principal.startsWith("ip:");
}

/** A gate that could hold no window for the address (docs/limits.md#address-gates): the limits fail closed. */
function counted(admission: Admission | undefined): Admission {
  if (admission) return admission;
  throw windowsFull();
}

/** The market's answer a gate brought with the admission it decided; a gate whose host did not answer fails the refresh. */
export async function answerBrought(read: Promise<{ answer?: MarketAnswer }>, market: MarketConfig): Promise<MarketAnswer> {
  const gated = await read;
  if (!gated.answer) throw new Error(`${market.symbol} did not answer through its gate`);
  return gated.answer;
}

/**
 * Admits one request of an address (`ip:…`, as {@link admit}) and, in the same call to its gate, asks the
 * market `question` (docs/limits.md#address-gates): one object call for the limit and the refresh.
 * The answer fails with the admission's 429, or when the market did not answer through the gate.
 *
 * @example
 * const { admission, answer } = admitReading(env, "ip:203.0.113.9", 10, detail, market, { kind: "ticker" });
 */
export function admitReading(
  env: Env,
  principal: string,
  limit: number,
  detail: string,
  market: MarketConfig,
  question: MarketQuestion,
): { admission: Promise<Admission>; answer: Promise<MarketAnswer> } {
  let read: Promise<GatedRead> | undefined;
  const ask = async () => {
    const refused = await formerGate(env, principal, limit);
    if (refused) return refused;
    objectCalls.gateReads += 1;
    read = fromGuard(addressGate(env, principal).read(principal, limit, market, question));
    return read.then((gated) => counted(gated.admission));
  };
  const admission = refusals.admit(principal, Date.now(), ask, Date.now).then((decided) => {
    if (!decided.allowed) throw rateLimited(decided, detail);
    return decided;
  });
  // Admitted only by the gate's call: the read is under way.
  const answer = admission.then(() => answerBrought(read!, market));
  return { admission, answer };
}

export { type Admission, rateLimitHeaders };
