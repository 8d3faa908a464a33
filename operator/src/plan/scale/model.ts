// The scale planner's input and output, and the small views of the input
// every step reads (which members remain, which partitions a member owns).

import type {
  MemberStatus,
  PartitionAssignment,
  PartitionMoveStatus,
  ScaleStatus,
} from "../../../../packages/api/src/v1alpha1/types.ts";
import type { MoveTiming } from "../move-stall.ts";
import type { PodView } from "../pods.ts";

export interface ScaleTopic {
  /** NaradTopic metadata.name. */
  name: string;
  assignments: readonly PartitionAssignment[];
  /** status.replicationFactor (the factor in effect), when recorded. */
  replicationFactor?: number | undefined;
}

/** What the destination answered for a move in flight this pass. */
export type MoveProbe =
  | {
      kind: "state";
      state: "copying" | "ready" | "done" | "failed" | "cancelled";
      error?: string;
      copiedBytes?: number;
      destHwm?: number;
    }
  /** 404: the destination knows no such move (never started, or it restarted). */
  | { kind: "unknown" }
  | { kind: "unreachable"; error: string };

/** The decommissioning member's admin status this pass. */
export type DecommissionProbe =
  | {
      reachable: true;
      pendingRecords: number;
      ownedPartitions: number | undefined;
      /** The broker answers produce with 503 (it sees itself Decommissioning, or drains). */
      refusingProduce: boolean;
      /** Moved-away copies it still keeps (undefined: the broker does not report them). */
      movedAwayCopies: number | undefined;
    }
  | { reachable: false; error: string };

export interface ScaleInput {
  nowMs: number;
  /** spec.replicas. */
  replicas: number;
  /** Members as persisted in status. */
  members: readonly MemberStatus[];
  pods: readonly PodView[];
  /** status.scale as persisted. */
  scale: ScaleStatus | undefined;
  topics: readonly ScaleTopic[];
  /** Why a roll is in progress (status.roll set, or pods to restart), undefined when none. */
  rollBusy: string | undefined;
  /** spec.rebalance. */
  rebalance: boolean;
  /** narad.dev/rebalance annotation value (one-shot when it differs from status.scale.rebalanceHandled). */
  rebalanceRequest: string | undefined;
  /** Probes of status.scale.moves, by moveKey(). */
  moveProbes: ReadonlyMap<string, MoveProbe>;
  /** Admin status of status.scale.decommissioning's broker (undefined when not asked). */
  decommissionProbe: DecommissionProbe | undefined;
  maxMoves: number;
  /** Stall bound and retry backoff (spec.moves). */
  timing: MoveTiming;
  /**
   * Owners read from the API server (not the cache) for the moves that
   * abortCandidates() named, by moveKey(); a move missing here is not aborted
   * this pass (its owner could not be confirmed).
   */
  liveOwners?: ReadonlyMap<string, string | undefined>;
}

export interface ScaleEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

export interface ScalePlan {
  /** status.scale to write (undefined: cleared). */
  next: ScaleStatus | undefined;
  /** Member states this pass imposes (members.ts applies them). */
  holds: Map<string, "Decommissioning" | "Removed">;
  /** Moves to start (PUT) on their destinations. */
  start: PartitionMoveStatus[];
  /** Moves whose destination is ready: swap the owner in the NaradTopic status. */
  swap: PartitionMoveStatus[];
  /** Moves to cancel (DELETE) on their destinations. */
  cancel: PartitionMoveStatus[];
  events: ScaleEvent[];
  /** Progressing condition while something runs. */
  progress: { reason: "ScalingDown" | "ScalingUp" | "Rebalancing"; message: string } | undefined;
  /** Why a scale-down is refused (Degraded ScaleDownBlocked), undefined when it is not. */
  blocked: string | undefined;
  /** Stalled, aborted or retried moves (Degraded MoveStuck), undefined when none. */
  stuck: string | undefined;
  /** Moves aborted this pass for a stall (counted in the operator's metrics). */
  aborted: Array<{ move: PartitionMoveStatus; cause: "unreachable" | "no_progress" }>;
}

