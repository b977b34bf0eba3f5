import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Tick } from "../../src/writes/tick";

describe("the tick: work staged between commits is written together, at most once a tick (src/writes/tick.ts)", () => {
  let now = 1_000_000;
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("the first work after a quiet spell commits at once; work within the tick waits and commits together; a throw fails every waiter of that commit", async () => {
    const commits: number[] = [];
    let staged = 0;
    let fail = false;
    const tick = new Tick(
      () => 100,
      () => {
        commits.push(staged);
        staged = 0;
        if (fail) throw new Error("storage failed");
        return undefined;
      },
      () => now,
    );
    const answered: string[] = [];
    const stage = (name: string) => {
      staged += 1;
      return tick.committed().then(
        () => answered.push(`${name} ok`),
        () => answered.push(`${name} failed`),
      );
    };
    await stage("a");
    expect(commits, "the first commits at once").toEqual([1]);
    now += 10;
    const b = stage("b");
    now += 30;
    const c = stage("c");
    await Promise.resolve();
    expect(commits, "b and c wait for the tick").toEqual([1]);
    expect(tick.pending, "work is staged").toBe(true);
    now += 60;
    await vi.advanceTimersByTimeAsync(100);
    await Promise.all([b, c]);
    expect(commits, "b and c in one commit").toEqual([1, 2]);
    now += 50;
    fail = true;
    const d = stage("d");
    tick.commitNow();
    await d;
    expect(answered, "answers, in order; d's commit threw").toEqual(["a ok", "b ok", "c ok", "d failed"]);
  });
});
