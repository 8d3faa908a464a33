import {
  type IsrMember,
  type ReplicaAssignment,
  resolveReplicationSettings,
} from "../../../packages/api/src/v1alpha1/replication.ts";
import type {
  MemberState,
  MemberStatus,
  NaradTopicStatus,
  PartitionAssignment,
} from "../../../packages/api/src/v1alpha1/types.ts";
import { type MemberHealth, planElection } from "./election.ts";
import { type PlacementBroker, placeReplicas } from "./replica-placement.ts";
import { isForeignVolume, servingVolume } from "./volumes.ts";

// The operator's side of replication for one topic (ADR 0007), one decision
// per reconcile from the topic's status and the cluster's members. Pure: the
// caller writes the result with a compare-and-swap on the topic's
// resourceVersion, so a decision made on a stale read fails and is made
// again from the fresh object.
//
// Per partition, in this order, at most one leader change per pass:
//   1. placement (replica-placement.ts): a new partition gets its replicas on
//      distinct Active brokers (zones first), leader = the first, epoch 0,
//      ISR = every replica on the volume its member reports; a partition with
//      a leaving replica gets a replacement beside it, outside the ISR;
//   2. election (election.ts): a leader that is Down, not in the ISR, on
//      another volume, or none (offline) is replaced by a live in-sync
//      replica, epoch + 1; none live: offline (leader null, epoch + 1);
//   3. reassignment: once every staying replica is in the ISR on its current
//      volume (the leader added the replacement when it caught up), a leaving
//      leader hands leadership to an in-sync staying replica (epoch + 1), and
//      on a later pass the leaving replicas leave `replicas` and `isr`;
//   4. handoff: a leader in Maintenance (a planned restart: the roll holds
//      it) hands leadership to an Active in-sync replica on its recorded
//      volume (epoch + 1, ISR unchanged), so the partition keeps a serving
//      leader while it restarts; none eligible: it stays the leader;
//   5. preferred leader: when replicas[0] is Active, in the ISR on its
//      recorded volume and settled, and does not lead, leadership returns to
//      it (epoch + 1, ISR unchanged), at most `balance.maxMoves` partitions
//      per pass and never while a roll or a scale runs (the caller says).
// The operator never adds to the ISR: only the leader does, when a replica
// has caught up. It removes entries only in the election (a lost leader, an
// entry of a volume that is gone) and when a leaving replica is dropped.

/** A member as the replication decisions see it (from NaradCluster status.members). */
export interface ReplicaMemberView {
  id: string;
  state: MemberState;
  /** status.members[].volumeId as recorded (volumes.ts). */
  volumeId?: string | undefined;
  /** `topology.kubernetes.io/zone` of its pod's node, when labelled. */
  zone?: string | undefined;
  /**
   * A Decommissioning or Maintenance member whose broker failed for the Down
   * grace (status.members[].failedSince, members.ts): it keeps its state, but
   * elections treat it as Down.
   */
  failed?: boolean | undefined;
}

/** The view of a member as recorded in NaradCluster status.members (zone unknown). */
export function replicaMemberView(m: MemberStatus): ReplicaMemberView {
  return {
    id: m.id,
    state: m.state,
    volumeId: m.volumeId,
    ...(m.failedSince !== undefined ? { failed: true } : {}),
  };
}

// ---------------------------------------------------------------- settings

export type EffectiveReplication =
  | {
      ok: true;
      replicationFactor: number;
      minInsyncReplicas: number;
      /** A spec value that cannot be honoured (the recorded values stay in effect). */
      problem?: { reason: string; message: string } | undefined;
    }
  /** Not placed: the settings cannot be met (Ready=False with this reason). */
  | { ok: false; reason: string; message: string };

const SETTINGS_REASON = {
  invalid_replication_factor: "InvalidReplicationFactor",
  replication_factor_above_brokers: "ReplicationFactorAboveBrokers",
  invalid_min_insync_replicas: "InvalidMinInsyncReplicas",
} as const;