/** The key of a partition move (and of its probe in ScaleInput.moveProbes). */
export function moveKey(m: { topic: string; partition: number }): string {
  return `${m.topic}/${m.partition}`;
}

/**
 * A member whose broker never ran: no address was ever recorded (its pod
 * never had an IP) and no WAL count was ever reported. Anything else may
 * have acknowledged records on its volume.
 */
export function neverRan(m: MemberStatus): boolean {
  return m.address === undefined && m.walPendingRecords === undefined;
}

/** Members that stay: ordinals below spec.replicas. */
export function remaining(input: ScaleInput): MemberStatus[] {
  return input.members.filter((m) => m.ordinal < input.replicas && m.state !== "Removed");
}

/** Whether the member's pod is Ready now. */
export function podReady(input: ScaleInput, id: string): boolean {
  const p = input.pods.find((x) => x.name === id);
  return p?.ready === true && !p.terminating;
}

/**
 * Single-copy records: the ones partition moves (copy, verify, owner swap)
 * and rebalancing act on. A replicated record (replicas set) changes only by
 * reassignment in the topic reconcile (plan/topic-replication.ts).
 */
export function singleCopy(a: PartitionAssignment): boolean {
  return a.replicas === undefined;
}

/** The single-copy partitions `id` owns in the NaradTopic statuses. */
export function ownedBy(
  topics: readonly ScaleTopic[],
  id: string,
): Array<{ topic: string; partition: number }> {
  const out: Array<{ topic: string; partition: number }> = [];
  for (const t of topics)
    for (const a of t.assignments)
      if (singleCopy(a) && a.owner === id) out.push({ topic: t.name, partition: a.partition });
  return out;
}

/** Replicated partitions whose record still names `id` (leader, replica or ISR entry). */
export function replicaOf(
  topics: readonly ScaleTopic[],
  id: string,
): Array<{ topic: string; partition: number; leader: boolean }> {
  const out: Array<{ topic: string; partition: number; leader: boolean }> = [];
  for (const t of topics)
    for (const a of t.assignments) {
      if (singleCopy(a)) continue;
      const listed =
        a.leader === id || (a.replicas ?? []).includes(id) || (a.isr ?? []).some((e) => e.member === id);
      if (listed) out.push({ topic: t.name, partition: a.partition, leader: a.leader === id });
    }
  return out;
}

/** The StatefulSet ordinal in a member id (`<cluster>-<n>`). */
export function ordinalOf(id: string): number {
  const m = /-(\d+)$/.exec(id);
  return m ? Number(m[1]) : 0;
}

/** Partitions per member over all topics, counting moves in flight at their destination. */
export function loads(
  topics: readonly ScaleTopic[],
  ids: readonly string[],
  moves: readonly PartitionMoveStatus[],
): Map<string, number> {
  const load = new Map<string, number>(ids.map((id) => [id, 0]));
  const moving = new Map(moves.map((m) => [moveKey(m), m.to]));
  for (const t of topics)
    for (const a of t.assignments) {
      if (!singleCopy(a)) continue;
      const owner = moving.get(moveKey({ topic: t.name, partition: a.partition })) ?? a.owner;
      if (load.has(owner)) load.set(owner, (load.get(owner) ?? 0) + 1);
    }
  return load;
}

/** Fewest partitions overall, then fewest of this topic, then lowest ordinal. */
export function leastLoaded(
  load: Map<string, number>,
  topics: readonly ScaleTopic[],
  topic: string,
  avoid?: string,
): string | undefined {
  const t = topics.find((x) => x.name === topic);
  const inTopic = (id: string) => t?.assignments.filter((a) => singleCopy(a) && a.owner === id).length ?? 0;
  // A destination that stalled this partition's last move is the last resort.
  const ids = [...load.keys()];
  const candidates = ids.length > 1 && avoid !== undefined ? ids.filter((id) => id !== avoid) : ids;
  let best: string | undefined;
  for (const id of candidates) {
    if (best === undefined) {
      best = id;
      continue;
    }
    const d = (load.get(id) ?? 0) - (load.get(best) ?? 0);
    if (d < 0 || (d === 0 && inTopic(id) < inTopic(best))) best = id;
  }
  return best;
}
