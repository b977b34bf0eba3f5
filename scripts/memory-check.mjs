#!/usr/bin/env node
// Sends N distinct Binance URLs (each with an unknown parameter of its own, from N client
// addresses) to a running service and reports the runtime's resident memory before and after
// (docs/security.md#bounded-memory): `node scripts/memory-check.mjs [--urls 1000] [--url …]`.
// Run it against `npm start` with nothing else loading the machine.
import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    urls: { type: "string", default: "1000" },
    url: { type: "string", default: `http://127.0.0.1:${process.env.PORT ?? 8787}` },
    path: { type: "string", default: "/binance/api/v3/ticker/24hr" },
  },
});

/** Resident memory of every workerd process, in MiB (the runtime that holds the isolates). */
function runtimeRss() {
  let out = "";
  try {
    out = execFileSync("ps", ["-C", "workerd", "-o", "rss="], { encoding: "utf8" });
  } catch {
    return Number.NaN;
  }
  return out
    .split("\n")
    .filter(Boolean)
    .reduce((sum, kb) => sum + Number(kb) / 1024, 0);
}

const count = Number(values.urls);
const send = (i) =>
  fetch(`${values.url}${values.path}?x=${i}`, { headers: { "CF-Connecting-IP": `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` } }).then(async (r) => {
    await r.arrayBuffer();
    return r.status;
  });

await send(0); // warm: the route and its first translation
const before = runtimeRss();
const statuses = new Map();
for (let i = 1; i <= count; i += 20) {
  const batch = await Promise.all(Array.from({ length: Math.min(20, count - i + 1) }, (_, k) => send(i + k)));
  for (const s of batch) statuses.set(s, (statuses.get(s) ?? 0) + 1);
}
const after = runtimeRss();
console.log(
  JSON.stringify({
    urls: count,
    path: values.path,
    statuses: Object.fromEntries(statuses),
    runtimeRssMiB: { before: Math.round(before), after: Math.round(after), grown: Math.round(after - before) },
  }),
);
