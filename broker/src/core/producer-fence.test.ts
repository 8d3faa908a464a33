import { describe, expect, it } from "vitest";
import {
  afterRead,
  barrierDeadline,
  barrierWaitMs,
  confirmedByAll,
  confirmTargets,
  expired,
  leaseDecision,
  leaseValidUntil,
  noLease,
  readFailureHoldMs,
} from "./producer-fence.ts";
import type { MemberView } from "./routing.ts";

describe("the fence lease", () => {
  it("lasts leaseMs from the START of the latest successful read; no read, no lease", () => {
    expect(leaseValidUntil(noLease(), 1_000)).toBe(Number.NEGATIVE_INFINITY);
    expect(leaseDecision(noLease(), 0, 1_000, true, false)).toBe("read");
    const s = afterRead(noLease(), 100);
    expect(leaseValidUntil(s, 1_000)).toBe(1_100);
    expect(leaseDecision(s, 500, 1_000, true, false)).toBe("valid");
    expect(leaseDecision(s, 1_099, 1_000, true, true)).toBe("valid");
    expect(leaseDecision(s, 1_100, 1_000, true, false)).toBe("read");
  });

  it("a read that started earlier but finished later does not move the lease back", () => {
    const late = afterRead(afterRead(noLease(), 500), 200);
    expect(late.readStartedAt).toBe(500);
  });

  it("in its last quarter: valid, and a background read is due unless one runs", () => {
    const s = afterRead(noLease(), 0);
    expect(leaseDecision(s, 749, 1_000, true, false)).toBe("valid");
    expect(leaseDecision(s, 751, 1_000, true, false)).toBe("valid-refresh");
    expect(leaseDecision(s, 751, 1_000, true, true)).toBe("valid");
  });

  it("an untrusted view (this broker not yet in its member list) always reads", () => {
    const s = afterRead(noLease(), 0);
    expect(leaseDecision(s, 1, 1_000, false, false)).toBe("read");
  });

  it("expired on purpose: reads that started before do not count, later ones do", () => {
    const s = expired(afterRead(noLease(), 100), 300);
    expect(leaseValidUntil(s, 1_000)).toBe(Number.NEGATIVE_INFINITY);
    expect(leaseDecision(s, 400, 1_000, true, false)).toBe("read");
    const again = afterRead(s, 300);
    expect(leaseValidUntil(again, 1_000)).toBe(1_300);
    // trustFrom never moves back.
    expect(expired(again, 200).trustFrom).toBe(300);
  });
});

describe("after a failed read", () => {
  it("holds the refusal for up to 1 s (the Retry-After), a quarter of a shorter lease", () => {
    expect(readFailureHoldMs(10_000)).toBe(1_000);
    expect(readFailureHoldMs(600)).toBe(150);
    expect(readFailureHoldMs(1)).toBe(0);
  });
});

describe("the re-init barrier", () => {
  it("waits the lease plus the clock allowance from the moment the bump was durable", () => {
    expect(barrierWaitMs(10_000)).toBe(10_550);
    expect(barrierWaitMs(1)).toBe(52);
    expect(barrierDeadline(5_000, 10_000)).toBe(15_550);
  });

  it("covers every reader whose read missed the bump: its lease ends before the barrier does", () => {
    // The bump committed at some instant <= durableAt; a read that missed it started before that.
    const durableAt = 7_000;
    const leaseMs = 2_000;
    for (const readStart of [0, 4_999, 6_999]) {
      const reader = afterRead(noLease(), readStart);
      // Even with the reader's clock 4 % slower (its leaseMs lasts 4 % longer in real time).
      const readerEndsReal = readStart + leaseMs * 1.04;
      expect(readerEndsReal).toBeLessThan(barrierDeadline(durableAt, leaseMs));
      expect(leaseDecision(reader, barrierDeadline(durableAt, leaseMs), leaseMs, true, false)).toBe("read");
    }
  });

  const members = (...ms: Array<Partial<MemberView> & { id: string }>): MemberView[] =>
    ms.map((m) => ({ address: `${m.id}:7942`, state: "Active", ...m }));

  it("asks every other member but Removed ones, Down ones included", () => {
    const plan = confirmTargets(
      members(
        { id: "a" },
        { id: "b", state: "Down" },
        { id: "c", state: "Removed" },
        { id: "d", state: "Joining", clusterAddress: "d:9000" },
        { id: "e", state: "Maintenance" },
      ),
      "a",
    );
    expect(plan).toEqual({ addresses: ["b:7943", "d:9000", "e:7943"], complete: true });
  });

  it("a member without an address makes the plan incomplete: only the lease covers it", () => {
    const plan = confirmTargets(members({ id: "a" }, { id: "b", address: "" }), "a");
    expect(plan.complete).toBe(false);
    expect(confirmedByAll(plan, [], 3, 1, 1)).toBe(false);
  });

  it("ends early only when every member answered with the epoch, on an unchanged, newest membership", () => {
    const plan = confirmTargets(members({ id: "a" }, { id: "b" }, { id: "c" }), "a");
    const ok = { epoch: 3, membershipEpoch: 7 };
    expect(confirmedByAll(plan, [ok, ok], 3, 7, 7)).toBe(true);
    // A member that holds a newer epoch still fences the old one.
    expect(confirmedByAll(plan, [ok, { epoch: 4, membershipEpoch: 7 }], 3, 7, 7)).toBe(true);
    // One did not answer (undefined), or answered a lower epoch.
    expect(confirmedByAll(plan, [ok, undefined], 3, 7, 7)).toBe(false);
    expect(confirmedByAll(plan, [ok, { epoch: 2, membershipEpoch: 7 }], 3, 7, 7)).toBe(false);
    // A member knows a newer membership (the asker's list may lack a broker), or it changed meanwhile.
    expect(confirmedByAll(plan, [ok, { epoch: 3, membershipEpoch: 8 }], 3, 7, 7)).toBe(false);
    expect(confirmedByAll(plan, [ok, ok], 3, 7, 8)).toBe(false);
    // Alone in the cluster: nobody to ask, done.
    expect(confirmedByAll(confirmTargets(members({ id: "a" }), "a"), [], 3, 1, 1)).toBe(true);
  });
});
