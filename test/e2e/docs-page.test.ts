import { describe, expect, inject, it } from "vitest";
import { useChromium } from "./browser";

const baseUrl = inject("baseUrl");
const chromium = useChromium();

describe("/docs", () => {
  it("renders the endpoint list from /openapi.json with the network cut off from anything but the service", async () => {
    const page = await chromium().newPage();
    const foreign: string[] = [];
    await page.route("**/*", (route) => {
      if (route.request().url().startsWith(baseUrl)) return route.continue();
      foreign.push(route.request().url());
      return route.abort();
    });
    await page.goto(`${baseUrl}/docs`);
    await expect.poll(async () => Number(await page.locator("#endpoints").getAttribute("data-count")), { timeout: 10_000 }).toBeGreaterThan(20);
    const spec = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.values(spec.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    expect(Number(await page.locator("#endpoints").getAttribute("data-count"))).toBe(operations);
    for (const path of ["/api/ticker/{pair}", "/v1/ticker/24hr", "/api/gateway/callback", "/account/api-keys"]) {
      expect(await page.locator("section.endpoint code", { hasText: path }).count(), path).toBeGreaterThan(0);
    }
    expect(await page.locator("#rate-limited").count()).toBe(1);
    expect(foreign).toEqual([]);
    await page.close();
  });
});
