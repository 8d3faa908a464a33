// The role a replicated partition's record gives this node (ADR 0007). Pure:
// replication-io/replica-manager.ts acts on it.

import type { ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";

export type Role =
  | { kind: "idle"; reason: string }
  | { kind: "lead"; epoch: number }
  | { kind: "follow"; epoch: number; leader: string };

/** The role a record gives `self` on `volumeId`. Pure. */
export function roleOf(record: ReplicaAssignment, self: string, volumeId: string): Role {
  if (!record.replicas.includes(self)) return { kind: "idle", reason: "not a replica" };
  // A data dir whose volume-id marker names another member or cluster
  // ("" here): its contents are someone else's; neither led nor written.
  if (volumeId === "") return { kind: "idle", reason: "the data dir holds a foreign volume-id marker" };
  if (record.leader === null) return { kind: "idle", reason: "offline: no leader" };
  if (record.leader !== self) return { kind: "follow", epoch: record.leaderEpoch, leader: record.leader };
  const entry = record.isr.find((m) => m.member === self);
  if (entry === undefined) return { kind: "idle", reason: "named leader outside the ISR" };
  if (entry.volumeId !== volumeId)
    return { kind: "idle", reason: "named leader on a volume this node no longer has" };
  return { kind: "lead", epoch: record.leaderEpoch };
}

export const sameRole = (a: Role, b: Role): boolean =>
  a.kind === b.kind &&
  (a.kind === "idle" ||
    (a.kind === "lead" && b.kind === "lead" && a.epoch === b.epoch) ||
    (a.kind === "follow" && b.kind === "follow" && a.epoch === b.epoch && a.leader === b.leader));
