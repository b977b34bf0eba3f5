// `npm run lint:links`: every relative link and `#anchor` in docs/ and the README resolves — to a
// file of the repository and, with an anchor, to a heading of it (GitHub's slugs: lower case,
// punctuation dropped, spaces as hyphens, a repeated heading numbered -1, -2, …). Links outside
// the repository (http:, https:, mailto:) are not followed: the docs point at none but the project's own.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const files = [
  "README.md",
  ...readdirSync(path.join(root, "docs"), { recursive: true })
    .filter((f) => String(f).endsWith(".md"))
    .map((f) => path.join("docs", String(f))),
];

/** The anchors GitHub gives a Markdown file's headings. */
function anchorsOf(file) {
  const seen = new Map();
  const anchors = new Set();
  let fenced = false;
  for (const line of readFileSync(path.join(root, file), "utf8").split("\n")) {
    if (/^(```|~~~)/.test(line)) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]
      .replace(/<[^>]+>/g, "")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

const cache = new Map();
const broken = [];
for (const file of files) {
  let fenced = false;
  for (const [i, line] of readFileSync(path.join(root, file), "utf8").split("\n").entries()) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    // Inline code is not a link.
    const text = line.replace(/`[^`]*`/g, "");
    for (const match of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1];
      if (/^(https?:|mailto:)/.test(target)) continue;
      const [pathPart, anchor] = target.split("#");
      const resolved = pathPart ? path.normalize(path.join(path.dirname(file), decodeURI(pathPart))) : file;
      const where = `${file}:${i + 1}: ${target}`;
      if (!existsSync(path.join(root, resolved))) {
        broken.push(`${where} — no such file`);
        continue;
      }
      if (anchor === undefined || !resolved.endsWith(".md") || statSync(path.join(root, resolved)).isDirectory()) continue;
      if (!cache.has(resolved)) cache.set(resolved, anchorsOf(resolved));
      if (!cache.get(resolved).has(anchor)) broken.push(`${where} — no heading #${anchor} in ${resolved}`);
    }
  }
}
if (broken.length > 0) {
  console.error(`${broken.length} links do not resolve:\n${broken.join("\n")}`);
  process.exit(1);
}
console.log(`✔ ${files.length} files: every relative link and anchor resolves`);
