import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MarketDataClient, MarketDataError } from "../../client/src/index";
import { ingest } from "../../src/market/ingest";
import { newKey } from "../support/accounts";

/**
 * The client package inside a Worker (workerd), calling the service through the Worker's own
 * `fetch` as a service binding would: the same Web Crypto signing and pacing as in Node and
 * browsers, no Node API.
 */
const worker = (exports as unknown as { default: Fetcher }).default;
const fetchWorker = ((input: RequestInfo | URL, init?: RequestInit) => worker.fetch(new Request(input, init))) as typeof fetch;

describe("the client package runs in Workers", () => {
  it("public and signed calls through the Worker, with typed problems", async () => {
    await ingest(env, "*", { symbol: "ETHUSDT", trades: [{ id: "client-w1", price: "3500.25", quantity: "0.5", side: "buy", time: Date.now() - 100 }] });
    const headers = { "CF-Connecting-IP": "203.0.113.77" };
    const client = new MarketDataClient({ baseUrl: "http://service.test", fetch: fetchWorker, headers });
    expect((await client.getTicker({ pair: "eth-usdt" })).lastPrice).toBe("3500.25");
    await expect(client.getTicker({ pair: "DOGEUSDT" })).rejects.toMatchObject({ status: 404, code: "UNKNOWN_SYMBOL" });

    const key = await newKey({ permissions: ["read"] });
    const signed = new MarketDataClient({ baseUrl: "http://service.test", fetch: fetchWorker, headers, apiKey: key.id, secret: key.secret });
    expect(await signed.signedGetTicker({ symbol: "ETHUSDT" })).toMatchObject({ symbol: "ETHUSDT", lastPrice: "3500.25" });
    const refused = await new MarketDataClient({ baseUrl: "http://service.test", fetch: fetchWorker, headers, apiKey: key.id, secret: "not the secret" })
      .signedGetTicker({ symbol: "ETHUSDT" })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(MarketDataError);
    expect(refused).toMatchObject({ status: 401, code: "INVALID_SIGNATURE" });
  });
});
