import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { MarketDataClient } from "../../client/src/index";
import { startService } from "../../scripts/service.mjs";
import { until } from "../support/poll";
import { newPublishKey } from "./api-keys";
import { useChromium } from "./browser";

const run = promisify(execFile);
const MARKETS = 2000;
const chromium = useChromium({ viewport: { width: 1200, height: 900 } });
let service: { baseUrl: string; stop: () => Promise<void> };
let ip = 0;
const get = async (path: string) => (await fetch(service.baseUrl + path, { headers: { "CF-Connecting-IP": `198.18.90.${++ip % 250}` } })).json();

// A service of its own: the other end-to-end files expect the seven default markets.
beforeAll(async () => {
  service = await startService();
}, 180_000);
afterAll(() => service?.stop());

describe("a venue of 2,000 markets, as an exchange operator lists it (docs/operations.md#listing-markets)", () => {
  it("npm run venue lists 2,000 markets in arrays of 500; the all-market reads list them all at once", async () => {
    const { stdout } = await run("node", ["scripts/venue.mjs", "--markets", String(MARKETS), "--url", service.baseUrl]);
    expect(stdout).toContain(`listed ${MARKETS} assets and ${MARKETS} markets`);
    const total = MARKETS + 7;
    const markets = await until(async () => {
      const body = (await get("/api/markets")) as { markets: unknown[] };
      return body.markets.length === total && body;
    });
    expect(markets.markets).toHaveLength(total);
    const tickers = await until(async () => {
      const body = (await get("/api/ticker")) as { symbol: string }[];
      return body.length === total && body;
    });
    expect(tickers.at(-1)).toMatchObject({ symbol: `V${MARKETS - 1}USDT`, tradeCount24h: 0 });
    expect((await get("/api/book-ticker")) as unknown[]).toHaveLength(total);
  });

  it("a new market takes a publisher's first batch and shows it on REST and on its streams", async () => {
    const symbol = "V1234USDT";
    const socket = new WebSocket(`${service.baseUrl.replace("http", "ws")}/api/ws?streams=trades.${symbol},book.${symbol}`, {
      headers: { "CF-Connecting-IP": "198.18.91.1" },
    });
    const messages: { stream?: string; data?: any }[] = [];
    socket.on("message", (m) => messages.push(JSON.parse(String(m))));
    await until(() => messages.find((m) => m.stream === `book.${symbol}`));
    // The operator issues the publisher a key for this market alone.
    const key = await newPublishKey(service.baseUrl, [symbol]);
    const publisher = new MarketDataClient({ baseUrl: service.baseUrl, apiKey: key.id, secret: key.secret });
    // V1234: the venue script's tick 0.0001 and step 0.1 (i % 3 == 1 → 0.001 and 0.01).
    const answer = await publisher.ingestMarketData({
      symbol,
      book: { type: "snapshot", sequence: 1, bids: [["1.230", "5.00"]], asks: [["1.240", "3.00"]] },
      trades: [{ id: "first", price: "1.235", quantity: "2.00", side: "buy", time: Date.now() }],
    });
    expect(answer).toMatchObject({ symbol, acceptedTrades: 1, sequence: 1 });
    expect(await get(`/api/orderbook/${symbol}`)).toMatchObject({ sequence: 1, bids: [["1.230", "5.00"]], asks: [["1.240", "3.00"]] });
    expect(await get(`/api/ticker/${symbol}`)).toMatchObject({ lastPrice: "1.235", tradeCount24h: 1 });
    await until(() => messages.find((m) => m.stream === `trades.${symbol}` && Array.isArray(m.data) && m.data.some((t: { id: string }) => t.id === "first")));
    await until(() => messages.find((m) => m.stream === `book.${symbol}` && m.data?.sequence === 1));
    socket.close();
  });

  it("the landing page shows every market live over one connection, and finds one by search", async () => {
    const page = await chromium().newPage();
    const sockets: string[] = [];
    page.on("websocket", (ws) => sockets.push(ws.url()));
    await page.goto(`${service.baseUrl}/`);
    expect(await page.locator("tr[data-symbol]").count()).toBe(MARKETS + 7);
    const price = () => page.locator('tr[data-symbol="BTCUSDT"] [data-field="lastPrice"]').textContent();
    const before = await price();
    await expect.poll(price, { timeout: 10_000, interval: 250 }).not.toBe(before);
    await page.fill("#market-search", "v1234");
    expect(await page.locator("tr[data-symbol]:visible").evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.symbol))).toEqual(["V1234USDT"]);
    expect(sockets).toHaveLength(1);
    await page.close();
  });
});
