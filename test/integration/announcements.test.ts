import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Announcement } from "../../src/announcements/schemas";
import { call, callJson } from "../support/http";
import { until } from "../support/poll";
import { openSocket } from "./streams-support";

const admin = { Authorization: "Bearer test-admin-token", "Content-Type": "application/json" };
const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = admin) =>
  callJson(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
/** A delete answers 204 with no body. */
const remove = async (id: string) => (await call(`/admin/announcements/${id}`, { method: "DELETE", headers: admin })).status;
const status = async () => (await callJson("/api/status")).body;
const binanceStatus = async () => (await callJson("/binance/sapi/v1/system/status")).body;
const MINUTE = 60_000;

describe("announcements (docs/operations.md#announcements)", () => {
  it("a maintenance reaches native `status` subscribers and Binance connections, shows in GET /api/status, /status and sapi system/status, and leaves when deleted", async () => {
    const native = await openSocket("/api/ws?streams=status", "192.0.2.170");
    // A subscriber gets the status as it is at once.
    const first = await until(() => native.messages.find((m) => m.stream === "status")?.data, { what: "the status at subscribe" });
    // No feed publishes here: every market is stale, so the venue is degraded before any announcement.
    expect(first).toMatchObject({ status: "degraded", announcements: [] });
    const binance = await openSocket("/binance/ws/btcusdt@bookTicker", "192.0.2.171");
    binance.ws.send(JSON.stringify({ method: "LIST_SUBSCRIPTIONS", id: 1 }));
    await until(() => binance.messages.find((m) => m.id === 1), { what: "the Binance connection is up" });

    // Starting within the notice lead: the Binance connection is told now.
    const startsAt = Date.now() + 30_000;
    const made = await send("POST", "/admin/announcements", { kind: "maintenance", title: "Database maintenance", startsAt, endsAt: startsAt + 10 * MINUTE });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const announcement = made.body as Announcement;
    expect(announcement).toMatchObject({ kind: "maintenance", title: "Database maintenance", startsAt, endsAt: startsAt + 10 * MINUTE, markets: null });
    expect(announcement.id).toMatch(/^ann_[0-9a-f]{16}$/);

    const pushed = await until(() => native.messages.filter((m) => m.stream === "status")[1]?.data, { what: "the pushed status" });
    expect(pushed, "upcoming: not yet maintenance").toMatchObject({ status: "degraded", announcements: [announcement] });
    expect(await until(() => binance.messages.find((m) => m.e === "serverShutdown"), { what: "serverShutdown" })).toEqual({
      e: "serverShutdown",
      E: expect.any(Number),
    });
    expect(await status()).toMatchObject({ status: "degraded", announcements: [announcement] });
    expect(await binanceStatus()).toEqual({ status: 0, msg: "normal" });

    // Started: maintenance everywhere.
    const started = await send("PATCH", `/admin/announcements/${announcement.id}`, { startsAt: Date.now() - 1000 });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(await until(() => native.messages.filter((m) => m.stream === "status")[2]?.data, { what: "the status once started" })).toMatchObject({
      status: "maintenance",
    });
    expect(await status()).toMatchObject({ status: "maintenance" });
    expect(await binanceStatus()).toEqual({ status: 1, msg: "system maintenance" });
    const page = await (await call("/status")).text();
    expect(page, "the status page").toContain("Maintenance under way");
    expect(page).toContain("Database maintenance");
    expect(page).toContain('http-equiv="refresh"');

    expect(await remove(announcement.id)).toBe(204);
    expect(await until(() => native.messages.filter((m) => m.stream === "status")[3]?.data, { what: "the status once deleted" })).toMatchObject({
      status: "degraded",
      announcements: [],
    });
    expect(await binanceStatus()).toEqual({ status: 0, msg: "normal" });
    const audit = (await callJson(`/admin/audit?since=${startsAt - 60_000}`, { headers: admin })).body;
    expect(
      audit.data.filter((e: { target: string }) => e.target === announcement.id).map((e: { action: string }) => e.action),
      "each change in the audit log",
    ).toEqual(expect.arrayContaining(["announcement.create", "announcement.change", "announcement.delete"]));
    native.ws.close();
    binance.ws.close();
  });

  it("the price index tells the shards again when an announcement starts or ends (its alarm, with an injected clock)", async () => {
    const native = await openSocket("/api/ws?streams=status", "192.0.2.172");
    await until(() => native.messages.find((m) => m.stream === "status"), { what: "the status at subscribe" });
    const startsAt = Date.now() + 60 * MINUTE;
    const made = (await send("POST", "/admin/announcements", { kind: "maintenance", title: "BTCUSDT feed upgrade", startsAt, markets: ["BTCUSDT"] }))
      .body as Announcement;
    await until(() => native.messages.filter((m) => m.stream === "status")[1], { what: "the pushed status" });
    const index = env.PRICE_INDEX.getByName("global");
    // An hour passes: the incident starts now, and the alarm was due.
    await runInDurableObject(index, (_instance, state) => {
      const held = state.storage.kv.get<Announcement[]>("announcements")!;
      state.storage.kv.put(
        "announcements",
        held.map((a) => (a.id === made.id ? { ...a, startsAt: Date.now() - 1 } : a)),
      );
      state.storage.kv.put("statusChangeAt", Date.now() - 1);
    });
    expect(await runDurableObjectAlarm(index), "the announcement armed the index's alarm").toBe(true);
    const pushed = await until(() => native.messages.filter((m) => m.stream === "status")[2]?.data, { what: "the status at the start" });
    expect(pushed).toMatchObject({ status: "maintenance", announcements: [{ id: made.id, kind: "maintenance", markets: ["BTCUSDT"] }] });
    expect(await remove(made.id)).toBe(204);
    native.ws.close();
  });

  it("refuses what it cannot keep: bad fields 400, an unknown market 400, an unknown id 404, a 51st 409, no token 401", async () => {
    for (const body of [
      { kind: "outage", title: "x" },
      { kind: "info", title: "" },
      { kind: "info", title: "x".repeat(201) },
      { kind: "info", title: "x", startsAt: 2000, endsAt: 1000 },
      { kind: "info", title: "x", extra: true },
      { kind: "info", title: "x", markets: ["NOPEUSDT"] },
    ]) {
      const answer = await send("POST", "/admin/announcements", body);
      expect([answer.status, answer.body.code], JSON.stringify(body)).toEqual([400, "VALIDATION_FAILED"]);
    }
    expect((await send("PATCH", "/admin/announcements/ann_0000000000000000", { title: "y" })).status).toBe(404);
    expect((await send("DELETE", "/admin/announcements/ann_0000000000000000")).status).toBe(404);
    expect((await send("POST", "/admin/announcements", { kind: "info", title: "x" }, { "Content-Type": "application/json" })).status).toBe(401);
    const held = ((await send("GET", "/admin/announcements")).body.announcements as Announcement[]).length;
    for (let i = held; i < 50; i++) expect((await send("POST", "/admin/announcements", { kind: "info", title: `news ${i}` })).status).toBe(201);
    const refused = await send("POST", "/admin/announcements", { kind: "info", title: "one too many" });
    expect([refused.status, refused.body.code]).toEqual([409, "TOO_MANY_ANNOUNCEMENTS"]);
    expect(((await status()).announcements as Announcement[]).length, "every kept one shows").toBe(50);
  });
});
