#!/usr/bin/env node
// Issues a publishing key through the operator API (docs/operations.md#publish-keys) and prints
// it as JSON: `npm run publish-key -- --markets ADAUSDT,ETHUSDT [--label feed] [--url …]`, or
// `--markets '*'` for every market. Reads ADMIN_TOKEN from the environment or .dev.vars. The
// benches import `issuePublishKey` from here.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

/** The operator token: ADMIN_TOKEN from the environment, else the one `npm start` wrote to .dev.vars. */
export function adminToken() {
  const token =
    process.env.ADMIN_TOKEN ??
    readFileSync(".dev.vars", "utf8")
      .split("\n")
      .map((line) => /^ADMIN_TOKEN="?([^"]*)"?$/.exec(line)?.[1])
      .find(Boolean);
  if (!token) throw new Error("no ADMIN_TOKEN: set it, or run npm start once to write .dev.vars");
  return token;
}

/**
 * `POST /admin/publish-keys`: the key's id and its secret (shown this once).
 * @param {string} baseUrl
 * @param {string} token
 * @param {{ label?: string, markets?: string[] | "*", allowIps?: string[], expiresAt?: number | null }} [options]
 * @returns {Promise<{ id: string, secret: string, markets: string[] | "*" }>}
 */
export async function issuePublishKey(baseUrl, token, { label = "feed handler", markets = "*", allowIps = [], expiresAt = null } = {}) {
  const response = await fetch(`${baseUrl}/admin/publish-keys`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ label, markets, allowIps, expiresAt }),
  });
  if (response.status !== 201) throw new Error(`issue publish key: ${response.status} ${await response.text()}`);
  return response.json();
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { values } = parseArgs({
    options: {
      markets: { type: "string", default: "*" },
      label: { type: "string", default: "feed handler" },
      url: { type: "string", default: `http://127.0.0.1:${process.env.PORT ?? 8787}` },
    },
  });
  const markets = values.markets === "*" ? "*" : values.markets.split(",").map((s) => s.trim());
  console.log(JSON.stringify(await issuePublishKey(values.url, adminToken(), { label: values.label, markets }), null, 2));
}
