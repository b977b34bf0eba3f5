import { existsSync, mkdirSync, mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

/** The system's Chromium, where Debian and others put it. */
const SYSTEM_CHROMIUMS = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

/**
 * The browser the tests drive, found in this order: `CHROMIUM_PATH`, the system's Chromium, then
 * the one `@sparticuz/chromium` (a devDependency) carries, unpacked once into the temporary
 * directory with the libraries it was built against — so `npm install && npm test` needs nothing
 * but Node.
 */
export async function chromiumExecutable(): Promise<{ executablePath: string; env?: Record<string, string> }> {
  if (process.env.CHROMIUM_PATH) return { executablePath: process.env.CHROMIUM_PATH };
  const system = SYSTEM_CHROMIUMS.find((candidate) => existsSync(candidate));
  if (system) return { executablePath: system };
  const { default: Chromium, inflate } = await import("@sparticuz/chromium");
  // Its package exports no package.json: its bin folder is beside the entry's build folder.
  const bin = path.join(path.dirname(createRequire(import.meta.url).resolve("@sparticuz/chromium")), "..", "bin");
  const executablePath = await Chromium.executablePath(bin);
  const libraries = path.join(await inflate(path.join(bin, "al2023.tar.br")), "lib");
  const fonts = path.join(tmpdir(), "fonts");
  return {
    executablePath,
    env: {
      ...(process.env as Record<string, string>),
      LD_LIBRARY_PATH: [libraries, process.env.LD_LIBRARY_PATH].filter(Boolean).join(":"),
      FONTCONFIG_PATH: process.env.FONTCONFIG_PATH ?? fonts,
    },
  };
}

/** A Chromium ({@link chromiumExecutable}), headless, with a fresh profile directory and no background traffic. */
export async function launchChromium(options: { viewport?: { width: number; height: number } } = {}): Promise<BrowserContext> {
  const profile = mkdtempSync(path.join(tmpdir(), "mds-chromium-"));
  const { executablePath, env } = await chromiumExecutable();
  return chromium.launchPersistentContext(profile, {
    executablePath,
    ...(env && { env }),
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

/**
 * Where the browser tests save their screenshots: an ignored folder, so a test run leaves the
 * checkout as it found it; `npm run docs:screenshots` saves them over docs/screenshots/ instead.
 */
export const SCREENSHOTS = path.resolve(
  import.meta.dirname,
  process.env.MDS_SCREENSHOTS === "docs" ? "../../docs/screenshots" : "../../test-artifacts/screenshots",
);
mkdirSync(SCREENSHOTS, { recursive: true });

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
