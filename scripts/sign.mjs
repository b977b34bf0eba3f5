// Signs a request as docs/signing.md says and prints the headers, a curl command (--curl),
// or sends it (--send).
//
//   MDS_API_KEY=mk_… MDS_API_SECRET=… npm run sign -- GET '/v1/ticker/24hr?symbol=BTCUSDT'
//   eval "$(npm run -s sign -- GET /v1/markets --curl)"
//   npm run sign -- POST /v1/ingest --body '{"symbol":"BTCUSDT","trades":[]}' --send
//
// Options: --key, --secret (else MDS_API_KEY, MDS_API_SECRET), --base (else MDS_BASE_URL or
// http://127.0.0.1:8787), --body JSON (or --body @file), --timestamp, --recv-window, --curl, --send.
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const flags = {};
const positional = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--send" || args[i] === "--curl") flags[args[i].slice(2)] = true;
  else if (args[i].startsWith("--")) flags[args[i].slice(2)] = args[++i];
  else positional.push(args[i]);
}
const [methodArg = "GET", target] = positional;
const method = methodArg.toUpperCase();
const key = flags.key ?? process.env.MDS_API_KEY;
const secret = flags.secret ?? process.env.MDS_API_SECRET;
if (!target?.startsWith("/") || !key || !secret) {
  console.error(
    "usage: npm run sign -- METHOD /path?query [--body JSON|@file] [--curl | --send]   (needs MDS_API_KEY and MDS_API_SECRET, or --key and --secret)",
  );
  process.exit(2);
}
// The body is signed byte for byte as it will be sent.
const body = flags.body?.startsWith("@") ? readFileSync(flags.body.slice(1), "utf8") : (flags.body ?? "");
const timestamp = flags.timestamp ?? String(Date.now());
const payload = `${timestamp}\n${method}\n${target}\n${body}`;
const signature = createHmac("sha256", secret).update(payload, "utf8").digest("hex");
const headers = { "X-API-KEY": key, "X-TIMESTAMP": timestamp, "X-SIGNATURE": signature };
if (flags["recv-window"]) headers["X-RECV-WINDOW"] = flags["recv-window"];
if (body) headers["Content-Type"] = "application/json";
const base = flags.base ?? process.env.MDS_BASE_URL ?? "http://127.0.0.1:8787";

if (flags.curl) {
  const quote = (text) => `'${text.replaceAll("'", `'\\''`)}'`;
  const parts = ["curl", "-sS", ...(method === "GET" ? [] : ["-X", method])];
  for (const [name, value] of Object.entries(headers)) parts.push("-H", quote(`${name}: ${value}`));
  if (body) parts.push("--data-binary", quote(body));
  parts.push(quote(base + target));
  console.log(parts.join(" "));
  process.exit(0);
}
if (!flags.send) {
  for (const [name, value] of Object.entries(headers)) console.log(`${name}: ${value}`);
  process.exit(0);
}
const response = await fetch(base + target, { method, headers, body: body || undefined });
const limits = ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"]
  .filter((name) => response.headers.has(name))
  .map((name) => `${name}: ${response.headers.get(name)}`);
console.error([`HTTP ${response.status}`, ...limits].join("  "));
console.log(await response.text());
process.exit(response.ok ? 0 : 1);
