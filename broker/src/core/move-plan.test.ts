import { describe, expect, it } from "vitest";
import { type CatchUpLimits, catchUpStep, copyComplete, freshCatchUp, planCopy } from "./move-plan.ts";

const MiB = 1024 * 1024;

describe("planCopy", () => {
  it("fetches every byte of a fresh copy in chunks, segment by segment", () => {
    const plan = planCopy(
      [
        { base: 0, bytes: 2.5 * MiB },
        { base: 900, bytes: 10 },
      ],
      [],
      MiB,
    );
    expect(plan.fetch).toEqual([
      { base: 0, position: 0, length: MiB },
      { base: 0, position: MiB, length: MiB },
      { base: 0, position: 2 * MiB, length: 0.5 * MiB },
      { base: 900, position: 0, length: 10 },
    ]);
    expect(plan.remainingBytes).toBe(2.5 * MiB + 10);
    expect(plan.remove).toEqual([]);
    expect(plan.reset).toEqual([]);
  });

  it("keeps a staged prefix and fetches only the tail", () => {
    const plan = planCopy([{ base: 0, bytes: 300 }], [{ base: 0, bytes: 120 }], MiB);
    expect(plan.fetch).toEqual([{ base: 0, position: 120, length: 180 }]);
    expect(plan.remainingBytes).toBe(180);
  });

  it("removes staged segments retention deleted on the source, resets ones longer than the source", () => {
    const plan = planCopy(
      [
        { base: 50, bytes: 100 },
        { base: 80, bytes: 40 },
      ],
      [
        { base: 0, bytes: 70 },
        { base: 50, bytes: 100 },
        { base: 80, bytes: 60 },
      ],
      MiB,
    );
    expect(plan.remove).toEqual([0]);
    expect(plan.reset).toEqual([80]);
    expect(plan.fetch).toEqual([{ base: 80, position: 0, length: 40 }]);
  });

  it("has nothing to do when the copy is complete", () => {
    const src = [
      { base: 0, bytes: 5 },
      { base: 7, bytes: 0 },
    ];
    const plan = planCopy(src, src, MiB);
    expect(plan.fetch).toEqual([]);
    expect(plan.remainingBytes).toBe(0);
    expect(copyComplete(src, src)).toBe(true);
    expect(copyComplete(src, [{ base: 0, bytes: 5 }])).toBe(false);
    expect(copyComplete(src, [...src.slice(0, 1), { base: 7, bytes: 1 }])).toBe(false);
  });

  it("refuses a bad chunk size", () => {
    expect(() => planCopy([], [], 0)).toThrow(RangeError);
  });
});

describe("catchUpStep", () => {
  const limits: CatchUpLimits = { closeEnoughBytes: 4 * MiB, maxRounds: 20, maxStalledRounds: 3 };

  it("freezes at once when already within 4 MiB", () => {
    expect(catchUpStep(freshCatchUp, 4 * MiB, limits).action).toBe("freeze");
  });

  it("copies while it gains, counting rounds", () => {
    let p = freshCatchUp;
    for (const remaining of [100 * MiB, 60 * MiB, 30 * MiB]) {
      const s = catchUpStep(p, remaining, limits);
      expect(s.action).toBe("copy");
      p = s.progress;
    }
    expect(p.rounds).toBe(3);
    expect(p.stalledRounds).toBe(0);
    expect(catchUpStep(p, 3 * MiB, limits).action).toBe("freeze");
  });

  it("freezes after 3 rounds in a row without progress", () => {
    let p = freshCatchUp;
    const actions: string[] = [];
    for (const remaining of [50 * MiB, 50 * MiB, 51 * MiB, 49 * MiB, 49 * MiB, 49 * MiB, 60 * MiB]) {
      const s = catchUpStep(p, remaining, limits);
      actions.push(s.action);
      if (s.action === "freeze") break;
      p = s.progress;
    }
    // 50 (start), 50 (stall 1), 51 (stall 2), 49 (progress: reset), 49 (1), 49 (2), 60 (3 → freeze)
    expect(actions).toEqual(["copy", "copy", "copy", "copy", "copy", "copy", "freeze"]);
  });

  it("freezes after 20 rounds even while gaining", () => {
    let p = freshCatchUp;
    let rounds = 0;
    for (let remaining = 1000 * MiB; ; remaining -= MiB) {
      const s = catchUpStep(p, remaining, limits);
      if (s.action === "freeze") break;
      p = s.progress;
      rounds++;
    }
    expect(rounds).toBe(20);
  });
});
