import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { accessGuard, keyGate, objectCalls } from "../core/object-ids";
import { isProblemResult, ProblemError, type ProblemResult, problem, unwrap } from "../core/problem";
import { setResponseHeaders } from "../core/response-headers";
import type { MarketGrant } from "../domain/market-config";
import type { AppEnv } from "../http/env";
import type { GatedSignedRead } from "./address-gate";
import { AdmissionTicket } from "./admission-ticket";
import { clientIp, clientPrincipal } from "./client-address";
import { isGatedKey, KEY_ID_PATTERN, KEY_ID_RULE, type Permission, principalOfKey } from "./keys";
import {
  admit,
  admitReading,
  answerBrought,
  fromGuard,
  localRefusal,
  PUBLIC_DETAIL,
  PUBLIC_LIMIT,
  rateLimited,
  rememberRefusal,
  signedWindow,
} from "./rate-limit";
import { requestTargetOf, SIGNATURE_PATTERN, TIMESTAMP_PATTERN } from "./signature";
import type { Authorized, SignedCheck } from "./signed-check";
import { type Admission, rateLimitHeaders } from "./sliding-window";

const DEFAULT_RECV_WINDOW = 5_000;
const MAX_RECV_WINDOW = 60_000;

/**
 * A request refused before any key vouched for it counts against the client IP's public limit
 * (docs/limits.md) and carries that limit's headers; over the limit it becomes the 429 instead.
 */
export async function chargeClientIp(env: Env, request: Request, refusal: ProblemError): Promise<ProblemError> {
  let admission: Admission;
  try {
    admission = await admit(env, clientPrincipal(request), PUBLIC_LIMIT, FAILING_DETAIL);
  } catch (error) {
    // Over its limit with a failed check: its signed requests are refused here until the reset,
    // not each checked by its key's gate (docs/limits.md#key-gates).
    const retryAfterMs = error instanceof ProblemError && error.code === "RATE_LIMITED" ? Number(error.extras?.retryAfterMs) : 0;
    if (retryAfterMs > 0) rememberRefusal(failingOf(request), { allowed: false, limit: PUBLIC_LIMIT, remaining: 0, resetMs: retryAfterMs });
    throw error;
  }
  Object.assign(refusal.headers, rateLimitHeaders(admission));
  return refusal;
}

const FAILING_DETAIL = `${PUBLIC_LIMIT} requests per second per IP, failed authentications included`;

/** The principal this isolate refuses the signed requests of an address failing its checks by. */
const failingOf = (request: Request) => `failing:${clientPrincipal(request)}`;

/** The principal this isolate refuses a key's signed requests by, once its window refused them (publishing has its own). */
const keyWindowOf = (keyId: string, permission: Permission) => `${principalOfKey(keyId)}|${signedWindow(permission).scope}`;

/**
 * A signed request this isolate refuses without a call (docs/limits.md#key-gates): its key's window
 * refused it until the reset, or its address is over its limit with failed checks. A flood then
 * costs the key's gate — shared with 1/32 of all addresses and keys — one call a window, not one a request.
 */
function signedRefusal(request: Request, keyId: string, permission: Permission): ProblemError | undefined {
  return localRefusal(keyWindowOf(keyId, permission), signedWindow(permission).detail) ?? localRefusal(failingOf(request), FAILING_DETAIL);
}

/** Puts the RateLimit-* headers on whatever response the route produced, errors included. */
function withLimitHeaders(c: Context<AppEnv>, admission: Admission): void {
  setResponseHeaders(c, rateLimitHeaders(admission));
}

/** A read with no effect: a GET or HEAD that is not a WebSocket upgrade (which takes a slot). */
function isPlainRead(request: Request): boolean {
  return (request.method === "GET" || request.method === "HEAD") && !request.headers.has("Upgrade");
}

/**
 * Runs the route once `admission` allows it, with the RateLimit headers on its answer. A plain
 * read runs *while* the admission is decided — one round trip instead of two — and its answer
 * is dropped for the problem if the admission fails; anything else waits for the admission.
 */
async function runAdmitted(c: Context<AppEnv>, next: () => Promise<void>, admission: Promise<Admission>): Promise<void> {
  if (!isPlainRead(c.req.raw)) {
    const headers = rateLimitHeaders(await admission);
    c.set("rateLimitHeaders", headers);
    await next();
    return setResponseHeaders(c, headers);
  }
  const [decided] = await Promise.allSettled([admission, next()]);
  if (decided.status === "rejected") {
    // The read's answer is dropped, its headers too: Hono would copy them onto the problem, and
    // a 429 must not say `Cache-Control: public` or name the moment of data it does not carry.
    c.res = undefined;
    throw decided.reason;
  }
  withLimitHeaders(c, decided.value);
}

/**
 * 10 requests per second per client IP on the public surface (docs/limits.md). An address this
 * isolate already refused is answered at once, before the read that would be thrown away.
 */
