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

  it("the pages read well at this size: /status names the reason and the silent markets first, the landing page lists the busiest first with dashes where nothing traded", async () => {
    const page = await chromium().newPage();
    await page.goto(`${service.baseUrl}/status`);
    const status = (await get("/api/status")) as { stale: number; trading: number; staleMarkets: string[] };
    expect(status.stale, "the generated markets have no feed (one took a batch above)").toBeGreaterThanOrEqual(MARKETS - 1);
    const headline = await page.locator("#system-status").textContent();
    expect(headline, "the headline names the reason").toMatch(/^Degraded: .*[\d,]+ of [\d,]+ trading markets' feeds are silent/);
    // Markets that went silent are named with since when (none yet here: the one that traded did so
    // a moment ago); the never-updated are counted, with the first 100 named in natural order.
    for (const text of await page.locator("#silent-markets tr[data-silent]").allTextContents()) {
      expect(text).toMatch(/silent since \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC \(/);
    }
    const never = status.staleMarkets.filter((m) => m.startsWith("V")).length;
    expect(await page.locator("h3", { hasText: "No update since they were listed" }).textContent()).toContain(never.toLocaleString("en"));
    const neverText = (await page.locator("#never-updated").textContent())!;
    expect(neverText.startsWith("V0USDT, V1USDT, V2USDT"), "natural order").toBe(true);
    expect(neverText).toMatch(/… and [\d,]+ more/);
    // The exceptions come before the announcements and the figures, and the page is not a wall of symbols.
    const order = await page.evaluate(() => [...document.querySelectorAll("section h2")].map((h) => h.textContent));
    expect(order[0]).toBe("Markets");
    expect((await page.content()).length, "the page's size").toBeLessThan(60_000);
    const normal = Number((await page.locator('[data-figure="trading-normally"]').textContent())!.replace(/,/g, ""));
    expect(normal, "the rest are counted").toBeGreaterThan(0);

    await until(async () => ((await get("/api/ticker/SOLBTC")) as { tradeCount24h: number }).tradeCount24h > 0, { what: "a SOLBTC trade" });
    await page.goto(`${service.baseUrl}/`);
    const rows = await page.locator("tr[data-symbol]").evaluateAll((all) =>
      all.map((r) => ({
        symbol: (r as HTMLElement).dataset.symbol!,
        value: Number((r as HTMLElement).dataset.value),
        price: r.querySelector('[data-field="lastPrice"]')!.textContent,
        change: r.querySelector('[data-field="change"]')!.textContent,
      })),
    );
    expect(rows).toHaveLength(MARKETS + 7);
    for (let i = 1; i < rows.length; i++) {
      expect(rows[i]!.value, `row ${i} (${rows[i]!.symbol}) by 24 h quote volume in USDT`).toBeLessThanOrEqual(rows[i - 1]!.value);
    }
    // Valued in USDT: a market quoted in BTC counts its quote volume at BTC's price (~97,000), not as
    // a number of BTC (its volume, read after the page, has only grown since).
    const solbtc = rows.find((r) => r.symbol === "SOLBTC")!;
    const solbtcVolume = Number(((await get("/api/ticker/SOLBTC")) as { quoteVolume24h: string }).quoteVolume24h);
    expect(solbtc.value / solbtcVolume, "SOLBTC's value over its volume in BTC").toBeGreaterThan(1_000);
    const untraded = rows.find((r) => r.symbol === "V1233USDT")!;
    expect([untraded.price, untraded.change], "a market that never traded").toEqual(["–", "–"]);
    const firstDash = rows.findIndex((r) => r.price === "–");
    expect(
      rows.slice(firstDash).every((r) => r.price === "–"),
      "every traded market before every untraded one",
    ).toBe(true);
    expect(rows[0]!.price, "the busiest first").not.toBe("–");
    await page.close();
  });
});
