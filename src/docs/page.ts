import { PROBLEM_CODES, problemType } from "../core/problem";
import { ASSETS } from "../pages/generated/assets";

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
<link rel="stylesheet" href="${ASSETS["docs.css"]}"></head>
<body><h1 id="title">Market Data Service</h1>
<p>Generated from <a href="/openapi.json">/openapi.json</a>. Decimals are strings, timestamps Unix milliseconds, errors <code>application/problem+json</code>.</p>
<nav id="nav"></nav>
<main id="endpoints">Loading…</main>
<h2 id="errors">Errors</h2>
<p>Every error is an RFC 9457 problem: <code>{type, title, status, code, detail, requestId}</code>; validation failures add <code>errors: [{path, message}]</code>.</p>
<table><tr><th>code</th><th>status</th><th>title</th></tr>${errorRows}</table>
<script src="${ASSETS["docs.js"]}" defer></script>
</body></html>`;
}