export const publicLimit = createMiddleware<AppEnv>((c, next) => {
  const principal = clientPrincipal(c.req.raw);
  const refused = localRefusal(principal, PUBLIC_DETAIL);
  if (refused) throw refused;
  return runAdmitted(c, next, admit(c.env, principal, PUBLIC_LIMIT, PUBLIC_DETAIL));
});

/**
 * {@link publicLimit} for the market reads (docs/limits.md#address-gates): a plain read's admission
 * is carried by its first market refresh, in one call to the address's gate, or decided by a plain
 * call once the route is done (a read served from fresh copies does no awaiting of its own).
 */
export const publicReadLimit = createMiddleware<AppEnv>((c, next) => {
  const principal = clientPrincipal(c.req.raw);
  const refused = localRefusal(principal, PUBLIC_DETAIL);
  if (refused) throw refused;
  if (!isPlainRead(c.req.raw)) return runAdmitted(c, next, admit(c.env, principal, PUBLIC_LIMIT, PUBLIC_DETAIL));
  const ticket = new AdmissionTicket({
    plain: () => admit(c.env, principal, PUBLIC_LIMIT, PUBLIC_DETAIL),
    carried: (market, question) => admitReading(c.env, principal, PUBLIC_LIMIT, PUBLIC_DETAIL, market, question),
  });
  c.set("readCarrier", ticket);
  return runAdmitted(c, () => next().finally(() => ticket.decide()), ticket.admission);
});

export interface SignedOptions {
  permission: Permission;
  /** Browsers cannot set headers on a WebSocket: `apiKey`, `timestamp`, `signature` in the query (docs/streams.md). */
  allowQueryForm?: boolean;
}

interface Credentials {
  keyId: string;
  timestamp: number;
  signature: string;
  recvWindow: number;
  requestTarget: string;
}

function readCredentials(request: Request, allowQueryForm: boolean): Credentials {
  // The URL is parsed only when the query form may apply (most requests use headers).
  const url = allowQueryForm && !request.headers.has("X-API-KEY") ? new URL(request.url) : undefined;
  const query = url?.searchParams.has("apiKey") ? url.searchParams : undefined;
  const fromQuery = query !== undefined;
  const read = (header: string, name: string) => (query ? query.get(name) : request.headers.get(header));
  const names = fromQuery
    ? { key: "apiKey", timestamp: "timestamp", signature: "signature" }
    : { key: "X-API-KEY", timestamp: "X-TIMESTAMP", signature: "X-SIGNATURE" };
  const keyId = read("X-API-KEY", "apiKey");
  const timestamp = read("X-TIMESTAMP", "timestamp");
  const signature = read("X-SIGNATURE", "signature");
  const recvWindow = request.headers.get("X-RECV-WINDOW");
  // Missing is MISSING_CREDENTIALS; present but not of the documented form is MALFORMED_CREDENTIALS,
  // except a key id, which is INVALID_API_KEY like an unknown key (no key has that id).
  if (!keyId) throw problem("MISSING_CREDENTIALS", `${names.key} is missing`);
  if (!KEY_ID_PATTERN.test(keyId)) throw problem("INVALID_API_KEY", `${names.key} is not an API key id (${KEY_ID_RULE})`);
  if (!timestamp) throw problem("MISSING_CREDENTIALS", `${names.timestamp} is missing`);
  // Canonical digits only: what is signed is the text sent, so it must have one spelling.
  if (!TIMESTAMP_PATTERN.test(timestamp))
    throw problem("MALFORMED_CREDENTIALS", `${names.timestamp} is malformed: expected Unix milliseconds, digits without leading zeros`);
  if (!signature) throw problem("MISSING_CREDENTIALS", `${names.signature} is missing`);
  if (!SIGNATURE_PATTERN.test(signature)) throw problem("MALFORMED_CREDENTIALS", `${names.signature} is malformed: expected 64 hex digits`);
  let window = DEFAULT_RECV_WINDOW;
  if (recvWindow !== null) {
    if (!/^[1-9]\d{0,4}$/.test(recvWindow) || Number(recvWindow) > MAX_RECV_WINDOW) {
      throw problem("MALFORMED_CREDENTIALS", `X-RECV-WINDOW is malformed: expected 1–${MAX_RECV_WINDOW} ms, digits without leading zeros`);
    }
    window = Number(recvWindow);
  }
  // In the query form only the path is signed (the credentials travel in the query itself).
  const requestTarget = url && fromQuery ? url.pathname : requestTargetOf(request.url);
  return { keyId, timestamp: Number(timestamp), signature, recvWindow: window, requestTarget };
}

/** A signed request's key and what its holder is asked (credentials read, or their problem thrown). */
function signedCheckOf(request: Request, options: SignedOptions, body: string): { keyId: string; check: SignedCheck } {
  const credentials = readCredentials(request, options.allowQueryForm ?? false);
  return {
    keyId: credentials.keyId,
    check: {
      timestamp: credentials.timestamp,
      recvWindow: credentials.recvWindow,
      method: request.method,
      requestTarget: credentials.requestTarget,
      body,
      signature: credentials.signature,
      ip: clientIp(request),
      permission: options.permission,
      limit: signedWindow(options.permission).limit,
    },
  };
}

