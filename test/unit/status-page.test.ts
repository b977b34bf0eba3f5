import { describe, expect, it } from "vitest";
import type { StatusFigures } from "../../src/metrics/venue-figures";
import { headline, MOST_NAMED, StatusPage, type VenueStatusBody } from "../../src/pages/status-page";

const now = Date.UTC(2026, 10, 25, 12, 0);
const base: VenueStatusBody = {
  serverTime: now,
  staleAfterMs: 60_000,
  trading: 2_210,
  halted: 2,
  stale: 2_203,
  staleMarkets: [...Array.from({ length: 2_200 }, (_, i) => `V${i}USDT`), "XRPUSDT", "SOLBTC", "ADAUSDT"],
  haltedMarkets: ["LUNAUSDT", "FTTUSDT"],
  status: "degraded",
  announcements: [{ id: "a1", kind: "incident", title: "BTC feed delayed", startsAt: now - 60_000, endsAt: null, createdAt: now - 60_000 }],
} as unknown as VenueStatusBody;

describe("the status page at a venue's size (docs/operations.md#status-page)", () => {
  it("the headline names the reasons: the running incident and how many feeds are silent", () => {
    expect(headline(base)).toBe("Degraded: incident: BTC feed delayed; 2,203 of 2,210 trading markets' feeds are silent");
  });

  it("names the markets gone silent with since when, most recent first, then counts the never-updated and the rest", async () => {
    const lastUpdates = new Map<string, number | null>([
      ["XRPUSDT", now - 5 * 60_000],
      ["SOLBTC", now - 3 * 3_600_000],
      ["ADAUSDT", now - 90_000],
    ]);
    const html = String(await StatusPage({ status: base, lastUpdates, figures: null }));
    const silent = [...html.matchAll(/data-silent="(\w+)"/g)].map((m) => m[1]);
    expect(silent, "most recently silent first").toEqual(["ADAUSDT", "XRPUSDT", "SOLBTC"]);
    expect(html).toContain("silent since 2026-11-25 11:55 UTC (5 min)");
    expect(html).toContain("silent since 2026-11-25 09:00 UTC (3 h 0 min)");
    expect(html).toContain("No update since they were listed: 2,200");
    expect(html).toContain(`… and ${(2_200 - MOST_NAMED).toLocaleString("en")} more`);
    expect(html, "halted, named").toMatch(/Halted by the operator: 2[\s\S]*FTTUSDT, LUNAUSDT/);
    expect(html).toContain('<span data-figure="trading-normally">7</span> markets are trading normally');
    expect(html.indexOf("Feeds gone silent"), "the exceptions before the announcements").toBeLessThan(html.indexOf("Announcements"));
  });

  it("the streams' figures: each value in its cell, an empty list as none", async () => {
    const figure = (html: string, name: string) => new RegExp(`data-figure="${name}">([^<]*)<`).exec(html)?.[1];
    const quiet = { connections: 0, deliveryP50: 0.012, deliveryP99: 0.05, ackP99: 0.08, marketFailures: {}, storageWarnings: {}, failingFiles: [] };
    const calm = String(await StatusPage({ status: base, lastUpdates: new Map(), figures: quiet as unknown as StatusFigures }));
    expect(["connections", "market-failures", "storage-warnings", "failing-files"].map((name) => figure(calm, name))).toEqual(["0", "none", "none", "none"]);
    const busy = { ...quiet, connections: 12, marketFailures: { BTCUSDT: 3 }, storageWarnings: { 4: "98" } };
    const html = String(await StatusPage({ status: base, lastUpdates: new Map(), figures: busy as unknown as StatusFigures }));
    expect([figure(html, "connections"), figure(html, "market-failures"), figure(html, "storage-warnings")]).toEqual([
      "12",
      "BTCUSDT (3)",
      "group 4 (full: taking no batches)",
    ]);
  });
});
