import path from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, inject, it } from "vitest";
import { adminToken } from "../../scripts/publish-key.mjs";
import { importHistory } from "../../scripts/venue-history.mjs";
import { until } from "../support/poll";
import { SCREENSHOTS, useChromium } from "./browser";

const baseUrl = inject("baseUrl");
const chromium = useChromium({ viewport: { width: 1200, height: 900 } });

const SYMBOLS = ["BTCUSDT", "ETHUSDT", "SOLUSDT", "XRPUSDT", "ETHBTC", "SOLBTC", "BTCUSDC"];

async function bookState(page: Page) {
  return page.evaluate(() => {
    const el = document.getElementById("book")!;
    return { sequence: Number(el.dataset.sequence), bestBid: Number(el.dataset.bestBid), bestAsk: Number(el.dataset.bestAsk) };
  });
}

/** The page's book equals the REST book at the same sequence (sampled until one matches). */
async function expectBookMatchesRest(page: Page, symbol: string) {
  let attempt = 0;
  await until(
    async () => {
      // Each read from its own client IP, so the page's own budget is not spent by the test.
      attempt += 1;
      const rest = (await (
        await fetch(`${baseUrl}/api/orderbook/${symbol}?depth=1000`, { headers: { "CF-Connecting-IP": `198.19.7.${attempt % 250}` } })
      ).json()) as {
        sequence: number;
        bids: [string, string][];
        asks: [string, string][];
      };
      const mine = await page.evaluate(() => {
        const { book } = (window as any).__mds;
        return { ready: book.synced, sequence: book.sequence, bids: book.ladder("bids"), asks: book.ladder("asks") };
      });
      if (!mine.ready || mine.sequence !== rest.sequence) return false;
      expect(mine.bids).toEqual(rest.bids);
      expect(mine.asks).toEqual(rest.asks);
      return true;
    },
    { timeoutMs: 8000, intervalMs: 150, what: "the page and REST at the same sequence" },
  );
}

