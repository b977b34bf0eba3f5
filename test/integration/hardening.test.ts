import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_SNAPSHOT_STEP } from "../../src/domain/order-book";
import { newAccount, newKey, newPublishKey, signedCall } from "../support/accounts";
import { ADMIN } from "../support/gateways";
import { call, callJson } from "../support/http";

const json = { "Content-Type": "application/json" };

describe("a book never goes back (publisher rules)", () => {
  const snapshot = (sequence: number, bid = "100.00") => ({ type: "snapshot", sequence, bids: [[bid, "1.00000"]], asks: [["200.00", "1.00000"]] });

  it("a replayed signed ingest is a duplicate no-op, a different older snapshot is refused, the book keeps its sequence", async () => {
    const publisher = await newPublishKey();
    const book = async () => (await callJson("/api/orderbook/SOLUSDT?depth=5")).body;
    const start = (await book()).sequence as number;
    const first = JSON.stringify({ symbol: "SOLUSDT", book: snapshot(start + 10) });
    const applied = await signedCall(publisher, "POST", "/v1/ingest", { body: first });
    expect([applied.status, await applied.json()]).toEqual([
      200,
      { symbol: "SOLUSDT", acceptedTrades: 0, duplicateTrades: 0, sequence: start + 10, book: "applied" },
    ]);
    const delta = JSON.stringify({ symbol: "SOLUSDT", book: { type: "delta", sequence: start + 11, bids: [["101.00", "2.00000"]], asks: [] } });
    expect((await signedCall(publisher, "POST", "/v1/ingest", { body: delta })).status).toBe(200);
    // The same delta again (a resend within the receive window): nothing changes.
    const replayed = await signedCall(publisher, "POST", "/v1/ingest", { body: delta });
    expect([replayed.status, ((await replayed.json()) as { book: string }).book]).toEqual([200, "duplicate"]);
    // The first snapshot resent: recognised as applied before, nothing changes.
    const resent = await signedCall(publisher, "POST", "/v1/ingest", { body: first });
    expect([resent.status, ((await resent.json()) as { book: string }).book]).toEqual([200, "duplicate"]);
    // A different snapshot at that old sequence would take the book back: refused.
    const rewind = await signedCall(publisher, "POST", "/v1/ingest", { body: JSON.stringify({ symbol: "SOLUSDT", book: snapshot(start + 10, "99.00") }) });
    const problem = (await rewind.json()) as { code: string; currentSequence: number };
    expect([rewind.status, problem.code, problem.currentSequence]).toEqual([409, "STALE_SEQUENCE", start + 11]);
    const after = await book();
    expect([after.sequence, after.bids[0]]).toEqual([start + 11, ["101.000", "2.00"]]);
  });

  it("a snapshot at the largest sequence cannot freeze the market: it is refused, and the market moves on", async () => {
    const publisher = await newPublishKey();
    const start = (await callJson("/api/orderbook/XRPUSDT?depth=1")).body.sequence as number;
    const huge = await signedCall(publisher, "POST", "/v1/ingest", {
      body: JSON.stringify({ symbol: "XRPUSDT", book: snapshot(Number.MAX_SAFE_INTEGER, "0.5000") }),
    });
    const problem = (await huge.json()) as { code: string; maxSequence: number };
    expect([huge.status, problem.code, problem.maxSequence]).toEqual([409, "SEQUENCE_GAP", start + MAX_SNAPSHOT_STEP]);
    const next = await signedCall(publisher, "POST", "/v1/ingest", { body: JSON.stringify({ symbol: "XRPUSDT", book: snapshot(start + 1, "0.5000") }) });
    expect(next.status).toBe(200);
  });
});