/**
 * The replication settings in effect for a topic. Recorded in status at the
 * first placement, so a later change of the cluster's size never changes a
 * default that was chosen. A topic placed before replication (assignments
 * without recorded settings) has one copy. `brokers`: the cluster's size
 * (NaradCluster spec.replicas).
 */
export function effectiveReplication(
  spec: { replicationFactor?: number | undefined; minInsyncReplicas?: number | undefined },
  status: NaradTopicStatus,
  brokers: number,
): EffectiveReplication {
  const recorded = status.replicationFactor;
  const placedBefore = recorded === undefined && (status.assignments?.length ?? 0) > 0;
  if (recorded !== undefined || placedBefore) {
    const rf = recorded ?? 1;
    const problems: string[] = [];
    if (spec.replicationFactor !== undefined && spec.replicationFactor !== rf)
      problems.push(
        placedBefore
          ? `spec.replicationFactor is ${spec.replicationFactor}, but the topic was placed with one copy before replication settings existed`
          : `spec.replicationFactor is ${spec.replicationFactor}, but ${rf} is in effect since placement`,
      );
    const fallbackMin = status.minInsyncReplicas ?? Math.min(2, rf);
    let min = spec.minInsyncReplicas ?? fallbackMin;
    if (!Number.isInteger(min) || min < 1 || min > rf) {
      problems.push(
        `spec.minInsyncReplicas ${spec.minInsyncReplicas} must be from 1 to the replication factor ${rf}; ${fallbackMin} stays in effect`,
      );
      min = fallbackMin;
    }
    return {
      ok: true,
      replicationFactor: rf,
      minInsyncReplicas: min,
      problem:
        problems.length === 0
          ? undefined
          : { reason: "InvalidReplicationSettings", message: problems.join("; ") },
    };
  }
  const r = resolveReplicationSettings({ ...spec, brokers });
  if (!r.ok) return { ok: false, reason: SETTINGS_REASON[r.code], message: r.message };
  return { ok: true, replicationFactor: r.replicationFactor, minInsyncReplicas: r.minInsyncReplicas };
}

// ---------------------------------------------------------------- members

/** Why a member's replicas are being moved off, or undefined when they stay. */
export function leavingReason(m: ReplicaMemberView | undefined): string | undefined {
  if (m === undefined) return "not a member";
  if (m.state === "Decommissioning") return "being decommissioned";
  if (m.state === "Removed") return "removed";
  if (isForeignVolume(m.volumeId)) return "on a foreign volume (never served)";
  return undefined;
}

/** Election health: Down (or gone), and the volume it serves (undefined: unknown or foreign). */
export function memberHealth(m: ReplicaMemberView | undefined): MemberHealth {
  return {
    down: m === undefined || m.state === "Down" || m.state === "Removed" || m.failed === true,
    volumeId: servingVolume(m?.volumeId),
  };
}

/**
 * May `id` take leadership of `r` without an election: Active (not failed,
 * not leaving), and in the recorded ISR on the volume it runs on now.
 */
export function canLeadNow(r: ReplicaAssignment, m: ReplicaMemberView | undefined): boolean {
  if (m === undefined || m.state !== "Active" || m.failed === true) return false;
  if (leavingReason(m) !== undefined) return false;
  const v = servingVolume(m.volumeId);
  return v !== undefined && r.isr.some((e) => e.member === m.id && e.volumeId === v);
}

/**
 * Where leadership of `r` goes when its leader hands it off before a planned
 * restart: the first replica (then ISR member) other than the leader that
 * can lead now (canLeadNow); undefined when none can (it stays led by the
 * restarting member). The roll asks the same question to know what it waits for.
 */
export function handoffTarget(
  r: ReplicaAssignment,
  members: ReadonlyMap<string, ReplicaMemberView>,
): string | undefined {
  const order = [...new Set([...r.replicas, ...r.isr.map((e) => e.member)])];
  return order.find((id) => id !== r.leader && canLeadNow(r, members.get(id)));
}

