import { createHmac } from "node:crypto";
import path from "node:path";
import { describe, expect, inject, it } from "vitest";
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
    await page.screenshot({ path: path.join(SCREENSHOTS, "api-management.png"), fullPage: true });

    // Shown once: the next view of the page does not have it.
    await page.goto(`${baseUrl}/dashboard`);
    expect(await page.content()).not.toContain(secret);

    const ok = await signedTicker(keyId, secret);
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { symbol: string }).symbol).toBe("BTCUSDT");

    await page.locator(`tr[data-key-id="${keyId}"] a.revoke`).click();
    await page.locator("#confirm-revoke").click();
    await expect.poll(() => page.locator(`tr[data-key-id="${keyId}"] .status`).textContent()).toBe("revoked");

    const refused = await signedTicker(keyId, secret);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code: string }).code).toBe("INVALID_API_KEY");
    await page.close();
  });
});
