import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

interface BuildReport {
  modules: string[];
  rawBytes: number;
  gzipBytes: number;
  wranglerGzipBytes: number | null;
  budgetGzipBytes: number;
  cloudflareFreeLimitBytes: number;
  withinBudget: boolean;
}

const root = path.resolve(import.meta.dirname, "../..");

/** Runs `npm run build:report -- --json` (on this Node) and returns its report, whatever its exit code. */
function buildReport(): { status: number; report: BuildReport } {
  try {
    const output = execFileSync(process.execPath, [path.join(root, "scripts/build-report.mjs"), "--json"], {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { status: 0, report: JSON.parse(output.trim().split("\n").at(-1)!) as BuildReport };
  } catch (error) {
    const failed = error as { status: number; stdout: string; stderr: string };
    const last = failed.stdout?.trim().split("\n").at(-1);
    if (!last?.startsWith("{")) throw new Error(`the build failed (exit ${failed.status}):\n${failed.stderr}`);
    return { status: failed.status, report: JSON.parse(last) as BuildReport };
  }
}

describe("the deployable build", () => {
  it("bundles with wrangler into dist/ and stays within its gzipped size budget, well under Cloudflare's limit", () => {
    const { status, report } = buildReport();
    console.log(
      `Worker bundle ${report.rawBytes} bytes raw, ${report.gzipBytes} gzipped (wrangler: ${report.wranglerGzipBytes}); budget ${report.budgetGzipBytes}`,
    );
    expect(report.modules).toContain("index.js");
    expect(existsSync(path.join(root, "dist", "index.js"))).toBe(true);
    expect(report.rawBytes).toBeGreaterThan(10_000);
    // wrangler's own figure was found and agrees with ours (same files, same compression family).
    expect(report.wranglerGzipBytes).not.toBeNull();
    expect(Math.abs(report.gzipBytes - report.wranglerGzipBytes!)).toBeLessThan(report.gzipBytes * 0.1);
    // The budget leaves room: at most a third of the free plan's limit.
    expect(report.budgetGzipBytes).toBeLessThanOrEqual(report.cloudflareFreeLimitBytes / 3);
    expect(report.withinBudget).toBe(true);
    expect(status).toBe(0);
  }, 180_000);
});
