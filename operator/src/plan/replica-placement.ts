import type { IsrMember, ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";
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
// - deterministic: ties break in broker order rotated by a hash of the topic;
// - fan-out children (avoidLeaders): a new partition's leader is another
//   Active broker than the one leading the parent's matching partition when
//   there is one (Narad places a child away from its parent); that broker
//   may still hold a follower replica.
//
// Brokers that are not members any more (Removed) leave the replica list;
// if one was the leader, the caller runs the election on the result.
//
// A leaving broker (decommissioning, or on a volume it will never serve)
// keeps its replicas, but they do not count toward the factor: a
// replacement is added beside each, outside the ISR. Dropping the leaving
// replica once the replacement is in sync is the reassignment's decision
// (plan/topic-replication.ts), not placement's.

export interface PlacementBroker {
  id: string;
  /** `topology.kubernetes.io/zone` of its node, when labelled. */
  zone?: string;
  /** May receive new replicas (Active). Others only keep what they hold. */
  active: boolean;
  /** The volume identity recorded in the member's status, when known. */
  volumeId?: string;
  /** Its replicas are being moved off: they do not count toward the factor (see above). */
  leaving?: boolean;
}

export interface PlacementInput {
  topic: string;
  partitions: number;
  replicationFactor: number;
  /** Every member (any state but Removed). */
  brokers: readonly PlacementBroker[];
  previous: readonly ReplicaAssignment[];
  /** partition → a broker its leader should not be, when another can (a fan-out child's parent leader). */
  avoidLeaders?: ReadonlyMap<number, string>;
}

export interface PlacementResult {
  assignments: ReplicaAssignment[];
  changed: boolean;
  /** Partitions with fewer replicas than the factor, leaving ones not counted (not enough Active brokers). */
  underReplicated: number[];
  /** Partitions whose leader left the member list: the election must run on them. */
  needElection: number[];
}

export function placeReplicas(input: PlacementInput): PlacementResult {
  const members = new Map(input.brokers.map((b) => [b.id, b]));
  const staying = (ids: readonly string[]) => ids.filter((id) => members.get(id)?.leaving !== true).length;
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
    const trimmed = trim(
      replicas,
      a.leader,
      input.replicationFactor,
      (id) => members.get(id)?.leaving === true,
    );
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
      // A new partition: its leader first, the broker leading the fewest
      // (away from the parent's leader when another broker can lead).
      const leaderKey = (id: string): [number, number] => [leaderLoad.get(id) ?? 0, replicaLoad.get(id) ?? 0];
      const avoid = input.avoidLeaders?.get(p);
      const first =
        (avoid === undefined
          ? undefined
          : pick(order, [...replicas, avoid], members, leaderKey, rank, false)) ??
        pick(order, replicas, members, leaderKey, rank, false);
      if (first !== undefined) {
        replicas.push(first);
        leader = first;
        bump(leaderLoad, first);
        bump(replicaLoad, first);
      }
    }
    while (staying(replicas) < input.replicationFactor) {
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
    if (staying(replicas) < input.replicationFactor) underReplicated.push(p);
    if (existing === undefined) {
      // Every replica of a new partition is empty, so all are in sync, on
      // the volumes the members report. A member whose volume is not known
      // is left out: it joins when the leader records it.
      const isr: IsrMember[] = [];
      for (const member of replicas) {
        const volumeId = members.get(member)?.volumeId;
        if (volumeId !== undefined && volumeId !== "") isr.push({ member, volumeId });
      }
      assignments.push({ partition: p, leader, replicas, isr, leaderEpoch: 0 });
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

/**
 * Drops staying replicas above the factor, never the leader, from the end of
 * the preference list (leaving ones are not counted and not dropped here).
 */
function trim(
  replicas: string[],
  leader: string | null,
  rf: number,
  leaving: (id: string) => boolean,
): string[] {
  const out = [...replicas];
  const staying = () => out.filter((id) => !leaving(id)).length;
  for (let i = out.length - 1; i >= 0 && staying() > rf; i--)
    if (out[i] !== leader && !leaving(out[i] as string)) out.splice(i, 1);
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
  // A leaving replica's zone is free again: its replacement may take it.
  const usedZones = new Set(
    taken
      .filter((id) => members.get(id)?.leaving !== true)
      .map((id) => members.get(id)?.zone)
      .filter((z) => z !== undefined),
  );
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
