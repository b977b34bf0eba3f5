import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";

describe("the deployable build", () => {
  it("bundles with wrangler and stays within its size budget", () => {
    const output = execFileSync("node", ["scripts/build-report.mjs", "--json"], { encoding: "utf8", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
    const report = JSON.parse(output.trim().split("\n").at(-1)!) as { rawBytes: number; gzipBytes: number; budgetGzipBytes: number; withinBudget: boolean };
    console.log(`bundle ${report.rawBytes} bytes raw, ${report.gzipBytes} gzipped (budget ${report.budgetGzipBytes})`);
    expect(report.rawBytes).toBeGreaterThan(10_000);
    expect(report.withinBudget).toBe(true);
  }, 120_000);
});
