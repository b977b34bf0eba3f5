import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { signWebhook } from "../../src/settlements/webhook-signature";
import vectors from "../fixtures/signing-vectors.json";
import { ADMIN, approveGateway, callbackBody, deliver, settlementOf } from "../support/gateways";
import { call, callJson } from "../support/http";

async function answer(response: Response) {
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

async function countEvents(gatewayId: string) {
  return (await env.DB.prepare("SELECT COUNT(*) AS n FROM gateway_events WHERE gateway_id = ?").bind(gatewayId).first<{ n: number }>())!.n;
}

describe("settlement callbacks (docs/settlements.md)", () => {
  it("the documented webhook vectors sign to the documented signatures", async () => {
    for (const v of vectors.webhookSigning) {
      expect(await signWebhook(v.secret, v.webhookId, String(v.webhookTimestamp), new TextEncoder().encode(v.body))).toBe(v.webhookSignature);
    }
  });

  it("pending → confirming → confirmed → finalized, with a duplicate and an out-of-order delivery", async () => {
    const gateway = await approveGateway();
    const events = (["pending", "confirming", "confirmed", "finalized"] as const).map((status, i) =>
      callbackBody(gateway.id, { settlementId: "stl_flow", sequence: i + 1, status }),
    );
    expect(await answer(await deliver(gateway, events[0]))).toEqual({
      status: 200,
      body: { received: true, outcome: "applied", settlementId: "stl_flow", status: "pending" },
    });
    expect((await answer(await deliver(gateway, events[0]))).body.outcome).toBe("duplicate");
    expect(await answer(await deliver(gateway, events[2]))).toMatchObject({ status: 202, body: { outcome: "held", status: "pending" } });
    expect(await answer(await deliver(gateway, events[1]))).toMatchObject({ status: 200, body: { outcome: "applied", status: "confirmed" } });
    expect(await answer(await deliver(gateway, events[3]))).toMatchObject({ status: 200, body: { outcome: "applied", status: "finalized" } });
    const { body } = await settlementOf(gateway, "stl_flow");
    expect(body.settlement).toMatchObject({ status: "finalized", sequence: 4, amount: "1250.500000", gatewayId: gateway.id });
    expect(body.history.map((h: any) => `${h.from}>${h.to}`)).toEqual(["null>pending", "pending>confirming", "confirming>confirmed", "confirmed>finalized"]);
    expect(body.events.map((e: any) => e.outcome)).toEqual(["applied", "applied", "applied", "applied"]);
  });

  it("stale, quarantined and conflicting deliveries are stored and answered as documented", async () => {
    const gateway = await approveGateway();
    await deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_q", sequence: 1, status: "pending" }));
    const illegal = await answer(await deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_q", sequence: 2, status: "finalized" })));
    expect(illegal).toMatchObject({ status: 202, body: { outcome: "quarantined", status: "pending" } });
    const claimed = await answer(await deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_q", sequence: 1, status: "confirming" })));
    expect(claimed, "a second event for sequence 1").toMatchObject({ status: 202, body: { outcome: "quarantined", reason: "conflict", status: "pending" } });
    const first = callbackBody(gateway.id, { settlementId: "stl_q", sequence: 3, status: "confirming" }, "evt_conflict");
    await deliver(gateway, first);
    const conflicting = await answer(await deliver(gateway, { ...first, data: { ...first.data, amount: "9999.00" } }));
    expect(conflicting).toMatchObject({ status: 409, body: { code: "EVENT_ID_CONFLICT" } });
    expect(await countEvents(gateway.id)).toBe(4);
  });

  it("50 concurrent deliveries of one event make exactly one event row and one transition", async () => {
    const gateway = await approveGateway();
    const event = callbackBody(gateway.id, { settlementId: "stl_race", sequence: 1, status: "pending" });
    const responses = await Promise.all(Array.from({ length: 50 }, () => deliver(gateway, event)));
    const outcomes = await Promise.all(responses.map(async (r) => ((await r.json()) as { outcome: string }).outcome));
    expect(
      responses.map((r) => r.status).filter((status) => status !== 200),
      "answers other than 200",
    ).toEqual([]);
    expect(outcomes.filter((o) => o === "applied")).toHaveLength(1);
    expect(outcomes.filter((o) => o === "duplicate")).toHaveLength(49);
    expect(await countEvents(gateway.id)).toBe(1);
    const transitions = await env.DB.prepare("SELECT COUNT(*) AS n FROM settlement_transitions WHERE settlement_id = 'stl_race'").first<{ n: number }>();
    expect(transitions!.n).toBe(1);
  });

  it("a whole history delivered at once, duplicates included, ends in the in-order state and history", async () => {
    const histories = [
      ["pending", "confirming", "confirming", "confirmed", "finalized"],
      ["pending", "confirming", "reorged", "pending", "confirming", "confirmed", "reorged", "dropped"],
      ["confirming", "finalized", "confirmed", "reorged", "confirming", "failed", "pending"],
    ];
    for (const [h, statuses] of histories.entries()) {
      const gateway = await approveGateway();
      const settlementId = `stl_burst_${h}`;
      const events = statuses.map((status, i) => callbackBody(gateway.id, { settlementId, sequence: i + 1, status }));
      const burst = [...events, ...events.slice(0, 3), events[events.length - 1]!].reverse();
      const responses = await Promise.all(burst.map((e) => deliver(gateway, e)));
      expect(
        responses.map((r) => r.status).filter((status) => status !== 200 && status !== 202),
        statuses.join(" "),
      ).toEqual([]);
      // The in-order result: the same events, one at a time, for a second settlement.
      const reference = `${settlementId}_ref`;
      for (const e of events) await deliver(gateway, { ...e, id: `${e.id}_ref`, data: { ...e.data, settlementId: reference } });
      const [actual, expected] = await Promise.all([settlementOf(gateway, settlementId), settlementOf(gateway, reference)]);
      const shape = (b: any) => ({
        status: b.settlement?.status,
        sequence: b.settlement?.sequence,
        history: b.history.map((t: any) => [t.sequence, t.from, t.to]),
      });
      expect(shape(actual.body), statuses.join(" ")).toEqual(shape(expected.body));
      expect(actual.body.settlement.sequence).toBe(events.length);
      // One row per event, nothing left waiting.
      expect(actual.body.events).toHaveLength(events.length);
      expect(actual.body.events.filter((e: any) => e.outcome === "held")).toEqual([]);
    }
  });

  it("settlement ids are per gateway: another gateway's events for the same id make its own settlement and never touch this one", async () => {
    const owner = await approveGateway("Owner");
    const intruder = await approveGateway("Intruder");
    // The intruder speaks first, for an id the owner has not used yet: it cannot squat it.
    expect((await answer(await deliver(intruder, callbackBody(intruder.id, { settlementId: "stl_owned", sequence: 1, status: "failed" })))).body).toMatchObject(
      { outcome: "applied", status: "failed" },
    );
    const first = await answer(await deliver(owner, callbackBody(owner.id, { settlementId: "stl_owned", sequence: 1, status: "pending" })));
    expect(first).toMatchObject({ status: 200, body: { outcome: "applied", status: "pending" } });
    await deliver(intruder, callbackBody(intruder.id, { settlementId: "stl_owned", sequence: 2, status: "failed" }));
    const own = await answer(await deliver(owner, callbackBody(owner.id, { settlementId: "stl_owned", sequence: 2, status: "confirming" })));
    expect(own).toMatchObject({ status: 200, body: { outcome: "applied", status: "confirming" } });
    const { body } = await settlementOf(owner, "stl_owned");
    expect(body.settlement).toMatchObject({ gatewayId: owner.id, status: "confirming", sequence: 2 });
    expect(body.history.map((t: any) => t.to)).toEqual(["pending", "confirming"]);
    expect(body.events.map((e: any) => e.outcome)).toEqual(["applied", "applied"]);
    // Its own: failed is final, so its second event was quarantined and consumed sequence 2.
    expect((await settlementOf(intruder, "stl_owned")).body.settlement).toMatchObject({ gatewayId: intruder.id, status: "failed", sequence: 2 });
  });

  it("through D1, any delivery order ends in the in-order state and history", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom("pending", "confirming", "confirmed", "reorged", "dropped", "finalized"), { minLength: 2, maxLength: 6 }),
        fc.infiniteStream(fc.nat()),
        async (statuses, randomness) => {
          run += 1;
          // A gateway per run keeps each under its 50 callbacks a second.
          const gateway = await approveGateway();
          const settlementId = `stl_prop_${run}`;
          const events = statuses.map((status, i) => callbackBody(gateway.id, { settlementId, sequence: i + 1, status }));
          const order = [...events, events[0]!]
            .map((e) => ({ e, k: randomness.next().value }))
            .sort((a, b) => a.k - b.k)
            .map((x) => x.e);
          for (const e of order) expect((await deliver(gateway, e)).status).toBeLessThan(300);
          // The in-order result, computed by the same rules on a fresh settlement.
          const reference = `${settlementId}_ref`;
          for (const e of events) await deliver(gateway, { ...e, id: `${e.id}_ref`, data: { ...e.data, settlementId: reference } });
          const [actual, expected] = await Promise.all([settlementOf(gateway, settlementId), settlementOf(gateway, reference)]);
          const shape = (b: any) => ({
            status: b.settlement?.status,
            sequence: b.settlement?.sequence,
            history: b.history.map((h: any) => [h.sequence, h.from, h.to]),
          });
          expect(shape(actual.body)).toEqual(shape(expected.body));
        },
      ),
      { numRuns: 8 },
    );
  }, 60_000);
});

