import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/core/encoding";
import worker from "../../src/index";
import { ledgerOptions, recordEvent, releaseExpiredHolds, type VerifiedEvent } from "../../src/settlements/ledger";
import type { CallbackBody } from "../../src/settlements/schemas";
import { type SettlementStatus, TRANSITIONS } from "../../src/settlements/state-machine";
import { ADMIN, approveGateway, callbackBody, deliver, settlementOf } from "../support/gateways";
import { callJson } from "../support/http";

const HOLD = ledgerOptions(env).holdMs;

/** An event as the callback route hands it to the ledger, received at `receivedAt` (an injected clock). */
async function verified(gatewayId: string, data: { settlementId: string; sequence: number; status: string }, receivedAt: number): Promise<VerifiedEvent> {
  const body = callbackBody(gatewayId, data) as CallbackBody;
  const rawBody = JSON.stringify(body);
  return { gatewayId, webhookId: body.id, rawBody, bodySha256: await sha256Hex(rawBody), body, receivedAt };
}

async function answer(response: Response) {
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

describe("a gap holds events at most SETTLEMENT_GAP_HOLD_MS", () => {
  it("the default hold is 10 minutes", () => {
    expect(HOLD).toBe(600_000);
  });

  it("with only 1 and 3 delivered, 3 is applied across the gap by the next callback after the hold, and 2 is recorded as skipped", async () => {
    const gateway = await approveGateway();
    const t0 = Date.now();
    const options = ledgerOptions(env);
    expect((await recordEvent(env.DB, await verified(gateway.id, { settlementId: "stl_gap13", sequence: 1, status: "pending" }, t0), options)).outcome).toBe(
      "applied",
    );
    expect(
      (await recordEvent(env.DB, await verified(gateway.id, { settlementId: "stl_gap13", sequence: 3, status: "confirmed" }, t0 + 1), options)).outcome,
    ).toBe("held");
    // Within the hold nothing moves, whatever else arrives.
    const early = await recordEvent(
      env.DB,
      await verified(gateway.id, { settlementId: "stl_gap13", sequence: 5, status: "finalized" }, t0 + HOLD - 1),
      options,
    );
    expect(early).toMatchObject({ outcome: "held", status: "pending" });
    // The next callback after the hold releases 3 (confirmed is reachable from pending); 5 has
    // waited less than the hold since it arrived, so it waits on.
    const late = await recordEvent(env.DB, await verified(gateway.id, { settlementId: "stl_gap13", sequence: 1, status: "pending" }, t0 + HOLD + 1), options);
    expect(late).toMatchObject({ outcome: "quarantined", reason: "conflict", status: "confirmed" });
    expect((await settlementOf(gateway, "stl_gap13")).body.settlement).toMatchObject({ status: "confirmed", sequence: 3 });
    expect(await releaseExpiredHolds(env.DB, t0 + 2 * HOLD, options)).toBeGreaterThanOrEqual(1);
    const { body } = await settlementOf(gateway, "stl_gap13");
    expect(body.settlement).toMatchObject({ status: "finalized", sequence: 5 });
    expect(body.history.map((h: any) => [h.sequence, h.from, h.to, h.skipped])).toEqual([
      [1, null, "pending", null],
      [3, "pending", "confirmed", { from: 2, to: 2 }],
      [5, "confirmed", "finalized", { from: 4, to: 4 }],
    ]);
    // A late 2 is now stale: its sequence was skipped, not taken.
    const two = await recordEvent(env.DB, await verified(gateway.id, { settlementId: "stl_gap13", sequence: 2, status: "confirming" }, t0 + HOLD + 2), options);
    expect(two.outcome).toBe("stale");
  });

  it("with only 2 and 3 delivered, the settlement is listed as awaiting, and the Cron Trigger applies them after the hold", async () => {
    const gateway = await approveGateway();
    for (const [sequence, status] of [
      [3, "confirming"],
      [2, "pending"],
    ] as const) {
      const held = await answer(await deliver(gateway, callbackBody(gateway.id, { settlementId: "stl_gap23", sequence, status })));
      expect(held, `sequence ${sequence}`).toMatchObject({ status: 202, body: { outcome: "held", status: "awaiting" } });
    }
    const listed = await callJson(`/admin/settlements?gatewayId=${gateway.id}`, { headers: ADMIN });
    expect(listed.body.data.map((s: any) => [s.id, s.status, s.sequence])).toEqual([["stl_gap23", "awaiting", 0]]);
    // The scheduled handler, as the Cron Trigger runs it, at a time past the hold.
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ scheduledTime: Date.now() + HOLD + 1_000, cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    const { body } = await settlementOf(gateway, "stl_gap23");
    expect(body.settlement).toMatchObject({ status: "confirming", sequence: 3 });
    expect(body.history.map((h: any) => [h.sequence, h.to, h.skipped])).toEqual([
      [2, "pending", { from: 1, to: 1 }],
      [3, "confirming", null],
    ]);
    expect(body.events.map((e: any) => e.outcome)).toEqual(["applied", "applied"]);
  });

  it("across a gap, a state the table cannot reach is quarantined, and the settlement moves on", async () => {
    const gateway = await approveGateway();
    const t0 = Date.now();
    const options = ledgerOptions(env);
    await recordEvent(env.DB, await verified(gateway.id, { settlementId: "stl_gapq", sequence: 1, status: "failed" }, t0), options);
    await recordEvent(env.DB, await verified(gateway.id, { settlementId: "stl_gapq", sequence: 3, status: "pending" }, t0), options);
    expect(await releaseExpiredHolds(env.DB, t0 + HOLD, options)).toBeGreaterThanOrEqual(1);
    const { body } = await settlementOf(gateway, "stl_gapq");
    expect(body.settlement).toMatchObject({ status: "failed", sequence: 3 });
    expect(body.events.map((e: any) => [e.sequence, e.outcome, e.reason])).toEqual([
      [1, "applied", null],
      [3, "quarantined", "transition"],
    ]);
  });

  it("held events per settlement are bounded: past the bound a callback is refused with a retryable 429 HELD_LIMIT and nothing is written", async () => {
    const gateway = await approveGateway();
    const options = { ...ledgerOptions(env), maxHeld: 3 };
    const t0 = Date.now();
    await recordEvent(env.DB, await verified(gateway.id, { settlementId: "stl_bound", sequence: 1, status: "pending" }, t0), options);
    for (const sequence of [3, 4, 5])
      expect((await recordEvent(env.DB, await verified(gateway.id, { settlementId: "stl_bound", sequence, status: "confirming" }, t0), options)).outcome).toBe(
        "held",
      );
    const refused = await recordEvent(
      env.DB,
      await verified(gateway.id, { settlementId: "stl_bound", sequence: 6, status: "confirming" }, t0 + 1_000),
      options,
    ).catch((error) => error);
    expect([refused.code, refused.status, refused.headers["Retry-After"]]).toEqual(["HELD_LIMIT", 429, String(Math.ceil((HOLD - 1_000) / 1000))]);
    expect((await settlementOf(gateway, "stl_bound")).body.events).toHaveLength(4);
    // The missing sequence still goes in and releases the held ones.
    expect(
      await recordEvent(env.DB, await verified(gateway.id, { settlementId: "stl_bound", sequence: 2, status: "confirming" }, t0 + 2_000), options),
    ).toMatchObject({ outcome: "applied", status: "confirming" });
  });

  it("two different events for one sequence: the first stays, the second is quarantined as a conflict, in every arrival order", async () => {
    const orders = [
      ["1", "2", "3a", "3b"],
      ["1", "3a", "3b", "2"],
      ["1", "3b", "3a", "2"],
    ];
    for (const order of orders) {
      const gateway = await approveGateway();
      const events: Record<string, ReturnType<typeof callbackBody>> = {
        "1": callbackBody(gateway.id, { settlementId: "stl_same", sequence: 1, status: "pending" }),
        "2": callbackBody(gateway.id, { settlementId: "stl_same", sequence: 2, status: "confirming" }),
        "3a": callbackBody(gateway.id, { settlementId: "stl_same", sequence: 3, status: "confirmed" }),
        "3b": callbackBody(gateway.id, { settlementId: "stl_same", sequence: 3, status: "failed" }),
      };
      const outcomes: Record<string, string> = {};
      for (const name of order) outcomes[name] = (await answer(await deliver(gateway, events[name]))).body.outcome;
      const firstOfThree = order.find((name) => name.startsWith("3"))!;
      const second = firstOfThree === "3a" ? "3b" : "3a";
      const { body } = await settlementOf(gateway, "stl_same");
      expect(outcomes[second], order.join(",")).toBe("quarantined");
      expect(body.settlement.status, order.join(",")).toBe(events[firstOfThree]!.data.status);
      const byId = Object.fromEntries(body.events.map((e: any) => [e.webhookId, e]));
      expect(byId[events[second]!.id], order.join(",")).toMatchObject({ outcome: "quarantined", reason: "conflict" });
      expect(byId[events[firstOfThree]!.id].outcome, order.join(",")).toBe("applied");
      expect(
        body.events.filter((e: any) => e.outcome === "held"),
        order.join(","),
      ).toEqual([]);
    }
  });
});

/** A valid history: a random walk through the table from a random first state. */
function randomHistory(random: () => number, maxLength: number): SettlementStatus[] {
  const starts: SettlementStatus[] = ["pending", "confirming", "reorged"];
  const history = [starts[Math.floor(random() * starts.length)]!];
  while (history.length < maxLength) {
    const next = TRANSITIONS[history.at(-1)!];
    if (next.length === 0) break;
    history.push(next[Math.floor(random() * next.length)]!);
  }
  return history;
}

/** A small seeded generator, so a failing run can be repeated. */
function seeded(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state ^ (state >>> 15), 2246822507) + 0x9e3779b9) >>> 0;
    return state / 2 ** 32;
  };
}

