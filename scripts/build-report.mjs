// `npm run build:report`: builds the deployable Worker bundle (wrangler deploy --dry-run) and
// prints its size raw and gzipped; fails when gzipped passes the budget. Cloudflare's limit is
// 3 MiB compressed on the free plan (10 MiB paid); the budget keeps us far under it.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";

export const BUDGET_GZIP_BYTES = 512 * 1024;
const root = path.resolve(import.meta.dirname, "..");
const outdir = path.join(root, "dist");

execFileSync("node", [path.join(root, "scripts/build-client.mjs")], { stdio: "inherit" });
execFileSync("wrangler", ["deploy", "--dry-run", "--outdir", outdir], { cwd: root, stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
let raw = 0;
let gzip = 0;
for (const file of readdirSync(outdir)) {
  if (!/\.(m?js|wasm)$/.test(file)) continue;
  const bytes = readFileSync(path.join(outdir, file));
  raw += statSync(path.join(outdir, file)).size;
  gzip += gzipSync(bytes, { level: 9 }).length;
}
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const report = { rawBytes: raw, gzipBytes: gzip, budgetGzipBytes: BUDGET_GZIP_BYTES, withinBudget: gzip <= BUDGET_GZIP_BYTES };
console.log(process.argv.includes("--json") ? JSON.stringify(report) : `Worker bundle: ${kib(raw)} raw, ${kib(gzip)} gzipped (budget ${kib(BUDGET_GZIP_BYTES)} gzipped; Cloudflare's limit 3 MiB free / 10 MiB paid)`);
process.exit(report.withinBudget ? 0 : 1);
