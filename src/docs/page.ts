import { PROBLEM_CODES, problemType } from "../core/problem";

/**
 * The `/docs` page: renders `/openapi.json` in the browser with a small script served inline,
 * so the reference works with no CDN and no network beyond the service itself.
 */
const errorRows = Object.entries(PROBLEM_CODES)
  .map(([code, { status, title }]) => {
    const anchor = problemType(code as keyof typeof PROBLEM_CODES).split("#")[1];
    return `<tr id="${anchor}"><td><code>${code}</code></td><td>${status}</td><td>${title}</td></tr>`;
  })
  .join("");

const script = `
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const ref = (doc, schema) => { while (schema && schema.$ref) schema = doc.components.schemas[schema.$ref.split("/").pop()]; return schema || {}; };
const typeOf = (doc, s) => { s = ref(doc, s); if (s.type === "array") return typeOf(doc, s.items) + "[]"; return s.type || (s.anyOf ? s.anyOf.map((x) => typeOf(doc, x)).join(" | ") : "object"); };
function example(doc, s, depth = 0) {
  s = ref(doc, s);
  if (s.example !== undefined) return s.example;
  if (depth > 4) return null;
  if (s.type === "object" || s.properties) return Object.fromEntries(Object.entries(s.properties || {}).map(([k, v]) => [k, example(doc, v, depth + 1)]));
  if (s.type === "array") return s.prefixItems ? s.prefixItems.map((x) => example(doc, x, depth + 1)) : [example(doc, s.items, depth + 1)];
  if (s.anyOf) return example(doc, s.anyOf[0], depth + 1);
  if (s.enum) return s.enum[0];
  return { string: "string", integer: 0, number: 0, boolean: true }[s.type] ?? null;
}
async function render() {
  const root = document.getElementById("endpoints");
  const doc = await (await fetch("/openapi.json")).json();
  document.getElementById("title").textContent = doc.info.title + " " + doc.info.version;
  const groups = {};
  for (const [path, item] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(item)) {
    const tag = (op.tags && op.tags[0]) || "Other";
    (groups[tag] ||= []).push({ path, method, op });
  }
  const nav = [];
  let html = "";
  for (const [tag, ops] of Object.entries(groups)) {
    const id = tag.toLowerCase().replace(/[^a-z0-9]+/g, "-");
    nav.push('<a href="#' + id + '">' + esc(tag) + "</a>");
    html += '<h2 id="' + id + '">' + esc(tag) + "</h2>";
    for (const { path, method, op } of ops) {
      const params = (op.parameters || []).map((p) => "<tr><td><code>" + esc(p.name) + "</code></td><td>" + esc(p.in) + "</td><td>" + esc(typeOf(doc, p.schema)) + (p.required ? " (required)" : "") + "</td><td>" + esc(p.description || (p.schema && p.schema.description) || "") + "</td></tr>").join("");
      const body = op.requestBody && op.requestBody.content["application/json"];
      const responses = Object.entries(op.responses || {}).map(([status, r]) => {
        const content = r.content && (r.content["application/json"] || r.content["application/problem+json"]);
        const sample = content && status.startsWith("2") ? "<pre>" + esc(JSON.stringify(example(doc, content.schema), null, 2)) + "</pre>" : "";
        return "<li><b>" + esc(status) + "</b> " + esc(r.description) + sample + "</li>";
      }).join("");
      html += '<section class="endpoint"><h3><span class="method ' + method + '">' + method.toUpperCase() + "</span> <code>" + esc(path) + "</code></h3>"
        + "<p>" + esc(op.summary || "") + "</p>" + (op.description ? "<p class=desc>" + esc(op.description) + "</p>" : "")
        + (params ? "<table><tr><th>parameter</th><th>in</th><th>type</th><th>meaning</th></tr>" + params + "</table>" : "")
        + (body ? "<p>Body:</p><pre>" + esc(JSON.stringify(example(doc, body.schema), null, 2)) + "</pre>" : "")
        + "<ul>" + responses + "</ul></section>";
    }
  }
  document.getElementById("nav").innerHTML = nav.join(" · ") + ' · <a href="#errors">Errors</a>';
  root.innerHTML = html;
  root.dataset.count = String(Object.values(groups).flat().length);
}
render().catch((e) => { document.getElementById("endpoints").textContent = "Could not load /openapi.json: " + e; });
`;

export function docsPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference — Market Data Service</title>
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
<script>${script}</script>
</body></html>`;
}