describe("a shuffled, duplicated, multi-gateway delivery run", () => {
  it("200 settlements (the same ids at 50 gateways), 2,000 concurrent deliveries: each ends at its highest sequence, nothing applied twice, no settlement owned by the wrong gateway", async () => {
    const random = seeded(20261123);
    const gateways = await Promise.all(Array.from({ length: 50 }, (_, g) => approveGateway(`run ${g}`, `gw_run_${g}`)));
    const deliveries: { gateway: (typeof gateways)[number]; body: ReturnType<typeof callbackBody> }[] = [];
    const expected = new Map<string, { status: SettlementStatus; sequence: number }>();
    for (const gateway of gateways) {
      // Every gateway uses the same four ids: nobody may squat another's.
      const own: typeof deliveries = [];
      for (let s = 0; s < 4; s++) {
        const settlementId = `stl_shared_${s}`;
        const history = randomHistory(random, 6);
        expected.set(`${gateway.id}/${settlementId}`, { status: history.at(-1)!, sequence: history.length });
        for (const [i, status] of history.entries()) own.push({ gateway, body: callbackBody(gateway.id, { settlementId, sequence: i + 1, status }) });
      }
      // Duplicates (retries) up to 40 deliveries a gateway: under its 50 a second.
      const unique = own.length;
      while (own.length < 40) own.push(own[Math.floor(random() * unique)]!);
      deliveries.push(...own);
    }
    // Shuffle everything, then deliver 100 at a time concurrently.
    for (let i = deliveries.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [deliveries[i], deliveries[j]] = [deliveries[j]!, deliveries[i]!];
    }
    expect(deliveries.length).toBe(2_000);
    const statuses: number[] = [];
    for (let i = 0; i < deliveries.length; i += 100) {
      const batch = await Promise.all(deliveries.slice(i, i + 100).map(async ({ gateway, body }) => (await deliver(gateway, body)).status));
      statuses.push(...batch);
    }
    expect(
      statuses.filter((s) => s >= 300),
      "non-2xx answers",
    ).toEqual([]);

    const { results } = await env.DB.prepare("SELECT gateway_id, id, status, sequence FROM settlements WHERE gateway_id LIKE 'gw_run_%'").all<{
      gateway_id: string;
      id: string;
      status: string;
      sequence: number;
    }>();
    const actual = new Map(results.map((r) => [`${r.gateway_id}/${r.id}`, { status: r.status, sequence: r.sequence }]));
    const wrong = [...expected]
      .filter(([key, want]) => JSON.stringify(actual.get(key)) !== JSON.stringify(want))
      .map(([key, want]) => ({ key, want, got: actual.get(key) }));
    expect(wrong, "settlements not at their highest sequence").toEqual([]);
    expect(actual.size).toBe(200);
    // Each event applied exactly once: one transition per sequence, one applied row per event.
    const transitions = await env.DB.prepare(
      "SELECT gateway_id, settlement_id, COUNT(*) AS n, MAX(sequence) AS top FROM settlement_transitions WHERE gateway_id LIKE 'gw_run_%' GROUP BY gateway_id, settlement_id",
    ).all<{
      gateway_id: string;
      settlement_id: string;
      n: number;
      top: number;
    }>();
    const short = transitions.results.filter((t) => t.n !== expected.get(`${t.gateway_id}/${t.settlement_id}`)!.sequence || t.top !== t.n);
    expect(short, "histories with a missing or repeated step").toEqual([]);
    const events = await env.DB.prepare("SELECT outcome, COUNT(*) AS n FROM gateway_events WHERE gateway_id LIKE 'gw_run_%' GROUP BY outcome").all<{
      outcome: string;
      n: number;
    }>();
    const totalSteps = [...expected.values()].reduce((sum, e) => sum + e.sequence, 0);
    expect(Object.fromEntries(events.results.map((e) => [e.outcome, e.n]))).toEqual({ applied: totalSteps });
  }, 180_000);
});
