import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { callJson } from "../support/http";

type Parameter = { name: string; in: string; schema?: { type?: string; minimum?: number; maximum?: number } };
type Spec = { paths: Record<string, Record<string, { operationId?: string; parameters?: Parameter[] }>> };

/** The API surface (pages, /docs and static assets are not API operations). */
const API = /^\/(api|v1|account|admin)\//;

describe("the OpenAPI document covers the app (docs/api.md)", () => {
  it("every API route the app serves is in the document, with an operationId", async () => {
    const { body: spec } = await callJson<Spec>("/openapi.json");
    const served = new Set(
      createApp()
        .routes.filter((r) => r.method !== "ALL" && API.test(r.path))
        .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`),
    );
    const missing = [...served].filter((route) => {
      const [method, path] = route.split(" ") as [string, string];
      return !spec.paths[path]?.[method]?.operationId;
    });
    expect(missing, "routes served but not documented with an operationId").toEqual([]);
    expect(served.size).toBeGreaterThan(30);
  });

  it("every bound the document declares on a query parameter is enforced: one past it is 400 VALIDATION_FAILED", async () => {
    const { body: spec } = await callJson<Spec>("/openapi.json");
    const checked: string[] = [];
    for (const [path, item] of Object.entries(spec.paths)) {
      const get = item.get;
      // Public reads only (signed and operator routes share the same schemas: core/schemas.ts).
      if (!get || !path.startsWith("/api/") || path.endsWith("/ws")) continue;
      for (const parameter of get.parameters ?? []) {
        if (parameter.in !== "query" || parameter.schema?.type !== "integer") continue;
        const concrete = path.replace("{pair}", "BTCUSDT");
        const { minimum, maximum } = parameter.schema;
        for (const value of [minimum === undefined ? undefined : minimum - 1, maximum === undefined ? undefined : maximum + 1]) {
          if (value === undefined || value < 0) continue; // below zero is not a whole number at all: also refused, by the pattern
          const { status, body } = await callJson(`${concrete}?${parameter.name}=${value}`);
          expect([status, body.code], `${concrete}?${parameter.name}=${value}`).toEqual([400, "VALIDATION_FAILED"]);
          checked.push(`${concrete}?${parameter.name}=${value}`);
        }
        expect(maximum, `${path} ${parameter.name} declares its maximum`).toBeDefined();
      }
    }
    expect(checked.length, checked.join(", ")).toBeGreaterThanOrEqual(8);
  });

  it("each error status lists only the problem codes its route can answer, and a status none apply to is not listed", async () => {
    const { body: spec } = await callJson<{ paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> }>("/openapi.json");
    const codes = (path: string, method: string, status: string) => spec.paths[path]?.[method]?.responses[status]?.description;
    expect(codes("/api/ticker/{pair}", "get", "404")).toBe("Problem: UNKNOWN_SYMBOL");
    expect(codes("/api/ticker/{pair}", "get", "429")).toBe("Problem: RATE_LIMITED");
    expect(codes("/api/ws", "get", "401"), "the public WebSocket takes no credentials").toBeUndefined();
    expect(codes("/api/ws", "get", "429")).toBe("Problem: RATE_LIMITED, STREAM_LIMIT");
    expect(codes("/v1/ticker/24hr", "get", "401")).toBe(
      "Problem: MISSING_CREDENTIALS, MALFORMED_CREDENTIALS, INVALID_API_KEY, INVALID_SIGNATURE, TIMESTAMP_OUT_OF_WINDOW",
    );
    expect(codes("/v1/markets", "get", "404"), "no symbol, so no unknown symbol").toBeUndefined();
    expect(codes("/v1/ingest", "post", "409")).toBe("Problem: SEQUENCE_GAP, STALE_SEQUENCE, MARKET_NOT_TRADING");
    expect(codes("/admin/markets/{pair}/status", "put", "404")).toBe("Problem: UNKNOWN_SYMBOL");
    expect(codes("/account/api-keys/{id}", "delete", "404")).toBe("Problem: NOT_FOUND");
    expect(codes("/api/gateway/callback", "post", "401")).toBe("Problem: INVALID_SIGNATURE, TIMESTAMP_OUT_OF_WINDOW, UNKNOWN_GATEWAY");
    // And what is listed is what is answered.
    const { status, body } = await callJson("/api/ticker/DOGEUSDT");
    expect([status, (body as { code: string }).code]).toEqual([404, "UNKNOWN_SYMBOL"]);
  });
});
