import { problem } from "../core/problem";
import type { MarketGrant } from "../domain/market-config";
import { allowListAdmits } from "./client-address";
import { type KeyRecord, keyStateAt, type Permission } from "./keys";
import { FUTURE_TOLERANCE_MS, isOnTime, signaturePayload, verifySignature } from "./signature";
import type { Admission } from "./sliding-window";

/** What the Worker sends for one signed request: everything its key's holder needs in one call. */
export interface SignedCheck {
  timestamp: number;
  recvWindow: number;
  method: string;
  requestTarget: string;
  body: string;
  signature: string;
  ip: string;
  permission: Permission;
  limit: number;
}

/** A signed request admitted, with a publishing key's markets when it asked to publish. */
export type Authorized = Admission & { markets?: MarketGrant };

/**
 * Checks one signed request against its key's record, in the documented order (docs/signing.md):
 * the key, the timestamp, the signature, the permission, the allow-list. Throws the problem of the
 * first that fails; the rate is the caller's (a key's guard, or an account key's gate).
 *
 * @example
 * await verifySigned(record, () => importSecret(secret), check, Date.now());
 */
export async function verifySigned(record: KeyRecord | null, cryptoKey: () => Promise<CryptoKey>, check: SignedCheck, now: number): Promise<KeyRecord> {
  if (!record || keyStateAt(record, now) !== "active") {
    throw problem("INVALID_API_KEY", record ? "the API key is revoked or expired" : "no such API key");
  }
  if (!isOnTime(check.timestamp, now, check.recvWindow)) {
    throw problem("TIMESTAMP_OUT_OF_WINDOW", `X-TIMESTAMP must be within [serverTime − ${check.recvWindow} ms, serverTime + ${FUTURE_TOLERANCE_MS} ms]`, {
      serverTime: now,
    });
  }
  if (!(await verifySignature(await cryptoKey(), signaturePayload(check), check.signature))) {
    throw problem("INVALID_SIGNATURE", "the signature does not match: sign timestamp\\nMETHOD\\nrequestTarget\\nbody with the key's secret");
  }
  // Publishing needs an operator's key with markets, whatever an older account key's record says.
  if (check.permission === "publish" && record.markets === undefined) {
    throw problem("PERMISSION_DENIED", "this key cannot publish: publishing keys are issued by the operator (docs/publishing.md#publish-keys)");
  }
  if (!record.permissions.includes(check.permission)) {
    throw problem("PERMISSION_DENIED", `the API key lacks the ${check.permission} permission`);
  }
  if (!allowListAdmits(record.allowCidrs, check.ip)) {
    throw problem("IP_NOT_ALLOWED", `${check.ip} is not in the API key's allow-list`);
  }
  return record;
}
