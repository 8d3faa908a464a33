import type { ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";
import { fnv1a, rotate, sortIds } from "./assignment.ts";

// Replica placement for one replicated topic (ADR 0007 "Settings and
// placement"). Properties (tested):
// - a partition's replicas are distinct brokers;
// - with zone labels, a partition's replicas cover as many zones as there
//   are (up to the factor) before any zone gets a second one;
// - leaders of new partitions spread evenly (counts differ by at most one
//   on a fresh topic), and replicas spread by load after that;
// - stable: an existing replica stays while its broker is a member; a
//   partition keeps its leader, ISR and epoch (leadership changes are the
//   election's, plan/election.ts); a new replica joins outside the ISR and
//   enters it by catching up;
// - deterministic: ties break in broker order rotated by a hash of the topic.
//
// Brokers that are not members any more (Removed) leave the replica list;
// if one was the leader, the caller runs the election on the result.

export interface PlacementBroker {
  id: string;
  /** `topology.kubernetes.io/zone` of its node, when labelled. */
  zone?: string;
  /** May receive new replicas (Active). Others only keep what they hold. */
  active: boolean;
  /** The volume identity recorded in the member's status, when known. */
  volumeId?: string;
}

export interface PlacementInput {
  topic: string;
  partitions: number;
  replicationFactor: number;
  /** Every member (any state but Removed). */
  brokers: readonly PlacementBroker[];
  previous: readonly ReplicaAssignment[];
}

export interface PlacementResult {
  assignments: ReplicaAssignment[];
  changed: boolean;
  /** Partitions with fewer replicas than the factor (not enough Active brokers). */
  underReplicated: number[];
  /** Partitions whose leader left the member list: the election must run on them. */
  needElection: number[];
}

export function placeReplicas(input: PlacementInput): PlacementResult {
  const members = new Map(input.brokers.map((b) => [b.id, b]));
  const order = rotate(sortIds(input.brokers.filter((b) => b.active).map((b) => b.id)), fnv1a(input.topic));
  const rank = new Map(order.map((id, i) => [id, i]));
  const replicaLoad = new Map<string, number>();
  const leaderLoad = new Map<string, number>();
  const bump = (m: Map<string, number>, id: string) => m.set(id, (m.get(id) ?? 0) + 1);

  const prev = new Map<number, ReplicaAssignment>();
  for (const a of input.previous)
    if (a.partition >= 0 && a.partition < input.partitions && !prev.has(a.partition))
      prev.set(a.partition, a);

  // Keep what is still valid first, so loads count it before anything new is placed.
  const kept = new Map<number, ReplicaAssignment>();
  const needElection: number[] = [];
  for (const [p, a] of prev) {
    const replicas = [...new Set(a.replicas)].filter((id) => members.has(id));
    const trimmed = trim(replicas, a.leader, input.replicationFactor);
    const isr = a.isr.filter((m) => trimmed.includes(m.member));
    const leader = a.leader !== null && trimmed.includes(a.leader) ? a.leader : null;
    if (a.leader !== null && leader === null) needElection.push(p);
    kept.set(p, { partition: p, leader: a.leader, replicas: trimmed, isr, leaderEpoch: a.leaderEpoch });
    for (const id of trimmed) bump(replicaLoad, id);
    if (leader !== null) bump(leaderLoad, leader);
  }

  const underReplicated: number[] = [];
  const assignments: ReplicaAssignment[] = [];
  for (let p = 0; p < input.partitions; p++) {
    const existing = kept.get(p);
    const replicas = existing ? [...existing.replicas] : [];
    let leader = existing?.leader ?? null;
    if (existing === undefined) {
      // A new partition: its leader first, the broker leading the fewest.
      const first = pick(
        order,
        replicas,
        members,
        (id) => [leaderLoad.get(id) ?? 0, replicaLoad.get(id) ?? 0],
        rank,
        false,
      );
      if (first !== undefined) {
        replicas.push(first);
        leader = first;
        bump(leaderLoad, first);
        bump(replicaLoad, first);
      }
    }
    while (replicas.length < input.replicationFactor) {
      const next = pick(
        order,
        replicas,
        members,
        (id) => [replicaLoad.get(id) ?? 0, leaderLoad.get(id) ?? 0],
        rank,
        true,
      );
      if (next === undefined) break;
      replicas.push(next);
      bump(replicaLoad, next);
    }
    if (replicas.length < input.replicationFactor) underReplicated.push(p);
    if (existing === undefined) {
      // Every replica of a new partition is empty, so all are in sync, on
      // the volumes the members report. An unknown volume ("") matches none:
      // that member cannot be elected until the leader records it.
      assignments.push({
        partition: p,
        leader,
        replicas,
        isr: replicas.map((member) => ({ member, volumeId: members.get(member)?.volumeId ?? "" })),
        leaderEpoch: 0,
      });
    } else {
      assignments.push({ ...existing, replicas });
    }
  }
  return {
    assignments,
    changed: !sameReplicaAssignments(input.previous, assignments),
    underReplicated,
    needElection,
  };
}

/** Drops replicas above the factor, never the leader, from the end of the preference list. */
function trim(replicas: string[], leader: string | null, rf: number): string[] {
  const out = [...replicas];
  for (let i = out.length - 1; i >= 0 && out.length > rf; i--) if (out[i] !== leader) out.splice(i, 1);
  return out;
}

/**
 * The best Active broker not already a replica: first (when zones apply) one
 * in a zone the partition does not use yet, then the lowest load tuple, then
 * the rotated order.
 */
function pick(
  order: readonly string[],
  taken: readonly string[],
  members: ReadonlyMap<string, PlacementBroker>,
  load: (id: string) => [number, number],
  rank: ReadonlyMap<string, number>,
  spreadZones: boolean,
): string | undefined {
  const usedZones = new Set(taken.map((id) => members.get(id)?.zone).filter((z) => z !== undefined));
  let best: string | undefined;
  let bestKey: number[] = [];
  for (const id of order) {
    if (taken.includes(id)) continue;
    const zone = members.get(id)?.zone;
    const zonePenalty = spreadZones && zone !== undefined && usedZones.has(zone) ? 1 : 0;
    const [a, b] = load(id);
    const k = [zonePenalty, a, b, rank.get(id) ?? 0];
    if (best === undefined || less(k, bestKey)) {
      best = id;
      bestKey = k;
    }
  }
  return best;
}

function less(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i++)
    if ((a[i] as number) !== (b[i] as number)) return (a[i] as number) < (b[i] as number);
  return false;
}

export function sameReplicaAssignments(
  a: readonly ReplicaAssignment[],
  b: readonly ReplicaAssignment[],
): boolean {
  const s = (x: readonly ReplicaAssignment[]) =>
    JSON.stringify([...x].sort((p, q) => p.partition - q.partition));
  return s(a) === s(b);
}
