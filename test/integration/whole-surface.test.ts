import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BINANCE_ERROR_CODES } from "../../src/binance/errors";
import { PROBLEM_CODES } from "../../src/core/problem";
import { newAccount } from "../support/accounts";
import { ADMIN } from "../support/gateways";
import { call, callJson } from "../support/http";

interface Operation {
  method: string;
  path: string;
  statuses: string[];
}

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND"];
const BOUNDARY = "----fuzz";
const MEDIA_TYPES = [
  undefined,
  "application/json",
  "application/json; charset=utf-8",
  "text/plain",
  "application/x-www-form-urlencoded",
  `multipart/form-data; boundary=${BOUNDARY}`,
  "multipart/form-data",
  "application/xml",
  "application/octet-stream",
  "application/problem+json",
];

/** Bodies a careless or hostile client sends: none, text, JSON of the wrong shape, forms, broken multipart, XML, huge. */
const body = fc.oneof(
  fc.constant(undefined),
  fc.constant(""),
  fc.string({ maxLength: 200 }),
  fc.json({ maxDepth: 3 }),
  fc
    .dictionary(fc.constantFrom("email", "password", "name", "id", "status", "label", "permissions", "csrf", "symbol"), fc.jsonValue({ maxDepth: 2 }))
    .map((o) => JSON.stringify(o)),
  fc.constant("email=a%40b.c&password=secret+pass+1&csrf=x"),
  fc.constant(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="email"\r\n\r\na@b.c\r\n--${BOUNDARY}--\r\n`),
  fc.constant(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="email"\r\n\r\nno end`),
  fc.constant("--nope\r\ngarbage"),
  fc.constant("<xml><email>a@b.c</email></xml>"),
  fc.constant("x".repeat(100_000)),
);

/** Path and query values: random text, the right shape, far too long, encoded oddities. */
const pathValue = fc.oneof(
  fc.string({ minLength: 1, maxLength: 30 }).map(encodeURIComponent),
  fc.constantFrom("BTCUSDT", "btc-usdt", "mk_0123456789abcdef01234567", "gw_x", "stl_1", "x".repeat(300), "%E0%A4%A", "..", "%00"),
);

async function operations(): Promise<Operation[]> {
  const { body: doc } = await callJson("/openapi.json");
  return Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ method: method.toUpperCase(), path, statuses: Object.keys(op.responses) })),
  );
}

/** The pages and the dashboard's form posts: not JSON endpoints, so not in the OpenAPI document. */
const PAGE_ROUTES: Operation[] = [
  ...["/dashboard/signup", "/dashboard/login", "/dashboard/logout", "/dashboard/keys", "/dashboard/keys/{id}/revoke"].map((path) => ({
    method: "POST",
    path,
    statuses: [],
  })),
  ...["/", "/markets/{pair}", "/docs", "/dashboard", "/dashboard/keys/{id}/revoke", "/assets/{name}"].map((path) => ({ method: "GET", path, statuses: [] })),
];

