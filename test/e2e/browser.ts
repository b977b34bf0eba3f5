import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

/** Debian's Chromium, headless, with a fresh profile directory and no background traffic. */
export async function launchChromium(options: { viewport?: { width: number; height: number } } = {}): Promise<BrowserContext> {
  const profile = mkdtempSync(path.join(tmpdir(), "mds-chromium-"));
  return chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    viewport: options.viewport ?? { width: 1100, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

export const SCREENSHOTS = path.resolve(import.meta.dirname, "../../docs/screenshots");

/** One Chromium for a test file: launched before its tests, closed after them. */
export function useChromium(options?: Parameters<typeof launchChromium>[0]): () => BrowserContext {
  let browser: BrowserContext | undefined;
  beforeAll(async () => {
    browser = await launchChromium(options);
  });
  afterAll(async () => {
    await browser?.close();
  });
  return () => browser!;
}
