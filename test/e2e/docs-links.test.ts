import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, inject, it } from "vitest";

const baseUrl = inject("baseUrl");
const root = path.resolve(import.meta.dirname, "../..");
const pages = [
  "README.md",
  ...readdirSync(path.join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchors(markdown: string): Set<string> {
  const headings = markdown.split("\n").filter((line) => /^#{1,6} /.test(line));
  return new Set(
    headings.map((line) =>
      line
        .replace(/^#+ /, "")
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, "")
        .replace(/ /g, "-"),
    ),
  );
}

function links(markdown: string): string[] {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, "");
  return [...withoutCode.matchAll(/\]\(([^)\s]+)\)|<(https?:\/\/[^>]+)>/g)].map((m) => m[1] ?? m[2]!);
}

describe("the documentation stands on its own", () => {
  it("every link in README.md and docs/ resolves inside the repository or to the running service", async () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const link of links(readFileSync(path.join(root, page), "utf8"))) {
        if (/^https?:/.test(link)) {
          const url = new URL(link);
          if (url.host !== "127.0.0.1:8787") {
            broken.push(`${page}: ${link} points outside the repository`);
            continue;
          }
          const response = await fetch(`${baseUrl}${url.pathname}${url.search}`, { headers: { "CF-Connecting-IP": "198.18.60.1" } });
          if (response.status >= 400) broken.push(`${page}: ${link} answers ${response.status}`);
          await response.arrayBuffer();
          continue;
        }
        const [file, anchor] = link.split("#") as [string, string | undefined];
        const target = file === "" ? path.join(root, page) : path.resolve(path.dirname(path.join(root, page)), file);
        if (!target.startsWith(root) || !existsSync(target)) {
          broken.push(`${page}: ${link} has no file`);
          continue;
        }
        if (anchor && target.endsWith(".md") && !anchors(readFileSync(target, "utf8")).has(anchor)) broken.push(`${page}: ${link} has no heading #${anchor}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("nothing in the repository's documents points at files outside it", () => {
    const outside = pages.filter((page) => /\.\.\/shared|CONTRACT\.md/.test(readFileSync(path.join(root, page), "utf8")));
    expect(outside).toEqual([]);
  });

  it("the README stays a short front door", () => {
    expect(readFileSync(path.join(root, "README.md")).length).toBeLessThanOrEqual(12 * 1024);
  });
});

describe("the deploy guide (docs/operations.md#deploy-to-cloudflare)", () => {
  const guide = (() => {
    const text = readFileSync(path.join(root, "docs/operations.md"), "utf8");
    return text.slice(text.indexOf("## Deploy to Cloudflare"), text.indexOf("\n## ", text.indexOf("## Deploy to Cloudflare") + 3));
  })();
  const config = readFileSync(path.join(root, "wrangler.toml"), "utf8");

  it("names every Durable Object class and Workflow wrangler.toml binds, and the classes' number", () => {
    const section = (kind: string) =>
      config
        .split("[[")
        .filter((block) => block.startsWith(`${kind}]]`))
        .flatMap((block) => /^class_name = "(\w+)"/m.exec(block)?.[1] ?? []);
    const classes = section("durable_objects.bindings");
    for (const name of section("workflows")) expect(guide, `the guide names the Workflow ${name}`).toContain(name);
    expect(classes.length, "classes in wrangler.toml").toBeGreaterThan(0);
    for (const name of classes) expect(guide, `the guide names ${name}`).toContain(name);
    const words = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];
    expect(guide, "the guide's count of classes").toContain(`The ${words[classes.length]} Durable Object classes`);
  });

  it("names every binding that takes an id or a name of the operator's, and the secrets the code reads", () => {
    for (const what of ["PRICES", "market-data", "market-data-history", "mds_requests", "SEALING_KEY", "ADMIN_TOKEN", "migrations apply"]) {
      expect(guide, what).toContain(what);
    }
  });

  it("tells the operator that publishing keys are the operator's, never the dashboard's", () => {
    expect(guide).not.toMatch(/`publish` permission in the dashboard/);
    expect(guide).toMatch(/publish-key/);
  });
});
