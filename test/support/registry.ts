import { env } from "cloudflare:workers";
import { marketObject } from "../../src/core/object-ids";
import { GROUP_SIZE, type MarketConfig, type RegistryIndex } from "../../src/domain/market-config";
import { ensureRegistry } from "../../src/registry/copy";
import { ADMIN } from "./gateways";
import { callJson } from "./http";

/** The registry as this isolate sees it (the default venue of scripts/default-venue.sql, and what a test listed). */
export function registry(): Promise<RegistryIndex> {
  return ensureRegistry(env);
}

/** The seven default markets, in listing order. */
export async function defaultMarkets(): Promise<MarketConfig[]> {
  return (await registry()).listed.slice(0, 7);
}

/** Lists through the operator API, failing the test on anything but 201. */
export async function listThroughAdmin(path: "/admin/assets" | "/admin/markets", body: unknown): Promise<unknown> {
  const { status, body: answer } = await callJson(path, {
    method: "POST",
    headers: { ...ADMIN, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (status !== 201) throw new Error(`${path}: ${status} ${JSON.stringify(answer)}`);
  return answer;
}

/** The object hosting a listed market's engine: its group's (docs/design.md#market-hosts). */
export async function hostOf(symbol: string) {
  const market = (await registry()).bySymbol.get(symbol);
  if (!market) throw new Error(`${symbol} is not listed`);
  return marketObject(env, market);
}

/** The object hosting a group's markets, by the group's number. */
export function hostOfGroup(group: number) {
  return marketObject(env, { ordinal: group * GROUP_SIZE });
}
