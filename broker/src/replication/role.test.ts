import { describe, expect, it } from "vitest";
import type { ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";
import { roleOf, sameRole } from "./role.ts";

const record = (over: Partial<ReplicaAssignment> = {}): ReplicaAssignment => ({
  partition: 0,
  leader: "a",
  replicas: ["a", "b", "c"],
  isr: [
    { member: "a", volumeId: "va" },
    { member: "b", volumeId: "vb" },
  ],
  leaderEpoch: 4,
  ...over,
});

describe("roleOf", () => {
  it("leads only when named leader and its ISR entry names its current volume", () => {
    expect(roleOf(record(), "a", "va")).toEqual({ kind: "lead", epoch: 4 });
    expect(roleOf(record(), "a", "v-new")).toMatchObject({ kind: "idle" });
    expect(roleOf(record({ isr: [{ member: "b", volumeId: "vb" }] }), "a", "va")).toMatchObject({
      kind: "idle",
    });
  });

  it("follows the named leader at its epoch, in or out of the ISR, on any volume", () => {
    expect(roleOf(record(), "b", "vb")).toEqual({ kind: "follow", epoch: 4, leader: "a" });
    expect(roleOf(record(), "c", "vc")).toEqual({ kind: "follow", epoch: 4, leader: "a" });
    expect(roleOf(record(), "b", "v-empty")).toEqual({ kind: "follow", epoch: 4, leader: "a" });
  });

  it("does nothing offline, outside the replicas, or on a foreign volume", () => {
    expect(roleOf(record({ leader: null }), "b", "vb")).toMatchObject({ kind: "idle" });
    expect(roleOf(record(), "d", "vd")).toMatchObject({ kind: "idle" });
    expect(roleOf(record(), "a", "")).toMatchObject({ kind: "idle" });
    expect(roleOf(record(), "b", "")).toMatchObject({ kind: "idle" });
  });

  it("a role is the same only at the same epoch and leader", () => {
    expect(sameRole({ kind: "lead", epoch: 1 }, { kind: "lead", epoch: 1 })).toBe(true);
    expect(sameRole({ kind: "lead", epoch: 1 }, { kind: "lead", epoch: 2 })).toBe(false);
    expect(
      sameRole({ kind: "follow", epoch: 1, leader: "a" }, { kind: "follow", epoch: 1, leader: "b" }),
    ).toBe(false);
    expect(sameRole({ kind: "idle", reason: "x" }, { kind: "idle", reason: "y" })).toBe(true);
  });
});
