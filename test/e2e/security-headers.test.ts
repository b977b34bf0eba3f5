import type { Page } from "playwright-core";
import { describe, expect, inject, it } from "vitest";
import { useChromium } from "./browser";

const baseUrl = inject("baseUrl");
const chromium = useChromium();

/** Records every CSP violation and console error a page reports. */
async function watch(page: Page): Promise<string[]> {
  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error" || /Content Security Policy/i.test(message.text())) problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(String(error)));
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (event) => console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`));
  });
  return problems;
}

describe("pages under their Content-Security-Policy", () => {
  it("the landing page, a market page, /docs and the dashboard work with no CSP violation or console error", async () => {
    const page = await chromium().newPage();
    const problems = await watch(page);
    await page.goto(`${baseUrl}/`);
    await expect.poll(() => page.locator("#connection").textContent()).toBe("live");
    await page.goto(`${baseUrl}/markets/BTCUSDT`);
    await expect.poll(async () => Number(await page.locator("#depth").getAttribute("data-drawn")), { timeout: 10_000 }).toBeGreaterThan(0);
    await page.goto(`${baseUrl}/docs`);
    await expect.poll(async () => Number(await page.locator("#endpoints").getAttribute("data-count"))).toBeGreaterThan(20);
    await page.goto(`${baseUrl}/dashboard`);
    await expect(page.locator('form[action="/dashboard/login"]').count()).resolves.toBe(1);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("the dashboard refuses to render inside a frame (no clickjacked create or revoke)", async () => {
    const page = await chromium().newPage();
    const refusals: string[] = [];
    page.on("console", (message) => refusals.push(message.text()));
    await page.setContent(`<iframe id="victim" src="${baseUrl}/dashboard" width="800" height="600"></iframe>`);
    const frame = page.frames().find((f) => f !== page.mainFrame());
    await expect
      .poll(async () => {
        // A blocked frame never holds the dashboard's document: either an error page or nothing readable.
        const url = frame?.url() ?? "";
        const forms = await frame
          ?.locator("form")
          .count()
          .catch(() => 0);
        return { url: url.startsWith(baseUrl), forms };
      })
      .toEqual({ url: false, forms: 0 });
    expect(
      refusals.some((text) => /frame-ancestors|Refused to (display|frame)/i.test(text)),
      refusals.join("\n"),
    ).toBe(true);
    await page.close();
  });

  it("every response carries the protections; secrets and sessions are never cached", async () => {
    for (const path of ["/", "/markets/BTCUSDT", "/docs", "/dashboard", "/api/time", "/openapi.json"]) {
      const response = await fetch(`${baseUrl}${path}`, { headers: { "CF-Connecting-IP": "198.18.40.1" } });
      const headers = Object.fromEntries(response.headers);
      expect(headers["content-security-policy"], path).toContain("frame-ancestors 'none'");
      expect(headers["content-security-policy"], path).toContain("script-src 'self'");
      expect(headers["x-frame-options"], path).toBe("DENY");
      expect(headers["x-content-type-options"], path).toBe("nosniff");
      expect(headers["referrer-policy"], path).toBe("same-origin");
      expect(headers["strict-transport-security"], path).toMatch(/max-age=\d+/);
      await response.arrayBuffer();
    }
    const dashboard = await fetch(`${baseUrl}/dashboard`);
    expect(dashboard.headers.get("cache-control")).toBe("no-store");
    const email = `headers-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const signUp = await fetch(`${baseUrl}/account/signup`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "CF-Connecting-IP": "198.18.40.2" },
      body: JSON.stringify({ email, password: "a password for headers" }),
    });
    expect(signUp.headers.get("cache-control")).toBe("no-store");
    const cookie = signUp.headers.get("Set-Cookie")!.split(";")[0]!;
    const created = await fetch(`${baseUrl}/account/api-keys`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Cookie: cookie, "CF-Connecting-IP": "198.18.40.2" },
      body: JSON.stringify({ label: "headers", permissions: ["read"] }),
    });
    expect([created.status, created.headers.get("cache-control")]).toEqual([201, "no-store"]);
  });
});