describe("the whole surface: no client input gets a 5xx (docs/api.md#errors)", () => {
  it("every route, random methods, media types, bodies, path and query values: 2xx/3xx, or a 4xx problem with a documented code", async () => {
    const documented = await operations();
    expect(documented.length).toBeGreaterThan(20);
    const { cookie } = await newAccount();
    const codes = new Set(Object.keys(PROBLEM_CODES));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...documented, ...PAGE_ROUTES),
        fc.oneof(fc.constant(undefined), fc.constantFrom(...METHODS)),
        fc.constantFrom(...MEDIA_TYPES),
        body,
        fc.array(pathValue, { minLength: 3, maxLength: 3 }),
        fc.dictionary(
          fc.constantFrom(
            "symbol",
            "symbols",
            "depth",
            "limit",
            "interval",
            "startTime",
            "cursor",
            "status",
            "gatewayId",
            "streams",
            "sequence",
            "at",
            "from",
            "to",
            "speed",
          ),
          pathValue,
          {
            maxKeys: 3,
          },
        ),
        fc.record({ admin: fc.boolean(), session: fc.boolean(), origin: fc.boolean() }),
        async (operation, otherMethod, mediaType, payload, values, query, who) => {
          let i = 0;
          const path = operation.path.replace(/\{[^}]+\}/g, () => values[i++]!);
          const search = new URLSearchParams(query).toString();
          const method = otherMethod ?? operation.method;
          const headers: Record<string, string> = {};
          if (mediaType) headers["Content-Type"] = mediaType;
          if (who.admin) Object.assign(headers, ADMIN);
          if (who.session) headers.Cookie = cookie;
          if (who.origin) headers.Origin = "http://service.test";
          const withBody = method !== "GET" && method !== "HEAD" && payload !== undefined;
          const target = `${path}${search ? `?${search}` : ""}`;
          const response = await call(target, { method, headers, body: withBody ? payload : undefined });
          const label = `${method} ${target} [${mediaType ?? "no type"}] ${withBody ? String(payload).slice(0, 60) : "(no body)"}`;
          // A "." or ".." value is a dot segment: the URL is resolved before it is sent, so the
          // request reaches another route and only the general promises below hold for it.
          const sameRoute = new URL(path, "http://service.test").pathname === path;
          expect(response.status, label).toBeLessThan(500);
          const type = response.headers.get("Content-Type") ?? "";
          if (operation.path.startsWith("/binance/") && response.status >= 400 && method !== "HEAD") {
            // The Binance dialect answers in Binance's error shape (docs/binance.md#errors).
            expect(type, label).toMatch(/^application\/json/);
            const error = (await response.json()) as { code: number; msg: string };
            expect([BINANCE_ERROR_CODES.includes(error.code), typeof error.msg], `${label}: ${JSON.stringify(error)}`).toEqual([true, "string"]);
            if (sameRoute && method === operation.method && response.status !== 429 && response.status !== 404) {
              expect(operation.statuses, `${label}: ${response.status} ${error.code} is not in its OpenAPI responses`).toContain(String(response.status));
            }
          } else if (response.status >= 400 && method !== "HEAD" && !(operation.statuses.length === 0 && type.startsWith("text/html"))) {
            expect(type, label).toBe("application/problem+json");
            const problem = (await response.json()) as { code: string; status: number };
            expect(codes.has(problem.code), `${label}: code ${problem.code}`).toBe(true);
            expect(problem.status, label).toBe(response.status);
            // A documented operation lists every status its route answers.
            if (sameRoute && method === operation.method && operation.statuses.length > 0 && response.status !== 429) {
              expect(operation.statuses, `${label}: ${response.status} ${problem.code} is not in its OpenAPI responses`).toContain(String(response.status));
            }
          } else {
            await response.arrayBuffer();
          }
        },
      ),
      { numRuns: 1500 },
    );
  }, 120_000);

  it("stream upgrades, native and Binance, with any names, control characters and encodings: 101 or a 4xx, never a 5xx", async () => {
    // Text a hostile client can put in a path or query: control characters, broken and overlong
    // percent-encodings, separators, unicode, and real stream names to mix them into.
    const piece = fc.oneof(
      fc.constantFrom("btcusdt@trade", "btcusdt@depth@100ms", "book.BTCUSDT", "trades.BTCUSDT", "!ticker@arr", "heartbeat", "/", ",", "@", "."),
      fc.constantFrom("%00", "%0A", "%0D%0A", "%09", "%7F", "%E0%A4%A", "%FF", "%C0%AF", "%25", "%2F", "%", "%%", "%u0000", "%F0%9F%98%80"),
      fc.string({ maxLength: 12 }).map(encodeURIComponent),
      fc.string({ unit: "binary", maxLength: 6 }).map((text) => encodeURIComponent(text).replace(/%2[Ff]/g, "/")),
    );
    const names = fc.array(piece, { maxLength: 12 }).map((pieces) => pieces.join(""));
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom("/binance/ws/", "/binance/stream?streams=", "/api/ws?streams=", "/v1/ws?streams="), names, async (route, name) => {
        n += 1;
        const path = `${route}${name}`;
        let response: Response;
        try {
          response = await call(path, { ip: `10.77.${(n >> 8) & 255}.${n & 255}`, headers: { Upgrade: "websocket" } });
        } catch {
          return; // a URL the runtime itself will not parse never reaches the service
        }
        expect(response.status, `${path}: ${response.status}`).toBeLessThan(500);
        if (response.webSocket) {
          response.webSocket.accept();
          response.webSocket.close(1000);
        }
      }),
      { numRuns: 300 },
    );
    // 300 upgrades take about 3.5 s alone and past 5 s (the default) beside CI's other files: the
    // bound is the runs', not the clock's.
  }, 60_000);

  it("a JSON route sent anything but JSON answers 415 UNSUPPORTED_MEDIA_TYPE", async () => {
    for (const [path, type, payload] of [
      ["/account/signup", "text/plain", "hello"],
      ["/account/login", "application/x-www-form-urlencoded", "email=a&password=b"],
      ["/admin/gateways", `multipart/form-data; boundary=${BOUNDARY}`, `--${BOUNDARY}--`],
      ["/account/api-keys", "application/xml", "<x/>"],
    ] as const) {
      const response = await callJson(path, { method: "POST", headers: { "Content-Type": type, ...ADMIN }, body: payload });
      expect([response.status, response.body.code], `${path} as ${type}`).toEqual([415, "UNSUPPORTED_MEDIA_TYPE"]);
    }
    const untyped = await callJson("/admin/markets/BTCUSDT/status", { method: "PUT", headers: ADMIN, body: new TextEncoder().encode('{"status":"HALTED"}') });
    expect([untyped.status, untyped.body.code], "no Content-Type").toEqual([415, "UNSUPPORTED_MEDIA_TYPE"]);
  });

  it("malformed multipart on the dashboard's forms is 400, other media types 415", async () => {
    for (const path of [
      "/dashboard/signup",
      "/dashboard/login",
      "/dashboard/keys",
      "/dashboard/keys/mk_0123456789abcdef01234567/revoke",
      "/dashboard/logout",
    ]) {
      const { cookie } = await newAccount();
      const broken = await callJson(path, {
        method: "POST",
        headers: { "Content-Type": `multipart/form-data; boundary=${BOUNDARY}`, Cookie: cookie },
        body: "--nope\r\ngarbage",
      });
      expect([broken.status, broken.body.code], path).toEqual([400, "VALIDATION_FAILED"]);
      const json = await callJson(path, { method: "POST", headers: { "Content-Type": "application/json", Cookie: cookie }, body: "{}" });
      expect([json.status, json.body.code], path).toEqual([415, "UNSUPPORTED_MEDIA_TYPE"]);
    }
  });

  it("an unknown method on a known path is 405 with Allow", async () => {
    const response = await call("/api/markets", { method: "PROPFIND" });
    expect([response.status, response.headers.get("Allow")]).toEqual([405, "GET, HEAD"]);
  });
});