/** Why a member cannot take a new replica now, or undefined when it can. */
function ineligible(m: ReplicaMemberView): string | undefined {
  const leaving = leavingReason(m);
  if (leaving !== undefined) return `${m.id} is ${leaving}`;
  if (m.state !== "Active") return `${m.id} is ${m.state}`;
  if (servingVolume(m.volumeId) === undefined) return `${m.id}'s volume id is not known yet`;
  return undefined;
}

// ---------------------------------------------------------------- the plan

export type ElectionCause =
  | "leader_down"
  | "leader_volume"
  | "leader_not_in_isr"
  | "offline"
  | "leaving"
  /** Moved off a leader in Maintenance before its planned restart. */
  | "handoff"
  /** Moved back to the preferred leader (replicas[0]). */
  | "preferred";

export interface LeaderChange {
  partition: number;
  from: string | null;
  to: string | null;
  leaderEpoch: number;
  cause: ElectionCause;
  reason: string;
}

export interface ReplicatedTopicInput {
  /** The broker topic name (placement's tie-break hash). */
  topic: string;
  partitions: number;
  replicationFactor: number;
  minInsyncReplicas: number;
  /** The cluster's members (status.members, Removed included). */
  members: readonly ReplicaMemberView[];
  /** status.assignments as read. */
  previous: readonly PartitionAssignment[];
  /**
   * Preferred-leader balance: undefined or allowed false (a roll or a scale
   * runs) moves nothing. The preferred replica must have been able to lead
   * (canLeadNow) for settleMs, counted from `eligibleSince` ("partition/member"
   * → ms, kept by the caller from the plan's `balanceEligible`; absent: from
   * nowMs), so a broker that just came back, or flaps, does not pull
   * leadership at once.
   */
  balance?:
    | {
        allowed: boolean;
        maxMoves: number;
        nowMs: number;
        settleMs: number;
        eligibleSince?: ReadonlyMap<string, number> | undefined;
      }
    | undefined;
  /**
   * Fan-out child: partition → the member that owns (leads) the parent's
   * matching partition. A new partition's leader goes elsewhere when another
   * Active broker can take it (replica-placement.ts).
   */
  avoidLeaders?: ReadonlyMap<number, string> | undefined;
}

export interface ReplicatedTopicPlan {
  /** The records to write (owner = leader, "" while offline). */
  assignments: PartitionAssignment[];
  changed: boolean;
  /** New partitions placed this pass. */
  placed: number;
  /** Why partitions without a record were not placed (fewer eligible brokers than the factor). */
  waiting: string | undefined;
  leaderChanges: LeaderChange[];
  /** Replicas added this pass (replacements of leaving ones, or restoring the factor). */
  replicasAdded: Array<{ partition: number; member: string; replacing: string[] }>;
  /** Leaving replicas dropped this pass (their replacements are in sync). */
  replicasDropped: Array<{ partition: number; members: string[] }>;
  /** Partitions whose leaving replicas wait: for whom, or why. */
  reassigning: Array<{ partition: number; leaving: string[]; waitingFor: string }>;
  offline: number[];
  underReplicated: number[];
  /**
   * Partitions whose preferred leader could lead but does not, left for a
   * later pass (the per-pass limit, or it has not settled): recheck after
   * `balanceRecheckMs`.
   */
  balancePending: number[];
  /** When to look again for balancePending (undefined: nothing pending). */
  balanceRecheckMs: number | undefined;
  /** "partition/member" → since when its preferred replica could lead it: for the caller to keep. */
  balanceEligible: Map<string, number>;
}

