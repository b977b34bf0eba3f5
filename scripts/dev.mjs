// `npm start`: the service on http://127.0.0.1:8787 (PORT=NNNN picks another) with the demo
// feed on. npm runs this on the Node of the `node` devDependency, which wrangler needs (>= 22.12).
import { spawn, spawnSync } from "node:child_process";
import { ensureDevSecrets } from "./dev-secrets.mjs";
import { ensureDevCertificate, startTlsDoor } from "./dev-tls.mjs";

const port = Number(process.env.PORT ?? 8787);
const httpsPort = Number(process.env.HTTPS_PORT ?? port + 1);
if (ensureDevSecrets()) console.log("Generated local secrets in .dev.vars (git-ignored).");

// The local D1 database gets every migration before the Worker starts (idempotent).
const extra = process.argv.slice(2);
const persistAt = extra.indexOf("--persist-to");
const persist = persistAt >= 0 ? ["--persist-to", extra[persistAt + 1]] : [];
const migrate = spawnSync("wrangler", ["d1", "migrations", "apply", "DB", "--local", ...persist], {
  stdio: ["ignore", "ignore", "pipe"],
  encoding: "utf8",
  env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
});
if (migrate.status !== 0) {
  process.stderr.write(migrate.stderr ?? "");
  console.error("Could not apply the D1 migrations locally (wrangler d1 migrations apply DB --local).");
  // A local state made before the schema became one file (2026-12-06) has its tables under the old
  // migrations' names: the one schema cannot be applied over them.
  if (/already exists/.test(migrate.stderr ?? ""))
    console.error(
      "This local state was made by an earlier layout: delete .wrangler/state (local data only; .dev.vars keeps your secrets) and run npm start again.",
    );
  process.exit(migrate.status ?? 1);
}
// The seven default markets (INSERT OR IGNORE: idempotent). A production deploy starts empty.
const seed = spawnSync("wrangler", ["d1", "execute", "DB", "--local", "--file", "scripts/default-venue.sql", ...persist], {
  stdio: ["ignore", "ignore", "inherit"],
  env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
});
if (seed.status !== 0) {
  console.error("Could not list the default markets locally (wrangler d1 execute DB --local --file scripts/default-venue.sql).");
  process.exit(seed.status ?? 1);
}

const args = [
  "dev",
  "--ip",
  "127.0.0.1",
  "--port",
  String(port),
  "--var",
  "DEMO_FEED:on",
  // A listing made through the operator API is readable everywhere within a second.
  "--var",
  "REGISTRY_REFRESH_MS:1000",
  "--show-interactive-dev-session=false",
  ...(process.env.WRANGLER_LOG ? ["--log-level", process.env.WRANGLER_LOG] : []),
  ...extra,
];
const wrangler = spawn("wrangler", args, { stdio: "inherit", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });

for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => wrangler.kill(signal));
wrangler.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

// HTTPS for local clients that speak nothing else (tardis-dev): a door in front of the service.
startTlsDoor(httpsPort, port, await ensureDevCertificate());

// The demo feed starts with the first request; make it so nobody has to.
const base = `http://127.0.0.1:${port}`;
for (let attempt = 0; attempt < 240; attempt++) {
  await new Promise((resolve) => setTimeout(resolve, 500));
  try {
    const response = await fetch(`${base}/api/time`);
    if (response.ok) {
      console.log(`Market Data Service: ${base}  (demo feed on; try ${base}/api/ticker/BTCUSDT or ${base}/docs)`);
      console.log(`HTTPS for tardis-dev: https://127.0.0.1:${httpsPort}/tardis/v1 (trust .dev-tls/cert.pem: NODE_EXTRA_CA_CERTS)`);
      break;
    }
  } catch {
    // not listening yet
  }
}
