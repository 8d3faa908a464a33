import { describe, expect, it } from "vitest";
import { bodyRateVerdict } from "./body-rate.ts";

const o = { minBytesPerSecond: 1000, graceMs: 5000 };

describe("bodyRateVerdict", () => {
  it("lets any body through during the grace period", () => {
    expect(bodyRateVerdict(0, 4999, o)).toEqual({ ok: true, recheckInMs: 2 });
  });
  it("refuses a trickle once the grace is over", () => {
    // A byte every 4.5 s: 2 bytes after 9 s.
    expect(bodyRateVerdict(2, 9000, o)).toEqual({ ok: false });
  });
  it("keeps a body at the floor and says when its bytes run out", () => {
    expect(bodyRateVerdict(10_000, 6000, o)).toEqual({ ok: true, recheckInMs: 4001 });
  });
  it("is off at rate 0", () => {
    expect(bodyRateVerdict(0, 1e9, { minBytesPerSecond: 0, graceMs: 0 }).ok).toBe(true);
  });
});