export function planReplicatedTopic(input: ReplicatedTopicInput): ReplicatedTopicPlan {
  const byId = new Map(input.members.map((m) => [m.id, m]));
  const health = (id: string): MemberHealth => memberHealth(byId.get(id));
  const leaving = (id: string): boolean => leavingReason(byId.get(id)) !== undefined;
  const inSync = (r: ReplicaAssignment, id: string): boolean => {
    const v = health(id).volumeId;
    return v !== undefined && r.isr.some((e) => e.member === id && e.volumeId === v);
  };

  const brokers: PlacementBroker[] = input.members
    .filter((m) => m.state !== "Removed")
    .map((m) => {
      const volumeId = servingVolume(m.volumeId);
      return {
        id: m.id,
        active: ineligible(m) === undefined,
        ...(m.zone !== undefined ? { zone: m.zone } : {}),
        ...(volumeId !== undefined ? { volumeId } : {}),
        ...(leavingReason(m) !== undefined ? { leaving: true } : {}),
      };
    });
  const previous = new Map<number, ReplicaAssignment>();
  for (const a of input.previous) {
    const r = asReplicaAssignment(a);
    if (r !== undefined && !previous.has(a.partition)) previous.set(a.partition, r);
  }
  const placement = placeReplicas({
    topic: input.topic,
    partitions: input.partitions,
    replicationFactor: input.replicationFactor,
    brokers,
    previous: [...previous.values()],
    ...(input.avoidLeaders !== undefined ? { avoidLeaders: input.avoidLeaders } : {}),
  });

  const eligible = brokers.filter((b) => b.active).length;
  const unplaced = [...Array(input.partitions).keys()].filter((p) => !previous.has(p));
  let waiting: string | undefined;
  if (unplaced.length > 0 && eligible < input.replicationFactor) {
    const why = input.members.map(ineligible).filter((x): x is string => x !== undefined);
    waiting = `${unplaced.length} partition(s) need ${input.replicationFactor} replicas on distinct brokers and ${eligible} broker(s) can take one now${why.length > 0 ? ` (${why.join(", ")})` : ""}`;
  }

  const plan: ReplicatedTopicPlan = {
    assignments: [],
    changed: false,
    placed: 0,
    waiting,
    leaderChanges: [],
    replicasAdded: [],
    replicasDropped: [],
    reassigning: [],
    offline: [],
    underReplicated: [],
    balancePending: [],
    balanceRecheckMs: undefined,
    balanceEligible: new Map(),
  };
  let balanceBudget = input.balance?.allowed === true ? input.balance.maxMoves : 0;
  for (const placed of placement.assignments) {
    const p = placed.partition;
    const before = previous.get(p);
    if (before === undefined) {
      if (waiting !== undefined) continue;
      plan.placed++;
    } else {
      for (const member of placed.replicas)
        if (!before.replicas.includes(member))
          plan.replicasAdded.push({
            partition: p,
            member,
            replacing: placed.replicas.filter((id) => id !== member && leaving(id)),
          });
    }
    let r = placed;
    // Leaving replicas and members in a planned restart are the last choice:
    // electing one would mean moving leadership again soon.
    const lastChoice = (id: string) => leaving(id) || byId.get(id)?.state === "Maintenance";
    const change = elect(r, health, lastChoice, input.minInsyncReplicas);
    if (change !== undefined) {
      r = change.next;
      if (change.from !== change.to)
        plan.leaderChanges.push({
          partition: p,
          from: change.from,
          to: change.to,
          leaderEpoch: r.leaderEpoch,
          cause: change.cause,
          reason: change.reason,
        });
    } else if (r.leader !== null) {
      const before = r;
      r = reassign(r, plan, input.replicationFactor, health, leaving, inSync);
      if (r === before) r = handoff(r, plan, byId);
      if (r === before && input.balance !== undefined) {
        const b = preferred(r, byId, input.balance, plan.balanceEligible);
        if (b.kind === "move" && balanceBudget > 0) {
          balanceBudget--;
          r = b.next;
          plan.leaderChanges.push({
            partition: p,
            from: before.leader,
            to: r.leader,
            leaderEpoch: r.leaderEpoch,
            cause: "preferred",
            reason: `${r.leader} is the preferred leader (first replica), Active and in sync again`,
          });
        } else if (b.kind !== "none") {
          plan.balancePending.push(p);
          const wait = b.kind === "settling" ? b.waitMs : 0;
          plan.balanceRecheckMs = Math.min(plan.balanceRecheckMs ?? Number.POSITIVE_INFINITY, wait);
        }
      }
    }
    plan.assignments.push(toPartitionAssignment(r));
    if (r.leader === null) plan.offline.push(p);
    const live = r.replicas.filter((id) => !leaving(id) && inSync(r, id) && !health(id).down).length;
    if (live < input.replicationFactor) plan.underReplicated.push(p);
  }
  plan.changed = !sameRecords(input.previous, plan.assignments);
  return plan;
}