/** Asks the key's holder — an account key's gate, a publishing key's guard — to check and admit `check`. */
function askHolder(env: Env, keyId: string, check: SignedCheck): Promise<Authorized | ProblemResult> {
  if (isGatedKey(keyId, check.permission)) return fromGuard(keyGate(env, keyId).authorize(keyId, check));
  return fromGuard(accessGuard(env, principalOfKey(keyId)).authorize(check));
}

/**
 * The holder's answer as the request's admission: its problem thrown, a refusal of the rate its
 * 429. A failure counts against the client IP's public limit (docs/limits.md), so a flood of bad
 * signatures is refused with 429 like any other.
 */
async function settleSigned(
  env: Env,
  request: Request,
  options: SignedOptions,
  keyId: string,
  asked: () => Promise<Authorized | ProblemResult>,
): Promise<Authorized> {
  try {
    const result = await asked();
    if (isProblemResult(result)) unwrap(result);
    const authorized = result as Authorized;
    if (!authorized.allowed) {
      rememberRefusal(keyWindowOf(keyId, options.permission), authorized);
      throw rateLimited(authorized, signedWindow(options.permission).detail);
    }
    return authorized;
  } catch (error) {
    // Refused credentials count against the address; a refusal of the rate or an unreachable holder does not.
    if (error instanceof ProblemError && error.code !== "RATE_LIMITED" && error.code !== "UNAVAILABLE") throw await chargeClientIp(env, request, error);
    throw error;
  }
}

/** {@link signedCheckOf}, its refusal counted against the client IP as any failed authentication. */
async function checkedCredentials(env: Env, request: Request, options: SignedOptions, body: string): Promise<{ keyId: string; check: SignedCheck }> {
  try {
    return signedCheckOf(request, options, body);
  } catch (error) {
    if (error instanceof ProblemError) throw await chargeClientIp(env, request, error);
    throw error;
  }
}

/**
 * Authenticates a signed request and admits it against its key's limit: one object call, to an
 * account key's gate or a publishing key's guard (docs/limits.md#key-gates).
 */
export async function authenticateSigned(
  env: Env,
  request: Request,
  options: SignedOptions,
  body = "",
): Promise<{ keyId: string; admission: Admission; markets?: MarketGrant }> {
  const { keyId, check } = await checkedCredentials(env, request, options, body);
  const refused = signedRefusal(request, keyId, options.permission);
  if (refused) throw refused;
  const { markets, ...admission } = await settleSigned(env, request, options, keyId, () => askHolder(env, keyId, check));
  return { keyId, admission, ...(markets !== undefined && { markets }) };
}

/**
 * A signed plain read of an account key: its admission carried by its first market refresh, in one
 * call to the key's gate, or decided by a plain call once the route is done (docs/limits.md#key-gates).
 */
function signedReadTicket(env: Env, request: Request, options: SignedOptions, keyId: string, check: SignedCheck): AdmissionTicket {
  const settle = (asked: () => Promise<Authorized | ProblemResult>) =>
    settleSigned(env, request, options, keyId, asked).then(({ markets: _, ...admission }) => admission);
  return new AdmissionTicket({
    plain: () => settle(() => askHolder(env, keyId, check)),
    carried: (market, question) => {
      objectCalls.gateReads += 1;
      const read: Promise<GatedSignedRead> = fromGuard(keyGate(env, keyId).authorizeRead(keyId, check, market, question));
      const admission = settle(() => read.then((gated) => gated.authorized));
      return { admission, answer: admission.then(() => answerBrought(read, market)) };
    },
  });
}

/**
 * Signed surface (`/v1/*`): verifies the signature over the raw body and limits per key. The
 * `/v1` reads are public market data, so they run while the key is checked (see `runAdmitted`)
 * and need nothing of it; a route that answered with the key's own data would have to await
 * the check first.
 */
export function signedAccess(permission: Permission) {
  const options: SignedOptions = { permission };
  return createMiddleware<AppEnv>(async (c, next) => {
    const body = c.req.method === "GET" || c.req.method === "HEAD" ? "" : await c.req.text();
    const { keyId, check } = await checkedCredentials(c.env, c.req.raw, options, body);
    const refused = signedRefusal(c.req.raw, keyId, permission);
    if (refused) throw refused;
    if (isPlainRead(c.req.raw) && isGatedKey(keyId, permission)) {
      const ticket = signedReadTicket(c.env, c.req.raw, options, keyId, check);
      c.set("readCarrier", ticket);
      return runAdmitted(c, () => next().finally(() => ticket.decide()), ticket.admission);
    }
    const authenticated = settleSigned(c.env, c.req.raw, options, keyId, () => askHolder(c.env, keyId, check)).then(({ markets, ...admission }) => {
      // A publishing key's markets, for the route to hold each batch to (docs/publishing.md#publish-keys).
      if (markets !== undefined) c.set("publishGrant", markets);
      return admission;
    });
    await runAdmitted(c, next, authenticated);
  });
}
