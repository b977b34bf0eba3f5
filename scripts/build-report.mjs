// `npm run build:report [-- --json]`: builds the deployable Worker bundle into dist/ exactly as
// `npm run build` does (page scripts, then `wrangler deploy --dry-run --outdir dist`), prints its
// size raw and gzipped, and fails when the gzipped size passes the budget.
//
// Cloudflare limits a Worker to 3 MiB after compression on the free plan (10 MiB paid). The
// budget keeps a wide margin under the free limit, so growth shows up in CI long before a deploy
// would be refused. The gzipped size is wrangler's own figure ("Total Upload: … / gzip: …", what
// the upload is measured by), checked against our own gzip of the same files.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { gzipSync } from "node:zlib";

export const BUDGET_GZIP_BYTES = 512 * 1024;
const CLOUDFLARE_FREE_LIMIT_BYTES = 3 * 1024 * 1024;

const root = path.resolve(import.meta.dirname, "..");
const outdir = path.join(root, "dist");
const asJson = process.argv.includes("--json");
const wranglerCli = path.join(path.dirname(createRequire(import.meta.url).resolve("wrangler/package.json")), "bin", "wrangler.js");

// Same steps as `npm run build` (its prebuild bundles the page scripts), on this Node.
execFileSync(process.execPath, [path.join(root, "scripts/build-client.mjs")], { cwd: root, stdio: ["ignore", asJson ? "ignore" : "inherit", "inherit"] });
const wranglerOutput = execFileSync(process.execPath, [wranglerCli, "deploy", "--dry-run", "--outdir", outdir], {
  cwd: root,
  encoding: "utf8",
  stdio: ["ignore", "pipe", "inherit"],
  env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", FORCE_COLOR: "0" },
});

// What gets uploaded: the modules in dist/ (source maps stay behind unless upload_source_maps is set).
const modules = readdirSync(outdir).filter((file) => /\.(m?js|cjs|wasm)$/.test(file));
if (modules.length === 0) throw new Error(`wrangler wrote no module to ${outdir}`);
let rawBytes = 0;
let ownGzipBytes = 0;
for (const file of modules) {
  const bytes = readFileSync(path.join(outdir, file));
  rawBytes += bytes.length;
  ownGzipBytes += gzipSync(bytes, { level: 9 }).length;
}
const reported = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(wranglerOutput);
const wranglerGzipBytes = reported ? Math.round(Number(reported[2]) * 1024) : undefined;
const gzipBytes = Math.max(ownGzipBytes, wranglerGzipBytes ?? 0);

const report = {
  modules,
  rawBytes,
  gzipBytes,
  wranglerGzipBytes: wranglerGzipBytes ?? null,
  budgetGzipBytes: BUDGET_GZIP_BYTES,
  cloudflareFreeLimitBytes: CLOUDFLARE_FREE_LIMIT_BYTES,
  withinBudget: gzipBytes <= BUDGET_GZIP_BYTES,
};
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
if (asJson) {
  console.log(JSON.stringify(report));
} else {
  console.log(`Worker bundle (dist/${modules.join(", dist/")}): ${kib(rawBytes)} raw, ${kib(gzipBytes)} gzipped`);
  console.log(
    `budget ${kib(BUDGET_GZIP_BYTES)} gzipped (${((100 * gzipBytes) / BUDGET_GZIP_BYTES).toFixed(0)}% used); Cloudflare's limit is 3 MiB compressed on the free plan, 10 MiB paid`,
  );
  if (!report.withinBudget)
    console.error(`over budget by ${kib(gzipBytes - BUDGET_GZIP_BYTES)}: find what grew (npx esbuild --analyze, or the source map in dist/)`);
}
process.exit(report.withinBudget ? 0 : 1);