describe("callback verification", () => {
  it("either of two active secrets passes; a retired one fails", async () => {
    const gateway = await approveGateway();
    const rotated = await callJson(`/admin/gateways/${gateway.id}/secrets`, { method: "POST", headers: ADMIN });
    expect(rotated.status).toBe(201);
    const third = await callJson(`/admin/gateways/${gateway.id}/secrets`, { method: "POST", headers: ADMIN });
    expect([third.status, third.body.code]).toEqual([400, "VALIDATION_FAILED"]);
    const body = (n: number) => callbackBody(gateway.id, { settlementId: `stl_rot_${n}`, sequence: 1, status: "pending" });
    expect((await deliver(gateway, body(1))).status).toBe(200);
    expect((await deliver(gateway, body(2), { secret: rotated.body.secret })).status).toBe(200);
    expect((await call(`/admin/gateways/${gateway.id}/secrets/${gateway.secretId}`, { method: "DELETE", headers: ADMIN })).status).toBe(204);
    const retired = await answer(await deliver(gateway, body(3)));
    expect([retired.status, retired.body.code]).toEqual([401, "INVALID_SIGNATURE"]);
    expect((await deliver(gateway, body(4), { secret: rotated.body.secret })).status).toBe(200);
  });

  it("a body re-serialized with other whitespace fails: the raw bytes are signed", async () => {
    const gateway = await approveGateway();
    const event = callbackBody(gateway.id, { settlementId: "stl_ws", sequence: 1, status: "pending" });
    const signedOver = JSON.stringify(event);
    const signature = await signWebhook(gateway.secret, event.id, String(Math.floor(Date.now() / 1000)), new TextEncoder().encode(signedOver));
    const response = await call("/api/gateway/callback", {
      method: "POST",
      body: JSON.stringify(event, null, 2),
      headers: {
        "Content-Type": "application/json",
        "X-GATEWAY-ID": gateway.id,
        "webhook-id": event.id,
        "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
        "webhook-signature": signature,
      },
    });
    expect((await answer(response)).body.code).toBe("INVALID_SIGNATURE");
    expect(await countEvents(gateway.id)).toBe(0);
  });

  it("timestamps within ±300 s pass and beyond fail (the exact edges are unit-tested with an injected clock)", async () => {
    const gateway = await approveGateway();
    // Our second and the server's may differ by one, so the margins here are a second wide.
    const now = Math.floor(Date.now() / 1000);
    const send = (offset: number) =>
      deliver(gateway, callbackBody(gateway.id, { settlementId: `stl_t${offset}`, sequence: 1, status: "pending" }), { timestamp: now + offset });
    const [pastEdge, futureEdge, late, early] = await Promise.all([send(-299), send(299), send(-302), send(302)].map(async (r) => answer(await r)));
    expect(pastEdge!.status).toBe(200);
    expect(futureEdge!.status).toBe(200);
    expect([late!.status, late!.body.code]).toEqual([401, "TIMESTAMP_OUT_OF_WINDOW"]);
    expect([early!.status, early!.body.code]).toEqual([401, "TIMESTAMP_OUT_OF_WINDOW"]);
    expect(late!.body.serverTime).toEqual(expect.any(Number));
    expect(await countEvents(gateway.id)).toBe(2);
  });

  it("unknown gateway, revoked gateway and missing headers are refused and nothing is written", async () => {
    const gateway = await approveGateway();
    const event = callbackBody(gateway.id, { settlementId: "stl_x", sequence: 1, status: "pending" });
    const unknown = await answer(await deliver({ id: "gw_nobody", secret: gateway.secret }, { ...event, gatewayId: "gw_nobody" }));
    expect([unknown.status, unknown.body.code]).toEqual([401, "UNKNOWN_GATEWAY"]);
    for (const missing of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
      const response = await deliver(gateway, event, { headers: { [missing]: "" } });
      expect((await answer(response)).body.code, missing).toBe("INVALID_SIGNATURE");
    }
    const noGateway = await deliver(gateway, event, { headers: { "X-GATEWAY-ID": "" } });
    expect((await answer(noGateway)).body.code).toBe("UNKNOWN_GATEWAY");
    expect((await call(`/admin/gateways/${gateway.id}`, { method: "DELETE", headers: ADMIN })).status).toBe(204);
    const revoked = await answer(await deliver(gateway, event));
    expect([revoked.status, revoked.body.code]).toEqual([401, "UNKNOWN_GATEWAY"]);
    expect(await countEvents(gateway.id)).toBe(0);
  });
});

