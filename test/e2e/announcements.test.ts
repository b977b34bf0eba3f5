import ccxt from "ccxt";
import { afterAll, describe, expect, inject, it } from "vitest";
import { ccxtConfig } from "../../examples/binance/ccxt-config.mjs";
import { adminToken } from "../../scripts/publish-key.mjs";
import { until } from "../support/poll";
import { useChromium } from "./browser";
import { type Connection, connect } from "./ws-client";

/**
 * An operator's maintenance announcement, as `npm start` runs the service (docs/operations.md#announcements):
 * it reaches a ccxt.pro client watching a book (Binance's `serverShutdown`) and a native client
 * (`status`), CCXT's fetchStatus reads it with its sapi URL pointed here, and `/status` shows it.
 */
const baseUrl = inject("baseUrl");
const chromium = useChromium();
const headers = { "CF-Connecting-IP": "198.18.150.1" };
const config = ccxtConfig(baseUrl); // docs/binance.md#ccxt
const exchange = new ccxt.pro.binance({ ...config, headers, options: { ...config.options, ws: { ...config.options.ws, options: { headers } } } });
const made: string[] = [];

async function operator(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${baseUrl}${path}`, {
    method,
    headers: { Authorization: `Bearer ${adminToken()}`, "Content-Type": "application/json", "CF-Connecting-IP": "198.18.150.2" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

afterAll(async () => {
  for (const id of made) await operator("DELETE", `/admin/announcements/${id}`);
  await exchange.close();
});

describe("announcements reach every kind of client (docs/operations.md#announcements)", () => {
  it("a maintenance: ccxt.pro's watchOrderBook connection gets serverShutdown, a native client the status, fetchStatus says maintenance, /status shows it", async () => {
    // CCXT's own message handler sees every frame of its connections: the test listens beside it.
    const frames: any[] = [];
    const handle = exchange.handleMessage.bind(exchange);
    exchange.handleMessage = (client: any, message: any) => {
      frames.push(message);
      return handle(client, message);
    };
    // As docs/binance.md#ccxt says: a ws:// URL needs CCXT's agent loaded first.
    await exchange.loadHttpProxyAgent();
    await exchange.watchOrderBook("BTC/USDT");
    const native = (await connect(baseUrl, "/api/ws?streams=status", "198.18.150.3")) as Connection;
    await native.next((m) => m.stream === "status");
    expect((await exchange.fetchStatus()).status, "before").toBe("ok");

    const answer = await operator("POST", "/admin/announcements", { kind: "maintenance", title: "Planned database maintenance", endsAt: Date.now() + 600_000 });
    expect(answer.status).toBe(201);
    const announcement = (await answer.json()) as { id: string };
    made.push(announcement.id);

    const status = await native.next((m) => m.stream === "status" && m.data.status === "maintenance", 5_000);
    expect(status.data.announcements).toEqual([expect.objectContaining({ id: announcement.id, kind: "maintenance", title: "Planned database maintenance" })]);
    await until(() => frames.find((f) => f?.e === "serverShutdown"), { timeoutMs: 5_000, what: "serverShutdown on CCXT's connection" });
    // REST reads answer from edge copies at most VENUE_READ_MAX_AGE_MS old: the next copy has it.
    await until(async () => (await exchange.fetchStatus()).status === "maintenance", { what: "fetchStatus: maintenance" });

    const page = await chromium().newPage();
    await page.goto(`${baseUrl}/status`);
    expect(await page.locator("#system-status").textContent(), "the headline names the maintenance").toBe(
      "Maintenance under way: Planned database maintenance",
    );
    expect(await page.locator(`tr[data-announcement="${announcement.id}"]`).textContent()).toContain("Planned database maintenance");
    expect(await page.locator("script").count(), "readable without JavaScript: the page has no script").toBe(0);
    expect(await page.locator('meta[http-equiv="refresh"]').getAttribute("content"), "it reloads itself").toBe("15");
    // The demo feed publishes, and two clients are connected: the figures are measured ones.
    expect(Number(await page.locator('[data-figure="connections"]').textContent()), "open connections").toBeGreaterThanOrEqual(2);
    expect(await page.locator('[data-figure="delivery"]').textContent(), "delivery p50 and p99").toMatch(/^p50 [\d.]+ ms · p99 [\d.]+ ms$/);
    await page.goto(`${baseUrl}/`);
    expect(await page.locator('nav a[href="/status"]').count(), "the home page links to it").toBe(1);
    await page.close();

    expect((await operator("DELETE", `/admin/announcements/${announcement.id}`)).status).toBe(204);
    made.pop();
    await until(() => native.messages.filter((m) => m.stream === "status").at(-1)?.data.status !== "maintenance", { what: "the status after the delete" });
    await until(async () => (await exchange.fetchStatus()).status === "ok", { what: "fetchStatus: ok again" });
    native.ws.close();
  }, 60_000);
});
