import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, inject, it } from "vitest";
import { committedTypes, typesOf } from "../../scripts/client-types.mjs";

const baseUrl = inject("baseUrl");
const root = path.resolve(import.meta.dirname, "../..");

type Operation = { operationId?: string; responses?: Record<string, unknown>; security?: unknown[] };

describe("the OpenAPI document (/openapi.json)", () => {
  it("passes Redocly's recommended ruleset with no error and no warning (redocly.yaml says which rules are off, and why)", async () => {
    const document = await (await fetch(`${baseUrl}/openapi.json`)).text();
    const file = path.join(mkdtempSync(path.join(tmpdir(), "openapi-")), "openapi.json");
    writeFileSync(file, document);
    let output: string;
    try {
      output = execFileSync(path.join(root, "node_modules/.bin/redocly"), ["lint", file, "--config", path.join(root, "redocly.yaml"), "--format", "json"], {
        cwd: root,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? "");
    }
    const report = JSON.parse(output.slice(output.indexOf("{"))) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; message: string }[];
    };
    expect(
      report.problems.map((p) => `${p.ruleId}: ${p.message}`),
      "Redocly's findings",
    ).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it("every operation has a unique camelCase operationId, states its security, and declares a 2xx (or 101 for a WebSocket)", async () => {
    const spec = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, Operation>>; servers: unknown[] };
    const ids: string[] = [];
    for (const [route, item] of Object.entries(spec.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const where = `${method.toUpperCase()} ${route}`;
        expect(operation.operationId, where).toMatch(/^[a-z][a-zA-Z0-9]+$/);
        ids.push(operation.operationId!);
        expect(Array.isArray(operation.security), `${where}: security stated`).toBe(true);
        const statuses = Object.keys(operation.responses ?? {});
        expect(
          // A WebSocket endpoint (the streams, the publisher channel, the replay, the Binance WebSocket API) answers 101.
          statuses.some((s) => s.startsWith("2") || (s === "101" && /\/ws$|\/publish$|\/replay$|^\/binance\/(ws\/\{streams\}|stream|ws-api\/v3)$/.test(route))),
          `${where}: a success answer`,
        ).toBe(true);
      }
    }
    expect(new Set(ids).size, "operationIds are unique").toBe(ids.length);
    expect(spec.servers.length).toBeGreaterThan(0);
  });

  it("answers declare their headers: request id and RateLimit-* everywhere, Retry-After on 429, freshness on market reads", async () => {
    const spec = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>>;
    };
    const ticker = spec.paths["/api/ticker/{pair}"]!.get!.responses;
    expect(Object.keys(ticker["200"]!.headers ?? {})).toEqual(
      expect.arrayContaining(["X-Request-Id", "RateLimit-Remaining", "X-As-Of", "Age", "Cache-Control"]),
    );
    expect(Object.keys(ticker["429"]!.headers ?? {})).toEqual(expect.arrayContaining(["Retry-After", "RateLimit-Reset"]));
    const ingest = spec.paths["/v1/ingest"]!.post!.responses;
    expect(Object.keys(ingest["200"]!.headers ?? {})).not.toContain("X-As-Of");
    // What is declared is what is sent.
    const response = await fetch(`${baseUrl}/api/ticker/BTCUSDT`, { headers: { "CF-Connecting-IP": "198.18.90.1" } });
    for (const header of ["X-Request-Id", "RateLimit-Remaining", "X-As-Of", "Age", "Cache-Control"])
      expect(response.headers.get(header), header).not.toBeNull();
  });

  it("the client's generated types are what /openapi.json gives now (else: npm run client:types)", async () => {
    const document = await (await fetch(`${baseUrl}/openapi.json`)).json();
    expect(committedTypes() === (await typesOf(document)), "client/src/generated/openapi.ts is stale: run npm run client:types and commit it").toBe(true);
    // What a generator makes of the document: methods named by operationId, and the rate-limit headers on answers.
    const types = committedTypes()!;
    // getTicker's entry: from its name to the next operation's, whatever the order of the operations.
    const start = types.indexOf("    getTicker: {");
    const next = types.slice(start + 1).search(/\n {4}[A-Za-z]+: \{/);
    const getTicker = types.slice(start, next < 0 ? undefined : start + 1 + next);
    expect(getTicker, "openapi-typescript's getTicker").toMatch(/200: \{\s+headers: \{[^}]*"RateLimit-Remaining"/);
    expect(getTicker).toMatch(/429: \{\s+headers: \{[^}]*"Retry-After"/);
    for (const id of ["signedGetOrderBook", "listTrades", "ingestMarketData", "openPublicStream"]) expect(types, id).toContain(`    ${id}: {`);
  });
});
