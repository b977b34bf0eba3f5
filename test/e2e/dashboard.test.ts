import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
import { newApiKey } from "./api-keys";
import { SCREENSHOTS, useChromium } from "./browser";

const baseUrl = inject("baseUrl");
const chromium = useChromium();

async function signedTicker(keyId: string, secret: string): Promise<Response> {
  const target = "/v1/ticker/24hr?symbol=BTCUSDT";
  const timestamp = String(Date.now());
  const signature = createHmac("sha256", secret).update(`${timestamp}\nGET\n${target}\n`).digest("hex");
  return fetch(baseUrl + target, { headers: { "X-API-KEY": keyId, "X-TIMESTAMP": timestamp, "X-SIGNATURE": signature } });
}

describe("API Management in a real browser", () => {
  it("sign up → create a key → the secret is shown once → a signed request works → revoke → it fails", async () => {
    const page = await chromium().newPage();
    await page.goto(`${baseUrl}/dashboard`);
    const email = `browser-${Date.now()}@example.com`;
    const signUp = page.locator('form[action="/dashboard/signup"]');
    await signUp.locator('input[name="email"]').fill(email);
    await signUp.locator('input[name="password"]').fill("a browser-made password");
    await signUp.locator('button[type="submit"]').click();
    await expect.poll(() => page.locator("#api-management h2").textContent()).toBe("API Management");

    await page.locator('input[name="label"]').fill("browser test key");
    await page.locator('input[name="permissions"][value="stream"]').check();
    await page.locator('form[action="/dashboard/keys"] button[type="submit"]').click();
    const secret = (await page.locator("#secret-value").textContent())!.trim();
    const keyId = (await page.locator("#keys tr[data-key-id]").first().getAttribute("data-key-id"))!;
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(keyId).toMatch(/^mk_[0-9a-f]{24}$/);
    await expect.poll(() => page.locator(".warning").textContent()).toContain("shown this once");
    // The copy button puts exactly the secret on the clipboard.
    await chromium().grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseUrl });
    await page.locator("#copy-secret").click();
    await expect.poll(() => page.locator("#copy-secret").textContent()).toBe("Copied");
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await page.screenshot({ path: path.join(SCREENSHOTS, "api-management.png"), fullPage: true });

    // Shown once: the next view of the page does not have it.
    await page.goto(`${baseUrl}/dashboard`);
    expect(await page.content()).not.toContain(secret);

    const ok = await signedTicker(keyId, secret);
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { symbol: string }).symbol).toBe("BTCUSDT");
    for (let i = 0; i < 2; i++) expect((await signedTicker(keyId, secret)).status).toBe(200);

    // The key's usage chart counts the three signed requests (docs/limits.md#your-keys-usage).
    await page.goto(`${baseUrl}/dashboard`);
    await expect.poll(() => page.locator("#usage-chart").getAttribute("data-requests")).toBe("3");
    expect(await page.locator("#usage-chart canvas").count(), "drawn by the charting library").toBeGreaterThan(0);
    expect(await page.locator("#usage-summary").textContent()).toContain("3 requests, 0 refused");
    await page.screenshot({ path: path.join(SCREENSHOTS, "key-usage.png"), fullPage: true });

    await page.locator(`tr[data-key-id="${keyId}"] a.revoke`).click();
    await page.locator("#confirm-revoke").click();
    await expect.poll(() => page.locator(`tr[data-key-id="${keyId}"] .status`).textContent()).toBe("revoked");

    const refused = await signedTicker(keyId, secret);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code: string }).code).toBe("INVALID_API_KEY");
    await page.close();
  });

  it("npm run sign prints the headers, a curl command, or sends the request", async () => {
    const key = await newApiKey(baseUrl, ["read"], "192.0.2.210");
    const sign = (...args: string[]) =>
      promisify(execFile)(process.execPath, [path.resolve(import.meta.dirname, "../../scripts/sign.mjs"), ...args], {
        env: { ...process.env, MDS_API_KEY: key.id, MDS_API_SECRET: key.secret, MDS_BASE_URL: baseUrl },
      });

    const printed = (await sign("GET", "/v1/ticker/24hr?symbol=BTCUSDT")).stdout;
    const headers = Object.fromEntries(
      printed
        .trim()
        .split("\n")
        .map((line) => line.split(": ") as [string, string]),
    );
    expect(Object.keys(headers)).toEqual(["X-API-KEY", "X-TIMESTAMP", "X-SIGNATURE"]);
    const viaHeaders = await fetch(`${baseUrl}/v1/ticker/24hr?symbol=BTCUSDT`, { headers });
    expect(viaHeaders.status).toBe(200);

    const sent = await sign("GET", "/v1/markets", "--send");
    expect(sent.stderr).toContain("HTTP 200");
    expect(sent.stderr).toContain("RateLimit-Limit: 30");
    expect(JSON.parse(sent.stdout)).toHaveProperty("markets");

    const curl = (await sign("GET", "/v1/orderbook?symbol=ETHUSDT&depth=5", "--curl")).stdout;
    const ran = await promisify(execFile)("bash", ["-c", curl]);
    expect(JSON.parse(ran.stdout)).toMatchObject({ symbol: "ETHUSDT" });
    expect(curl).toMatch(
      /^curl -sS -H 'X-API-KEY: mk_[0-9a-f]{24}' -H 'X-TIMESTAMP: \d+' -H 'X-SIGNATURE: [0-9a-f]{64}' '.*\/v1\/orderbook\?symbol=ETHUSDT&depth=5'\n$/,
    );
  });
});