describe("bad input is refused with its problem and nothing is written", () => {
  it("truncated JSON, wrong types, negative or over-precise amounts, mismatched id, oversized body, wrong content type", async () => {
    const gateway = await approveGateway();
    const good = callbackBody(gateway.id, { settlementId: "stl_bad", sequence: 1, status: "pending" });
    const cases: [string, Parameters<typeof deliver>[2], number, string][] = [
      ["truncated", { raw: JSON.stringify(good).slice(0, 40) }, 400, "VALIDATION_FAILED"],
      ["wrong types", { raw: JSON.stringify({ ...good, data: { ...good.data, sequence: "1" } }) }, 400, "VALIDATION_FAILED"],
      ["negative", { raw: JSON.stringify({ ...good, data: { ...good.data, amount: "-1.00" } }) }, 400, "VALIDATION_FAILED"],
      ["over-precise", { raw: JSON.stringify({ ...good, data: { ...good.data, amount: "1.0000000000000000001" } }) }, 400, "VALIDATION_FAILED"],
      ["exponent", { raw: JSON.stringify({ ...good, data: { ...good.data, amount: "1e3" } }) }, 400, "VALIDATION_FAILED"],
      ["unknown status", { raw: JSON.stringify({ ...good, data: { ...good.data, status: "done" } }) }, 400, "VALIDATION_FAILED"],
      ["id differs", { raw: JSON.stringify(good), webhookId: "evt_other" }, 400, "VALIDATION_FAILED"],
      ["64 KiB + 1", { raw: JSON.stringify({ ...good, pad: "" }).replace('"pad":""', `"pad":"${"x".repeat(64 * 1024)}"`) }, 413, "PAYLOAD_TOO_LARGE"],
      ["gatewayId differs", { raw: JSON.stringify({ ...good, gatewayId: "gw_other" }) }, 400, "VALIDATION_FAILED"],
      ["sequence 0", { raw: JSON.stringify({ ...good, data: { ...good.data, sequence: 0 } }) }, 400, "VALIDATION_FAILED"],
      ["amount as a number", { raw: JSON.stringify({ ...good, data: { ...good.data, amount: 1250.5 } }) }, 400, "VALIDATION_FAILED"],
      ["empty body", { raw: "" }, 400, "VALIDATION_FAILED"],
      ["not UTF-8", { raw: new Uint8Array([...new TextEncoder().encode(JSON.stringify(good).slice(0, -2)), 0xff, 0x7d, 0x7d]) }, 400, "VALIDATION_FAILED"],
      [
        "64 KiB + 1 without Content-Length",
        { raw: new TextEncoder().encode(`{"pad":"${"x".repeat(64 * 1024 - 9)}"}`), stream: true },
        413,
        "PAYLOAD_TOO_LARGE",
      ],
      ["content type", { headers: { "Content-Type": "text/plain" } }, 415, "UNSUPPORTED_MEDIA_TYPE"],
      ["no content type", { headers: { "Content-Type": "" } }, 415, "UNSUPPORTED_MEDIA_TYPE"],
    ];
    for (const [name, options, status, code] of cases) {
      const result = await answer(await deliver(gateway, good, options));
      expect([result.status, result.body.code], name).toEqual([status, code]);
    }
    const sized = JSON.stringify({ ...good, pad: "" });
    const exactly = sized.replace('"pad":""', `"pad":"${"x".repeat(64 * 1024 - sized.length)}"`);
    expect(new TextEncoder().encode(exactly).length).toBe(64 * 1024);
    expect((await deliver(gateway, good, { raw: exactly })).status).toBe(200);
    expect(await countEvents(gateway.id)).toBe(1);
  });

  it("nothing lost: a 2xx event is in D1 with its raw body; a failed write is a 5xx so the gateway retries", async () => {
    const gateway = await approveGateway();
    const event = callbackBody(gateway.id, { settlementId: "stl_lost", sequence: 1, status: "pending" });
    const raw = JSON.stringify(event);
    expect((await deliver(gateway, event, { raw })).status).toBe(200);
    const row = await env.DB.prepare("SELECT raw_body FROM gateway_events WHERE webhook_id = ?").bind(event.id).first<{ raw_body: string }>();
    expect(row!.raw_body).toBe(raw);

    // Break the history table for real: the batch fails as a whole and nothing is kept.
    await env.DB.exec("ALTER TABLE settlement_transitions RENAME TO settlement_transitions_away");
    try {
      const next = callbackBody(gateway.id, { settlementId: "stl_lost", sequence: 2, status: "confirming" });
      const failed = await deliver(gateway, next);
      expect(failed.status).toBe(500);
      expect(((await failed.json()) as { code: string }).code).toBe("INTERNAL_ERROR");
      expect(await env.DB.prepare("SELECT 1 FROM gateway_events WHERE webhook_id = ?").bind(next.id).first()).toBeNull();
      await env.DB.exec("ALTER TABLE settlement_transitions_away RENAME TO settlement_transitions");
      const retried = await deliver(gateway, next);
      expect(((await retried.json()) as { outcome: string }).outcome).toBe("applied");
    } finally {
      await env.DB.exec("ALTER TABLE settlement_transitions_away RENAME TO settlement_transitions").catch(() => undefined);
    }
  });
});

