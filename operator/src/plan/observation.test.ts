import { describe, expect, it } from "vitest";
import { judgeObservations, trackReachability } from "./observation.ts";

const NOW = 1_000_000;

describe("judgeObservations", () => {
  it("trusts healthy caches that never failed", () => {
    expect(
      judgeObservations([{ name: "pods", healthy: true, recoveredAtMs: undefined }], NOW, 60_000),
    ).toEqual({
      trusted: true,
      reason: undefined,
      retryAfterMs: undefined,
    });
  });

  it("does not trust a cache whose watch is failing (the API server is away)", () => {
    const t = judgeObservations([{ name: "pods", healthy: false, recoveredAtMs: undefined }], NOW, 60_000);
    expect(t.trusted).toBe(false);
    expect(t.reason).toContain("pods");
  });

  it("after a recovery, waits out the settling time and says how long is left", () => {
    const t = judgeObservations([{ name: "pods", healthy: true, recoveredAtMs: NOW - 20_000 }], NOW, 60_000);
    expect(t).toMatchObject({ trusted: false, retryAfterMs: 40_000 });
    expect(
      judgeObservations([{ name: "pods", healthy: true, recoveredAtMs: NOW - 60_000 }], NOW, 60_000).trusted,
    ).toBe(true);
  });
});

describe("trackReachability", () => {
  it("keeps the start of an unbroken run of failures; an answer ends it; no probe, no evidence", () => {
    const a = trackReachability(
      new Map(),
      new Map([
        ["m0", false],
        ["m1", true],
      ]),
      NOW,
    );
    expect([...a]).toEqual([["m0", NOW]]);
    const b = trackReachability(
      a,
      new Map([
        ["m0", false],
        ["m1", false],
      ]),
      NOW + 5_000,
    );
    expect([...b]).toEqual([
      ["m0", NOW],
      ["m1", NOW + 5_000],
    ]);
    const c = trackReachability(b, new Map([["m0", true]]), NOW + 10_000);
    expect(c.size).toBe(0);
  });
});
