// Signs a request as contract section 4 says and prints the headers, or sends it with --send.
//
//   MDS_API_KEY=mk_… MDS_API_SECRET=… npm run sign -- GET '/v1/ticker/24hr?symbol=BTCUSDT'
//   npm run sign -- POST /v1/ingest --body '{"symbol":"BTCUSDT","trades":[]}' --send
//
// Options: --key, --secret (else MDS_API_KEY, MDS_API_SECRET), --base (else MDS_BASE_URL or
// http://127.0.0.1:8787), --body, --timestamp, --recv-window, --send.
import { createHmac } from "node:crypto";

const args = process.argv.slice(2);
const flags = {};
const positional = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--send") flags.send = true;
  else if (args[i].startsWith("--")) flags[args[i].slice(2)] = args[++i];
  else positional.push(args[i]);
}
const [method = "GET", target] = positional;
const key = flags.key ?? process.env.MDS_API_KEY;
const secret = flags.secret ?? process.env.MDS_API_SECRET;
if (!target || !target.startsWith("/") || !key || !secret) {
  console.error("usage: npm run sign -- METHOD /path?query [--body JSON] [--send]   (needs MDS_API_KEY and MDS_API_SECRET, or --key and --secret)");
  process.exit(2);
}
const body = flags.body ?? "";
const timestamp = flags.timestamp ?? String(Date.now());
const payload = `${timestamp}\n${method.toUpperCase()}\n${target}\n${body}`;
const signature = createHmac("sha256", secret).update(payload, "utf8").digest("hex");
const headers = { "X-API-KEY": key, "X-TIMESTAMP": timestamp, "X-SIGNATURE": signature };
if (flags["recv-window"]) headers["X-RECV-WINDOW"] = flags["recv-window"];
if (body) headers["Content-Type"] = "application/json";

if (!flags.send) {
  for (const [name, value] of Object.entries(headers)) console.log(`${name}: ${value}`);
  process.exit(0);
}
const base = flags.base ?? process.env.MDS_BASE_URL ?? "http://127.0.0.1:8787";
const response = await fetch(base + target, { method: method.toUpperCase(), headers, body: body || undefined });
console.error(`HTTP ${response.status}`);
console.log(await response.text());
process.exit(response.ok ? 0 : 1);
