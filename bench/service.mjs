// Runs the service and the baseline on workerd through Miniflare, as the benchmarks need them:
// the real bundle, the bindings of wrangler.toml, the D1 migrations applied, no logging proxy.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { build } from "esbuild";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

export const root = path.resolve(import.meta.dirname, "..");
export const work = path.join(root, ".bench");

export function bundleService(quiet = false) {
  execFileSync("wrangler", ["deploy", "--dry-run", "--outdir", path.join(work, "service")], {
    cwd: root,
    stdio: quiet ? "ignore" : ["ignore", "ignore", "inherit"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
  return path.join(work, "service", "index.js");
}

export async function bundleBaseline() {
  const outfile = path.join(work, "baseline", "index.js");
  await build({ entryPoints: [path.join(root, "bench/baseline-worker.ts")], bundle: true, format: "esm", platform: "neutral", outfile, logLevel: "silent" });
  return outfile;
}

export async function startService(scriptPath, vars = {}) {
  // Bindings come from wrangler.toml, so the bench follows the real configuration; the module
  // rules do not apply to an already bundled script.
  const { modulesRules, ...workerOptions } = unstable_getMiniflareWorkerOptions(path.join(root, "wrangler.toml")).workerOptions;
  // Miniflare 5 takes its own option shape; convert from the v4 shape wrangler produces.
  const mf = new Miniflare(convertV4MiniflareOptions({
    host: "127.0.0.1",
    port: 0,
    workers: [
      {
        ...workerOptions,
        name: "service",
        modules: true,
        scriptPath,
        bindings: {
          ...workerOptions.bindings,
          ...vars,
          SEALING_KEY: Buffer.alloc(32, 7).toString("base64"),
          ADMIN_TOKEN: "bench-admin-token",
        },
      },
    ],
  }));
  const url = await mf.ready;
  // Apply D1 migrations the way `wrangler d1 migrations apply` would.
  const db = await mf.getD1Database("DB");
  const dir = path.join(root, "migrations");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sql")).sort()) {
    await db.exec(readFileSync(path.join(dir, file), "utf8").replace(/--.*$/gm, "").replace(/\s*\n\s*/g, " "));
  }
  return { mf, url: url.origin };
}

export async function startBaseline(scriptPath) {
  const mf = new Miniflare(convertV4MiniflareOptions({ host: "127.0.0.1", port: 0, workers: [{ name: "baseline", modules: true, scriptPath, compatibilityDate: "2026-10-01" }] }));
  return { mf, url: (await mf.ready).origin };
}