describe("nothing lost, and each gateway's own rate", () => {
  it("every event answered 2xx is in D1 with its raw body, whatever its outcome", async () => {
    const gateway = await approveGateway();
    const e = (sequence: number, status: string) => callbackBody(gateway.id, { settlementId: "stl_kept", sequence, status });
    const first = e(1, "pending");
    // Sent with other spacing than JSON.stringify makes, to show the bytes are kept as sent.
    const sends: { body: { id: string }; raw: string }[] = [
      { body: first, raw: JSON.stringify(first, null, 1) },
      { body: first, raw: JSON.stringify(first, null, 1) }, // duplicate
      ...[e(3, "confirmed"), e(2, "confirming"), e(1, "failed"), e(4, "pending")].map((body) => ({ body, raw: JSON.stringify(body) })), // held, applied, a conflict (sequence 1 has its event), an illegal step
    ];
    const outcomes: string[] = [];
    for (const { body, raw } of sends) {
      const response = await deliver(gateway, body, { raw });
      expect(response.status).toBeLessThan(300);
      outcomes.push(((await response.json()) as { outcome: string }).outcome);
      const row = await env.DB.prepare("SELECT raw_body, body_sha256 FROM gateway_events WHERE gateway_id = ? AND webhook_id = ?")
        .bind(gateway.id, body.id)
        .first<{ raw_body: string; body_sha256: string }>();
      expect(row?.raw_body).toBe(raw);
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(raw)));
      expect(row?.body_sha256).toBe([...digest].map((b) => b.toString(16).padStart(2, "0")).join(""));
    }
    expect(outcomes).toEqual(["applied", "duplicate", "held", "applied", "quarantined", "quarantined"]);
    expect(await countEvents(gateway.id)).toBe(5);
  });

  it("a gateway gets 50 callbacks a second; the 429s carry Retry-After and write nothing", async () => {
    const gateway = await approveGateway();
    const events = Array.from({ length: 60 }, (_, i) => callbackBody(gateway.id, { settlementId: `stl_rate_${i}`, sequence: 1, status: "pending" }));
    const responses = await Promise.all(events.map((e) => deliver(gateway, e)));
    const limited = responses.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited.length + responses.filter((r) => r.status === 200).length).toBe(60);
    expect(((await limited[0]!.json()) as { code: string }).code).toBe("RATE_LIMITED");
    expect(Number(limited[0]!.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    expect(await countEvents(gateway.id)).toBe(60 - limited.length);
    // Another gateway has its own budget.
    const other = await approveGateway();
    expect((await deliver(other, callbackBody(other.id, { settlementId: "stl_rate_other", sequence: 1, status: "pending" }))).status).toBe(200);
  });

  it("callbacks are not held to the public 10 requests a second per IP", async () => {
    const gateway = await approveGateway();
    const ip = { "CF-Connecting-IP": "203.0.113.77" };
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        deliver(gateway, callbackBody(gateway.id, { settlementId: `stl_ip_${i}`, sequence: 1, status: "pending" }), { headers: ip }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 200));
    // The same address on the public surface is limited.
    const publicStatuses = await Promise.all(Array.from({ length: 12 }, () => call("/api/time", { headers: ip }).then((r) => r.status)));
    expect(publicStatuses).toContain(429);
  });
});