/** The election on one record, with leaving replicas tried last. Undefined: the leader stays. */
function elect(
  r: ReplicaAssignment,
  health: (id: string) => MemberHealth,
  lastChoice: (id: string) => boolean,
  minInsync: number,
):
  | { next: ReplicaAssignment; from: string | null; to: string | null; cause: ElectionCause; reason: string }
  | undefined {
  const ordered = {
    ...r,
    replicas: [...r.replicas.filter((id) => !lastChoice(id)), ...r.replicas.filter((id) => lastChoice(id))],
  };
  const d = planElection(ordered, health, minInsync);
  if (d.kind === "keep") return undefined;
  const next = { ...d.next, replicas: r.replicas };
  return { next, from: r.leader, to: next.leader, cause: causeOf(r, health), reason: d.reason };
}

function causeOf(r: ReplicaAssignment, health: (id: string) => MemberHealth): ElectionCause {
  if (r.leader === null) return "offline";
  const entry = r.isr.find((m) => m.member === r.leader);
  if (entry === undefined) return "leader_not_in_isr";
  const h = health(r.leader);
  if (h.volumeId === undefined || h.volumeId !== entry.volumeId) return "leader_volume";
  return "leader_down";
}

/** A leader in Maintenance hands leadership to a replica that can lead now (epoch + 1, ISR unchanged). */
function handoff(
  r: ReplicaAssignment,
  plan: ReplicatedTopicPlan,
  byId: ReadonlyMap<string, ReplicaMemberView>,
): ReplicaAssignment {
  if (r.leader === null || byId.get(r.leader)?.state !== "Maintenance") return r;
  const to = handoffTarget(r, byId);
  if (to === undefined) return r;
  const next = { ...r, leader: to, leaderEpoch: r.leaderEpoch + 1 };
  plan.leaderChanges.push({
    partition: r.partition,
    from: r.leader,
    to,
    leaderEpoch: next.leaderEpoch,
    cause: "handoff",
    reason: `leader ${r.leader} is in Maintenance (planned restart); ${to} (Active, in sync) leads meanwhile`,
  });
  return next;
}

type PreferredDecision =
  | { kind: "none" }
  | { kind: "move"; next: ReplicaAssignment }
  | { kind: "settling"; waitMs: number };

/**
 * Preferred-leader balance (Kafka's auto leader rebalance): replicas[0] leads
 * again once it has been able to lead (canLeadNow) for settleMs. Runs only
 * when no other change applies to the record (a leader in a planned restart
 * or leaving is the handoff's and the reassignment's). Records in `eligible`
 * since when it could.
 */
export function preferred(
  r: ReplicaAssignment,
  byId: ReadonlyMap<string, ReplicaMemberView>,
  balance: {
    allowed: boolean;
    nowMs: number;
    settleMs: number;
    eligibleSince?: ReadonlyMap<string, number> | undefined;
  },
  eligible: Map<string, number>,
): PreferredDecision {
  const want = r.replicas[0];
  if (!balance.allowed || r.leader === null || want === undefined || want === r.leader)
    return { kind: "none" };
  if (!canLeadNow(r, byId.get(want))) return { kind: "none" };
  const key = `${r.partition}/${want}`;
  const since = Math.min(balance.eligibleSince?.get(key) ?? balance.nowMs, balance.nowMs);
  eligible.set(key, since);
  const waited = balance.nowMs - since;
  if (waited < balance.settleMs) return { kind: "settling", waitMs: balance.settleMs - waited };
  return { kind: "move", next: { ...r, leader: want, leaderEpoch: r.leaderEpoch + 1 } };
}