describe("pages in a real browser", () => {
  it("the landing page lists every market and its prices change within 5 s", async () => {
    const page = await chromium().newPage();
    await page.goto(`${baseUrl}/`);
    const listed = await page.locator("tr[data-symbol]").evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.symbol));
    // Every market the service lists now: the seven defaults, and those another e2e file of this
    // shared service listed before this one ran (the files' order is vitest's, not ours). The
    // busiest by 24 h quote volume come first (the order is tested at 2,000 markets in venue.test.ts).
    const markets = ((await (await fetch(`${baseUrl}/api/markets`)).json()) as { markets: { symbol: string }[] }).markets.map((m) => m.symbol);
    expect(markets, "the defaults among the listed").toEqual(expect.arrayContaining(SYMBOLS));
    expect([...listed].sort(), "the landing page's rows").toEqual([...markets].sort());
    const prices = () => page.locator('[data-field="lastPrice"]').allTextContents();
    const before = await prices();
    await expect.poll(prices, { timeout: 5000, interval: 250 }).not.toEqual(before);
    await expect.poll(() => page.locator("#connection").textContent()).toBe("live");
    // A short viewport: the full-page shot is then as tall as the content, not the window.
    await page.setViewportSize({ width: 1200, height: 300 });
    await page.screenshot({ path: path.join(SCREENSHOTS, "landing.png"), fullPage: true, animations: "disabled" });
    await page.close();
  });

  it("the market page draws depth and ladder (best bid below best ask, equal to REST), and the tape grows", async () => {
    const page = await chromium().newPage();
    await page.goto(`${baseUrl}/markets/BTCUSDT`);
    await expect.poll(() => page.locator("#connection").textContent()).toBe("live");
    await expect.poll(async () => Number(await page.locator("#depth").getAttribute("data-drawn")), { timeout: 10_000 }).toBeGreaterThan(10);
    const state = await bookState(page);
    expect(state.bestBid).toBeLessThan(state.bestAsk);
    expect(await page.locator("#ladder-bids tr").count()).toBe(15);
    await expectBookMatchesRest(page, "BTCUSDT");
    const streamed = Number(await page.locator("#trades").getAttribute("data-streamed"));
    const newest = await page.locator("#trades tr").first().getAttribute("data-id");
    await expect.poll(async () => Number(await page.locator("#trades").getAttribute("data-streamed")), { timeout: 10_000 }).toBeGreaterThan(streamed);
    await expect.poll(() => page.locator("#trades tr").first().getAttribute("data-id")).not.toBe(newest);
    await expect.poll(async () => Number(await page.locator("#candles").getAttribute("data-drawn")), { timeout: 10_000 }).toBeGreaterThan(0);
    // The tape keeps growing row by row (the README's screenshot shows a full one).
    await expect.poll(() => page.locator("#trades tr").count(), { timeout: 15_000 }).toBeGreaterThanOrEqual(20);
    await page.screenshot({ path: path.join(SCREENSHOTS, "market.png"), fullPage: true, animations: "disabled" });
    await page.close();
  });

  it("the candle chart shows imported history: 30 days of minutes by day and by week, through the interval picker", async () => {
    // `npm run venue -- --history` does this: minutes that end where the market's live ones begin.
    const [imported] = await importHistory({ url: baseUrl, token: adminToken(), days: 30, symbols: ["BTCUSDC"] });
    expect(imported!.imported, "30 days of minutes").toBe(30 * 1440);
    const page = await chromium().newPage();
    await page.goto(`${baseUrl}/markets/BTCUSDC`);
    const chart = page.locator("#candles");
    await expect.poll(async () => Number(await chart.getAttribute("data-drawn")), { timeout: 10_000 }).toBeGreaterThan(0);
    for (const [interval, least] of [
      ["1d", 30],
      ["1w", 5],
    ] as const) {
      await page.locator("#interval").selectOption(interval);
      await expect.poll(() => chart.getAttribute("data-interval")).toBe(interval);
      await expect.poll(async () => Number(await chart.getAttribute("data-drawn")), { timeout: 10_000 }).toBeGreaterThanOrEqual(least);
      const first = Number(await chart.getAttribute("data-first"));
      expect(first, `${interval}: the first candle holds the first imported minute`).toBeLessThanOrEqual(imported!.from);
      expect(imported!.from - first, interval).toBeLessThan(interval === "1d" ? 86_400_000 : 7 * 86_400_000);
    }
    expect(await chart.locator("canvas").count(), "drawn by the charting library").toBeGreaterThan(0);
    await page.close();
  });

  it("killing the WebSocket makes the page reconnect and resume", async () => {
    const page = await chromium().newPage();
    await page.goto(`${baseUrl}/markets/ETHUSDT`);
    await expect.poll(() => page.locator("#connection").textContent()).toBe("live");
    await expect.poll(async () => (await bookState(page)).sequence, { timeout: 10_000 }).toBeGreaterThan(0);
    // The page exposes its socket to tests (window.__mds); closing it is what a dropped
    // connection looks like to the page: its close handler runs and the back-off starts.
    await page.evaluate(() => (window as any).__mds.stream.socket.close());
    await expect.poll(() => page.locator("#connection").textContent(), { interval: 20 }).toMatch(/reconnecting|resyncing/);
    await expect.poll(() => page.locator("#connection").textContent(), { timeout: 10_000 }).toBe("live");
    const resumed = (await bookState(page)).sequence;
    await expect.poll(async () => (await bookState(page)).sequence, { timeout: 10_000 }).toBeGreaterThan(resumed);
    await expectBookMatchesRest(page, "ETHUSDT");
    await page.close();
  });

  it("the page keeps a correct book across a forced sequence gap (it resyncs)", async () => {
    const page = await chromium().newPage();
    await page.goto(`${baseUrl}/markets/SOLUSDT`);
    await expect.poll(async () => (await bookState(page)).sequence, { timeout: 10_000 }).toBeGreaterThan(0);
    await page.evaluate(() => (window as any).__mds.dropNextDelta());
    await expect.poll(() => page.evaluate(() => (window as any).__mds.resyncs), { timeout: 10_000 }).toBeGreaterThan(0);
    await expect.poll(() => page.locator("#connection").textContent(), { timeout: 10_000 }).toBe("live");
    await expectBookMatchesRest(page, "SOLUSDT");
    // One lost delta costs one resubscription: deltas in flight meanwhile do not trigger more.
    expect(await page.evaluate(() => (window as any).__mds.resyncs)).toBe(1);
    await page.close();
  });

  it("a delta altered in transit (its sequence still continuous) fails the checksum, and the page resyncs to the true book", async () => {
    const page = await chromium().newPage();
    await page.goto(`${baseUrl}/markets/ETHUSDT`);
    await expect.poll(async () => (await bookState(page)).sequence, { timeout: 10_000 }).toBeGreaterThan(0);
    await page.evaluate(() => (window as any).__mds.corruptNextDelta());
    await expect.poll(() => page.evaluate(() => (window as any).__mds.resyncs), { timeout: 10_000 }).toBe(1);
    await expect.poll(() => page.locator("#connection").textContent(), { timeout: 10_000 }).toBe("live");
    await expectBookMatchesRest(page, "ETHUSDT");
    await page.close();
  });

  it("an unknown market is a clear 404 page that opens no stream", async () => {
    const page = await chromium().newPage();
    const sockets: string[] = [];
    page.on("websocket", (ws) => sockets.push(ws.url()));
    const response = await page.goto(`${baseUrl}/markets/DOGEUSDT`);
    expect(response!.status()).toBe(404);
    expect(await page.locator("h2").textContent()).toContain("not a listed market");
    expect(await page.locator("a[href='/']").count()).toBeGreaterThan(0);
    expect(sockets).toEqual([]);
    await page.close();
  });

  it("on a phone-sized screen nothing is wider than the screen", async () => {
    const page = await chromium().newPage();
    await page.setViewportSize({ width: 390, height: 844 });
    for (const url of ["/", "/markets/BTCUSDT"]) {
      await page.goto(baseUrl + url);
      await expect.poll(() => page.locator("#connection").textContent()).toBe("live");
      if (url !== "/") await expect.poll(async () => Number(await page.locator("#depth").getAttribute("data-drawn")), { timeout: 10_000 }).toBeGreaterThan(0);
      const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, screen: window.innerWidth }));
      expect(widths.page, url).toBeLessThanOrEqual(widths.screen);
    }
    await page.close();
  });

  it("scripts and styles are static assets: content-hashed names, cached for good, served without running the Worker", async () => {
    const page = await chromium().newPage();
    const foreign: string[] = [];
    page.on("request", (request) => {
      if (!request.url().startsWith(baseUrl)) foreign.push(request.url());
    });
    await page.goto(`${baseUrl}/markets/BTCUSDT`);
    const src = await page.locator("script[src]").getAttribute("src");
    const href = await page.locator('link[rel="stylesheet"]').getAttribute("href");
    expect(src).toMatch(/^\/assets\/market\.[0-9a-f]{12}\.js$/);
    expect(href).toMatch(/^\/assets\/site\.[0-9a-f]{12}\.css$/);
    for (const asset of [src!, href!]) {
      const response = await fetch(baseUrl + asset);
      expect([response.status, response.headers.get("cache-control")], asset).toEqual([200, "public, max-age=31536000, immutable"]);
      // The Worker sets X-Request-Id on everything it answers: an asset never reaches it.
      expect(response.headers.get("x-request-id"), asset).toBeNull();
      await response.arrayBuffer();
    }
    expect((await fetch(`${baseUrl}/assets/market.js`)).status).toBe(404);
    expect((await fetch(`${baseUrl}/assets/constructor.js`)).status).toBe(404);
    expect(foreign).toEqual([]);
    await page.close();
  });
});
