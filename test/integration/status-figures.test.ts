import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { statusFigures } from "../../src/metrics/venue-figures";

describe("the status page's figures (docs/operations.md#status-page)", () => {
  it("a failed read is held as long as a good one: views meanwhile do not call every shard again (before: every view fanned out)", async () => {
    const now = Date.now();
    // A binding missing: the read fails.
    const failing = { ...env, METRICS_TOTALS: undefined } as unknown as Env;
    expect(await statusFigures(failing, now)).toBeNull();
    expect(await statusFigures(env, now + 4_999), "within 5 s of the failure: the failure, not a new fan-out").toBeNull();
    expect(await statusFigures(env, now + 5_000), "5 s after: read again").toMatchObject({ connections: expect.any(Number) });
  });
});
