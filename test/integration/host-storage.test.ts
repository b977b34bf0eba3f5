import { runInDurableObject, SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { MarketObject } from "../../src/market/market-object";
import { ensureRegistry } from "../../src/registry/copy";
import { ADMIN } from "../support/gateways";
import { send } from "../support/market-batches";
import { hostOf } from "../support/registry";

type Flushing = { meter: { holder: { flush(env: Env, now: number, force: boolean): Promise<void> | undefined } } };

/** Sets the host's storage limit so that what it holds is `share` of it. */
async function holdShare(share: number): Promise<number> {
  return runInDurableObject(await hostOf("XRPUSDT"), (instance: MarketObject) => {
    // The size as the host reads it (at most a second old).
    const bytes = instance.storage.size(Date.now());
    instance.storage.limitBytes = Math.floor(bytes / share);
    return bytes;
  });
}

describe("a market host's storage against its 10 GB (docs/capacity.md#a-hosts-storage)", () => {
  it("past 98 % the host refuses batches with a clear 503 STORAGE_FULL and applies none; past 80 % /status warns; the scrape reports each host's bytes (fails before: no bound, no warning, no gauge)", async () => {
    await ensureRegistry(env);
    expect(await send("XRPUSDT", 1), "a batch while there is room").toBe("applied");
    const bytes = await holdShare(0.99);
    expect(bytes, "the host's SQLite size").toBeGreaterThan(0);
    expect(await send("XRPUSDT", 2), "a batch past 98 %").toBe("STORAGE_FULL");
    const book = await SELF.fetch("http://localhost/api/orderbook/XRPUSDT?depth=1");
    expect(((await book.json()) as { sequence: number }).sequence, "nothing of it applied").toBe(1);
    await holdShare(0.85);
    expect(await send("XRPUSDT", 2), "the same batch past 80 %: taken").toBe("applied");
    // The alarm (a minute's end) warns; the host hands its counts on; /status names the group.
    await runInDurableObject(await hostOf("XRPUSDT"), async (instance: MarketObject) => {
      await instance.alarm();
      await (instance as unknown as Flushing).meter.holder.flush(env, Date.now(), true);
    });
    const page = await (await SELF.fetch("http://localhost/status")).text();
    expect(/data-figure="storage-warnings">([^<]*)</.exec(page)?.[1], "/status: hosts past 80 %").toBe("group 0 (past 80 %)");
    const scrape = await (await SELF.fetch("http://localhost/admin/metrics", { headers: ADMIN })).text();
    const gauge = /^mds_host_storage_bytes\{group="0"\} (\d+)$/m.exec(scrape)?.[1];
    expect(Number(gauge), "mds_host_storage_bytes of group 0").toBeGreaterThan(0);
  });
});