/**
 * Leaving replicas: once every staying replica is in the ISR on its current
 * volume, leadership moves off a leaving leader (epoch + 1, this pass), or
 * else the leaving replicas are dropped from `replicas` and `isr`.
 */
function reassign(
  r: ReplicaAssignment,
  plan: ReplicatedTopicPlan,
  rf: number,
  health: (id: string) => MemberHealth,
  leaving: (id: string) => boolean,
  inSync: (r: ReplicaAssignment, id: string) => boolean,
): ReplicaAssignment {
  const gone = r.replicas.filter((id) => leaving(id));
  if (gone.length === 0) return r;
  const staying = r.replicas.filter((id) => !leaving(id));
  const p = r.partition;
  if (staying.length < rf) {
    plan.reassigning.push({
      partition: p,
      leaving: gone,
      waitingFor: `a broker to take a replacement (${staying.length} of ${rf} replicas stay)`,
    });
    return r;
  }
  const behind = staying.filter((id) => !inSync(r, id));
  if (behind.length > 0) {
    plan.reassigning.push({
      partition: p,
      leaving: gone,
      waitingFor: `${behind.join(", ")} to be in sync (the leader adds a replica to the ISR once it has caught up)`,
    });
    return r;
  }
  if (r.leader !== null && gone.includes(r.leader)) {
    const to = staying.find((id) => !health(id).down);
    if (to === undefined) {
      plan.reassigning.push({ partition: p, leaving: gone, waitingFor: "a live in-sync replica to lead" });
      return r;
    }
    const next = { ...r, leader: to, leaderEpoch: r.leaderEpoch + 1 };
    plan.leaderChanges.push({
      partition: p,
      from: r.leader,
      to,
      leaderEpoch: next.leaderEpoch,
      cause: "leaving",
      reason: `leader ${r.leader} is leaving; ${to} (in sync) elected`,
    });
    return next;
  }
  plan.replicasDropped.push({ partition: p, members: gone });
  return { ...r, replicas: staying, isr: r.isr.filter((e: IsrMember) => !gone.includes(e.member)) };
}

/** A replicated record from status (all four fields set), or undefined for a single-copy one. */
export function asReplicaAssignment(a: PartitionAssignment): ReplicaAssignment | undefined {
  if (a.replicas === undefined) return undefined;
  return {
    partition: a.partition,
    leader: a.leader ?? null,
    replicas: [...a.replicas],
    isr: (a.isr ?? []).map((e) => ({ member: e.member, volumeId: e.volumeId })),
    leaderEpoch: a.leaderEpoch ?? 0,
  };
}

/** The status record: owner = leader for readers that know only owners, "" while offline. */
export function toPartitionAssignment(r: ReplicaAssignment): PartitionAssignment {
  return {
    partition: r.partition,
    owner: r.leader ?? "",
    leader: r.leader,
    replicas: r.replicas,
    isr: r.isr,
    leaderEpoch: r.leaderEpoch,
  };
}

function sameRecords(a: readonly PartitionAssignment[], b: readonly PartitionAssignment[]): boolean {
  const norm = (xs: readonly PartitionAssignment[]) =>
    JSON.stringify(
      [...xs]
        .sort((x, y) => x.partition - y.partition)
        .map((x) => ({
          partition: x.partition,
          owner: x.owner,
          leader: x.leader ?? null,
          replicas: x.replicas ?? null,
          isr: (x.isr ?? []).map((e) => [e.member, e.volumeId]),
          leaderEpoch: x.leaderEpoch ?? null,
        })),
    );
  return norm(a) === norm(b);
}