describe("client addresses are canonical (per-IP limits, stream slots, allow-lists)", () => {
  async function admitted(ips: string[]) {
    const responses = await Promise.all(ips.map((ip) => call("/api/time", { headers: { "CF-Connecting-IP": ip } })));
    return responses.filter((r) => r.status === 200).length;
  }

  it("one IPv4 address in many spellings shares one budget of 10", async () => {
    const spellings = [
      "198.18.1.7",
      "::ffff:198.18.1.7",
      "::ffff:c612:107",
      "0:0:0:0:0:ffff:c612:0107",
      "198.018.001.007",
      "198.18.1.7:443",
      "198.18.1.7, 10.0.0.1",
    ];
    expect(await admitted(Array.from({ length: 25 }, (_, i) => spellings[i % spellings.length]!))).toBe(10);
  });

  it("one IPv6 address in 4 spellings, and 50 addresses of one /64, each share one budget", async () => {
    const spellings = ["2001:db8:7:1::5", "2001:0db8:0007:0001:0000:0000:0000:0005", "2001:DB8:7:1:0:0:0:5", "[2001:db8:7:1::5]:443"];
    expect(await admitted(Array.from({ length: 40 }, (_, i) => spellings[i % 4]!))).toBe(10);
    expect(await admitted(Array.from({ length: 50 }, (_, i) => `2001:db8:8:2:${(i + 1).toString(16)}::1`))).toBe(10);
  });

  it("a missing or malformed CF-Connecting-IP falls into one shared bucket, never a fresh one per spelling", async () => {
    const junk = Array.from({ length: 20 }, (_, i) => `not-an-address-${i}`);
    const responses = await Promise.all([...junk.map((ip) => call("/api/time", { headers: { "CF-Connecting-IP": ip } }))]);
    expect(responses.filter((r) => r.status === 200).length).toBeLessThanOrEqual(10);
  });

  it("a key's allow-list matches the canonical address", async () => {
    const key = await newKey({ allowCidrs: ["198.18.9.0/24"] });
    expect((await signedCall(key, "GET", "/v1/markets", { ip: "::ffff:198.18.9.20" })).status).toBe(200);
    expect((await signedCall(key, "GET", "/v1/markets", { ip: "198.18.10.1" })).status).toBe(403);
  });
});

describe("smaller hardening", () => {
  it("CSRF compares the whole origin: https://host is not http://host", async () => {
    const { cookie } = await newAccount();
    const body = JSON.stringify({ label: "x", permissions: ["read"] });
    const other = await callJson("/account/api-keys", { method: "POST", headers: { ...json, Cookie: cookie, Origin: "https://service.test" }, body });
    expect([other.status, other.body.code]).toEqual([403, "PERMISSION_DENIED"]);
    const port = await callJson("/account/api-keys", { method: "POST", headers: { ...json, Cookie: cookie, Origin: "http://service.test:8080" }, body });
    expect(port.status).toBe(403);
    expect((await call("/account/api-keys", { method: "POST", headers: { ...json, Cookie: cookie, Origin: "http://service.test" }, body })).status).toBe(201);
  });

  it("an operator may choose a gateway's id; a taken one is 409, a malformed one or an unknown field 400 — never ignored", async () => {
    const post = (body: unknown) => callJson("/admin/gateways", { method: "POST", headers: { ...ADMIN, ...json }, body: JSON.stringify(body) });
    const chosen = await post({ name: "Chosen", id: "gw_chosen-1" });
    expect([chosen.status, chosen.body.id]).toEqual([201, "gw_chosen-1"]);
    const taken = await post({ name: "Again", id: "gw_chosen-1" });
    expect([taken.status, taken.body.code]).toEqual([409, "ALREADY_EXISTS"]);
    const secrets = await env.DB.prepare("SELECT COUNT(*) AS n FROM gateway_secrets WHERE gateway_id = 'gw_chosen-1'").first<{ n: number }>();
    expect(secrets!.n, "the refused approval added no secret to the existing gateway").toBe(1);
    for (const bad of [
      { name: "x", id: "-starts-badly" },
      { name: "x", id: "has space" },
      { name: "x", id: "x".repeat(65) },
      { name: "x", extra: true },
    ]) {
      const refused = await post(bad);
      expect([refused.status, refused.body.code], JSON.stringify(bad)).toEqual([400, "VALIDATION_FAILED"]);
    }
  });

  it("path parameters over their bound are 400 and the document lists 400 for them", async () => {
    const { body: doc } = await callJson("/openapi.json");
    const withParams = Object.entries(
      doc.paths as Record<string, Record<string, { parameters?: { in: string }[]; responses: Record<string, unknown> }>>,
    ).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, op]) => op.parameters?.some((p) => p.in === "path"))
        .map(([method, op]) => [`${method} ${path}`, Object.keys(op.responses).includes("400")] as const),
    );
    expect(withParams.filter(([, listed]) => !listed)).toEqual([]);
    const long = await callJson(`/admin/gateways/${"g".repeat(200)}`, { headers: ADMIN });
    expect([long.status, long.body.code]).toEqual([400, "VALIDATION_FAILED"]);
  });
});
