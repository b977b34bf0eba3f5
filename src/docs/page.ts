import { PROBLEM_CODES, problemType } from "../core/problem";
import { CLIENT_VERSIONS } from "../pages/generated/client-bundle";

/**
 * The `/docs` page: renders `/openapi.json` in the browser with a small script the service
 * serves itself (`src/pages/client/docs.ts`), so the reference works with no CDN and under a
 * CSP that allows no inline script.
 */
const errorRows = Object.entries(PROBLEM_CODES)
  .map(([code, { status, title }]) => {
    const anchor = problemType(code as keyof typeof PROBLEM_CODES).split("#")[1];
    return `<tr id="${anchor}"><td><code>${code}</code></td><td>${status}</td><td>${title}</td></tr>`;
  })
  .join("");

export function docsPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference — Market Data Service</title><link rel="icon" href="data:,">
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:960px;padding:1rem;color:#1b1f24}
code,pre{font:13px ui-monospace,monospace}pre{background:#f4f6f8;padding:.6rem;overflow:auto;border-radius:6px}
.endpoint{border-top:1px solid #dde;padding:.4rem 0}.method{display:inline-block;min-width:4.2em;padding:0 .4em;border-radius:4px;color:#fff;font-size:13px;text-align:center}
.get{background:#1f7a4d}.post{background:#1f5fa8}.delete{background:#b3261e}.put,.patch{background:#8a5a00}
table{border-collapse:collapse;margin:.3rem 0}td,th{border:1px solid #dde;padding:.2rem .5rem;text-align:left;vertical-align:top}.desc{color:#444}
nav{position:sticky;top:0;background:#fff;padding:.4rem 0;border-bottom:1px solid #dde}
</style></head>
<body><h1 id="title">Market Data Service</h1>
<p>Generated from <a href="/openapi.json">/openapi.json</a>. Decimals are strings, timestamps Unix milliseconds, errors <code>application/problem+json</code>.</p>
<nav id="nav"></nav>
<main id="endpoints">Loading…</main>
<h2 id="errors">Errors</h2>
<p>Every error is an RFC 9457 problem: <code>{type, title, status, code, detail, requestId}</code>; validation failures add <code>errors: [{path, message}]</code>.</p>
<table><tr><th>code</th><th>status</th><th>title</th></tr>${errorRows}</table>
<script src="/assets/docs.js?v=${CLIENT_VERSIONS.docs}" defer></script>
</body></html>`;
}
