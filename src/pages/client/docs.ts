/**
 * The `/docs` page's script: renders `/openapi.json` as a readable reference, grouped by tag,
 * with an example body per answer. The document is plain JSON here, so its parts are `any`.
 */
type Doc = { info: { title: string; version: string }; paths: Record<string, unknown>; components: { schemas: Record<string, any> } };
const esc = (s: unknown) =>
  String(s ?? "").replace(/[&<>"']/g, (c: string) => (({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }) as Record<string, string>)[c]!);
const ref = (doc: Doc, schema: any): any => {
  while (schema?.$ref) schema = doc.components.schemas[schema.$ref.split("/").pop()];
  return schema || {};
};
const typeOf = (doc: Doc, s: any): string => {
  s = ref(doc, s);
  if (s.type === "array") return `${typeOf(doc, s.items)}[]`;
  return s.type || (s.anyOf ? s.anyOf.map((x: any) => typeOf(doc, x)).join(" | ") : "object");
};
function example(doc: Doc, s: any, depth = 0): unknown {
  s = ref(doc, s);
  if (s.example !== undefined) return s.example;
  if (depth > 4) return null;
  if (s.type === "object" || s.properties) return Object.fromEntries(Object.entries(s.properties || {}).map(([k, v]) => [k, example(doc, v, depth + 1)]));
  if (s.type === "array") return s.prefixItems ? s.prefixItems.map((x: any) => example(doc, x, depth + 1)) : [example(doc, s.items, depth + 1)];
  if (s.anyOf) return example(doc, s.anyOf[0], depth + 1);
  if (s.enum) return s.enum[0];
  return ({ string: "string", integer: 0, number: 0, boolean: true } as Record<string, unknown>)[s.type] ?? null;
}
async function render() {
  const root = document.getElementById("endpoints")!;
  const doc = (await (await fetch("/openapi.json")).json()) as Doc;
  document.getElementById("title")!.textContent = `${doc.info.title} ${doc.info.version}`;
  const groups: Record<string, { path: string; method: string; op: any }[]> = {};
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item as Record<string, any>)) {
      const tag = op.tags?.[0] || "Other";
      (groups[tag] ||= []).push({ path, method, op });
    }
  const nav: string[] = [];
  let html = "";
  for (const [tag, ops] of Object.entries(groups)) {
    const id = tag.toLowerCase().replace(/[^a-z0-9]+/g, "-");
    nav.push(`<a href="#${id}">${esc(tag)}</a>`);
    html += `<h2 id="${id}">${esc(tag)}</h2>`;
    for (const { path, method, op } of ops) {
      const params = (op.parameters || [])
        .map(
          (p: any) =>
            `<tr><td><code>${esc(p.name)}</code></td><td>${esc(p.in)}</td><td>${esc(typeOf(doc, p.schema))}${p.required ? " (required)" : ""}</td><td>${esc(p.description || p.schema?.description || "")}</td></tr>`,
        )
        .join("");
      const body = op.requestBody?.content["application/json"];
      const responses = Object.entries(op.responses || {})
        .map(([status, r]: [string, any]) => {
          const content = r.content && (r.content["application/json"] || r.content["application/problem+json"]);
          const sample = content && status.startsWith("2") ? `<pre>${esc(JSON.stringify(example(doc, content.schema), null, 2))}</pre>` : "";
          return `<li><b>${esc(status)}</b> ${esc(r.description)}${sample}</li>`;
        })
        .join("");
      html +=
        '<section class="endpoint"><h3><span class="method ' +
        method +
        '">' +
        method.toUpperCase() +
        "</span> <code>" +
        esc(path) +
        "</code></h3>" +
        "<p>" +
        esc(op.summary || "") +
        "</p>" +
        (op.description ? `<p class=desc>${esc(op.description)}</p>` : "") +
        (params ? `<table><tr><th>parameter</th><th>in</th><th>type</th><th>meaning</th></tr>${params}</table>` : "") +
        (body ? `<p>Body:</p><pre>${esc(JSON.stringify(example(doc, body.schema), null, 2))}</pre>` : "") +
        "<ul>" +
        responses +
        "</ul></section>";
    }
  }
  document.getElementById("nav")!.innerHTML = `${nav.join(" · ")} · <a href="#errors">Errors</a>`;
  root.innerHTML = html;
  root.dataset.count = String(Object.values(groups).flat().length);
}
render().catch((e: unknown) => {
  document.getElementById("endpoints")!.textContent = `Could not load /openapi.json: ${e}`;
});
