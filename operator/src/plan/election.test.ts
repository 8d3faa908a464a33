import { describe, expect, it } from "vitest";
import type { ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";
import { type MemberHealth, planElection } from "./election.ts";

const rec = (over: Partial<ReplicaAssignment> = {}): ReplicaAssignment => ({
  partition: 0,
  leader: "a",
  replicas: ["a", "b", "c"],
  isr: [
    { member: "a", volumeId: "va" },
    { member: "b", volumeId: "vb" },
    { member: "c", volumeId: "vc" },
  ],
  leaderEpoch: 4,
  ...over,
});

const health =
  (down: string[], volumes: Record<string, string | undefined> = {}) =>
  (m: string): MemberHealth => ({ down: down.includes(m), volumeId: m in volumes ? volumes[m] : `v${m}` });

describe("planElection", () => {
  it("keeps a live leader on its volume", () => {
    expect(planElection(rec(), health(["b", "c"]), 2)).toEqual({ kind: "keep" });
  });

  it("elects the first live ISR member in replica order, bumps the epoch, drops the old leader", () => {
    const d = planElection(rec(), health(["a"]), 2);
    expect(d.kind).toBe("elect");
    if (d.kind !== "elect") return;
    expect(d.next.leader).toBe("b");
    expect(d.next.leaderEpoch).toBe(5);
    expect(d.next.isr.map((m) => m.member)).toEqual(["b", "c"]);
    expect(d.next.replicas).toEqual(["a", "b", "c"]);
  });

  it("never elects outside the ISR (no unclean election): offline instead", () => {
    const r = rec({ isr: [{ member: "a", volumeId: "va" }] });
    const d = planElection(r, health(["a"]), 2);
    expect(d.kind).toBe("offline");
    if (d.kind !== "offline") return;
    expect(d.next.leader).toBeNull();
    expect(d.next.leaderEpoch).toBe(5);
    // The Down leader stays in the ISR: it is the copy that holds everything.
    expect(d.next.isr).toEqual([{ member: "a", volumeId: "va" }]);
    // Offline and nothing changed: no new epoch every pass.
    expect(planElection(d.next, health(["a"]), 2)).toEqual({ kind: "keep" });
    // It returns: elected again.
    const back = planElection(d.next, health([]), 2);
    expect(back.kind).toBe("elect");
    if (back.kind === "elect") expect(back.next).toMatchObject({ leader: "a", leaderEpoch: 6 });
  });

  it("does not elect a member back on another volume, and drops its entry", () => {
    const d = planElection(rec(), health(["a"], { b: "vb2" }), 2);
    expect(d.kind).toBe("elect");
    if (d.kind !== "elect") return;
    expect(d.next.leader).toBe("c");
    // b's entry goes (its volume is gone); a stays, or one copy would be electable.
    expect(d.next.isr.map((m) => m.member)).toEqual(["a", "c"]);
  });

  it("keeps a Down old leader in the ISR when removing it would go below min_insync_replicas", () => {
    const r = rec({
      isr: [
        { member: "a", volumeId: "va" },
        { member: "b", volumeId: "vb" },
      ],
    });
    const d = planElection(r, health(["a"]), 2);
    expect(d).toMatchObject({ kind: "elect", next: { leader: "b", leaderEpoch: 5 } });
    if (d.kind === "elect") expect(d.next.isr.map((m) => m.member)).toEqual(["a", "b"]);
    const one = planElection(r, health(["a"]), 1);
    if (one.kind === "elect") expect(one.next.isr.map((m) => m.member)).toEqual(["b"]);
  });

  it("replaces a leader that came back on a fresh volume although it is not Down", () => {
    const d = planElection(rec(), health([], { a: "va-new" }), 2);
    expect(d.kind).toBe("elect");
    if (d.kind === "elect") {
      expect(d.next.leader).toBe("b");
      expect(d.next.isr.map((m) => m.member)).toEqual(["b", "c"]);
    }
  });

  it("treats an unknown volume as not matching", () => {
    const d = planElection(rec(), health(["a"], { b: undefined, c: undefined }), 2);
    expect(d.kind).toBe("offline");
    if (d.kind === "offline") expect(d.next.isr).toEqual([{ member: "a", volumeId: "va" }]);
  });

  it("a leader missing from the ISR is replaced", () => {
    const d = planElection(rec({ leader: "x" }), health([]), 2);
    expect(d).toMatchObject({ kind: "elect", next: { leader: "a", leaderEpoch: 5 } });
  });
});
