// Runs the service and the baseline on workerd through Miniflare's API, as the benchmarks need
// them: the real bundle (`wrangler deploy --dry-run`), the bindings of wrangler.toml read at run
// time, the D1 migrations applied, request logging off and no wrangler dev proxy in front.
//
// `direct: true` serves a Worker on its own workerd socket (Miniflare's `unsafeDirectSockets`),
// so requests skip Miniflare's entry worker as well (`npm run bench -- --direct`; the fan-out
// bench and the profiler use it by default). Either way the service runs without Miniflare's
// local Static Assets emulation unless asked (see startService).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions, unstable_readConfig } from "wrangler";

export const root = path.resolve(import.meta.dirname, "..");
export const work = path.join(root, ".bench");
const require = createRequire(import.meta.url);
// wrangler's config helpers log ("Using secrets defined in .dev.vars") to stdout, which is the
// bench's report: keep them to warnings unless the caller asked for more.
process.env.WRANGLER_LOG ??= "warn";

function wrangler(args, quiet) {
  // wrangler's own CLI on this Node (npm scripts run Node 24 from the `node` devDependency).
  const cli = path.join(path.dirname(require.resolve("wrangler/package.json")), "bin", "wrangler.js");
  execFileSync(process.execPath, [cli, ...args], {
    cwd: root,
    stdio: quiet ? "ignore" : ["ignore", "ignore", "inherit"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
}

/** Bundles the Worker exactly as `npm run build` / `wrangler deploy` would; returns the script path. */
export function bundleService(quiet = false) {
  const outdir = path.join(work, "service");
  wrangler(["deploy", "--dry-run", "--outdir", outdir], quiet);
  return path.join(outdir, "index.js");
}

/**
 * Bundles a reference Worker of bench/ with the same tool and build settings as the service
 * (wrangler; the compatibility date and flags, keep_names and minify of wrangler.toml), so it
 * differs from the service only in what the Worker does.
 */
function bundleReference(name, entry, extra, quiet) {
  const config = unstable_readConfig({ config: path.join(root, "wrangler.toml") });
  const dir = path.join(work, name);
  mkdirSync(dir, { recursive: true });
  const referenceConfig = {
    name: `bench-${name}`,
    main: path.join(root, "bench", entry),
    compatibility_date: config.compatibility_date,
    compatibility_flags: config.compatibility_flags,
    send_metrics: false,
    ...extra,
    ...(config.keep_names === undefined ? {} : { keep_names: config.keep_names }),
    ...(config.minify === undefined ? {} : { minify: config.minify }),
  };
  const configPath = path.join(dir, "wrangler.json");
  writeFileSync(configPath, JSON.stringify(referenceConfig, null, 2));
  wrangler(["deploy", "--dry-run", "--config", configPath, "--outdir", path.join(dir, "out")], quiet);
  return { name, scriptPath: path.join(dir, "out", entry.replace(/\.ts$/, ".js")), configPath };
}

/** The baseline: bench/baseline-worker.ts, a bare Hono Worker answering a small JSON body. */
export function bundleBaseline(quiet = false) {
  return bundleReference("baseline", "baseline-worker.ts", {}, quiet);
}

/**
 * The floor: bench/floor-worker.ts, the baseline plus one or two calls per request to a trivial
 * SQLite-backed Durable Object (like the service's objects).
 */
export function bundleFloor(quiet = false) {
  const objects = {
    durable_objects: {
      bindings: [
        { name: "COUNTER", class_name: "Counter" },
        { name: "FANOUT", class_name: "Fanout" },
      ],
    },
    migrations: [{ tag: "v1", new_sqlite_classes: ["Counter", "Fanout"] }],
  };
  return bundleReference("floor", "floor-worker.ts", objects, quiet);
}

/** Starts a reference Worker bundled by bundleBaseline or bundleFloor, with its config's bindings. */
export async function startReference({ name, scriptPath, configPath }, { direct = false } = {}) {
  const { modulesRules, ...workerOptions } = unstable_getMiniflareWorkerOptions(configPath).workerOptions;
  const before = childProcesses();
  const mf = miniflareFor({ ...workerOptions, name, modules: true, modulesRoot: path.dirname(scriptPath), scriptPath }, direct);
  return { mf, ...(await urlsOf(mf, name, direct, before)) };
}

/** Lines the Worker logged (console.*) in this process's runtimes: what Workers Logs would bill as events. */
export const workerLogs = { lines: 0 };

function miniflareFor(worker, direct, inspectorPort, { persist, directPort = 0 } = {}) {
  return new Miniflare(
    convertV4MiniflareOptions({
      host: "127.0.0.1",
      port: 0,
      ...(persist ? { resourcePersistencePath: persist } : {}),
      logRequests: false,
      // The Worker's console output goes to stderr: stdout is the bench's report (and its JSON).
      handleStructuredLogs: ({ level, message }) => {
        workerLogs.lines += 1;
        process.stderr.write(`[workerd ${level}] ${message}\n`);
      },
      ...(inspectorPort ? { inspectorPort } : {}),
      workers: [{ ...worker, ...(direct ? { unsafeDirectSockets: [{ host: "127.0.0.1", port: directPort }] } : {}) }],
    }),
  );
}

/**
 * `url` to load (the direct socket's with `direct`), `entryUrl` through Miniflare's entry worker,
 * `cpuSeconds()`: the CPU time its workerd process has used so far, and `rssMiB()`: that
 * process's resident memory now (both undefined off Linux).
 * `before`: this process's children before the Miniflare was made; its workerd is the new one.
 */
async function urlsOf(mf, name, direct, before) {
  const entryUrl = (await mf.ready).origin;
  const pid = [...childProcesses()].find((p) => !before.has(p));
  return {
    url: direct ? (await mf.unsafeGetDirectURL(name)).origin : entryUrl,
    entryUrl,
    cpuSeconds: () => cpuSecondsOf(pid),
    rssMiB: () => rssMiBOf(pid),
  };
}

/** This process's children's pids, from /proc (empty where there is none). */
function childProcesses() {
  if (!existsSync("/proc")) return new Set();
  const children = new Set();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (statFields(entry)[1] === String(process.pid)) children.add(entry);
    } catch {
      // the process ended while the list was read
    }
  }
  return children;
}

/** The fields of /proc/<pid>/stat after the command name: [state, ppid, …]. */
function statFields(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** Linux reports CPU time in clock ticks of 1/100 s (USER_HZ, the same on every architecture it runs on here). */
const TICKS_PER_SECOND = 100;

export function cpuSecondsOf(pid) {
  if (pid === undefined) return undefined;
  const fields = statFields(pid);
  // utime and stime: fields 14 and 15 of stat(5), 11 and 12 after the command name.
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

export function rssMiBOf(pid) {
  if (pid === undefined) return undefined;
  const kib = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  return Math.round(kib / 1024);
}

/**
 * Starts the bundled service with wrangler.toml's bindings (plus `vars`) and local secrets.
 * Returns `{ mf, url, entryUrl, cpuSeconds, rssMiB }`. `persist`: a directory its storage outlives
 * the runtime in, so a second start with `restart: true` (no migrations, no default venue again)
 * and the same `directPort` is the same service restarted, as a deploy restarts every object.
 *
 * Without `assets: true` the Worker runs without Miniflare's emulation of Workers Static Assets.
 * On Cloudflare a request that matches no asset reaches the Worker directly (the asset check is
 * the platform's, outside the Worker's time); locally Miniflare emulates that check with three
 * more JavaScript workers (RPC proxy, router, asset worker) on the same workerd thread as the
 * service, and measured here they cost a request more than the service's own work does
 * (docs/benchmarks.md). The pages' assets are on no measured route.
 */
export async function startService(scriptPath, vars = {}, { direct = false, inspectorPort, assets = false, persist, directPort, restart = false } = {}) {
  // Bindings come from wrangler.toml, so the bench follows the real configuration; the module
  // rules do not apply to an already bundled script.
  const { modulesRules, assets: assetOptions, ...workerOptions } = unstable_getMiniflareWorkerOptions(path.join(root, "wrangler.toml")).workerOptions;
  if (assets) workerOptions.assets = assetOptions;
  const before = childProcesses();
  const mf = miniflareFor(
    {
      ...workerOptions,
      name: "service",
      modules: true,
      modulesRoot: path.dirname(scriptPath),
      scriptPath,
      bindings: {
        ...workerOptions.bindings,
        ...vars,
        SEALING_KEY: Buffer.alloc(32, 7).toString("base64"),
        ADMIN_TOKEN: "bench-admin-token",
      },
    },
    direct,
    inspectorPort,
    { persist, directPort },
  );
  const urls = await urlsOf(mf, "service", direct, before);
  if (restart) return { mf, ...urls };
  // Apply D1 migrations the way `wrangler d1 migrations apply` would.
  const db = await mf.getD1Database("DB");
  const dir = path.join(root, "migrations");
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith(".sql"))
    .sort()) {
    await db.exec(
      readFileSync(path.join(dir, file), "utf8")
        .replace(/--.*$/gm, "")
        .replace(/\s*\n\s*/g, " "),
    );
  }
  // The seven default markets, as `npm start` lists them.
  for (const statement of readFileSync(path.join(root, "scripts/default-venue.sql"), "utf8").split("\n")) {
    if (statement.startsWith("INSERT")) await db.exec(statement);
  }
  return { mf, ...urls };
}
