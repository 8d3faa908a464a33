import type {
  MemberStatus,
  MoveRetry,
  PartitionAssignment,
  PartitionMoveStatus,
  ScaleStatus,
} from "../../../packages/api/src/v1alpha1/types.ts";
import {
  cancelConfirmed,
  inBackoff,
  type MoveTiming,
  nextRetry,
  stalledForMs,
  stallReason,
  trackProgress,
} from "./move-stall.ts";
import type { PodView } from "./pods.ts";

// Scaling, one decision per reconcile from what is observed now plus the
// progress persisted in status.scale (level-triggered like the roll: a
// restarted operator reaches the same decision from the same facts).
//
// Scale up: the StatefulSet grows at once (statefulSetReplicas below); new
// members go Joining → Active with their pods (members.ts). New topics use
// them; existing partitions move onto them only with rebalance (opt-in).
//
// Scale down (Redpanda's decommission-then-shrink, Strimzi's "brokers in
// use" check; reference/operators.md): for the highest ordinal at or above
// spec.replicas that is not Removed, one member at a time:
//   1. gate: every remaining member Active with a Ready pod, no roll, the
//      member's data reachable; otherwise refuse (StatefulSet unchanged);
//   2. member → Decommissioning (brokers stop sending it produce);
//   3. move each partition it owns to the least-loaded remaining Active
//      member, at most maxMoves at a time: a move is first persisted in
//      status.scale.moves ("pending"), then started on the destination
//      (PUT) in a later pass, so no copy runs that status does not name;
//      when the destination reports "ready" the controller swaps the owner
//      in the NaradTopic status (optimistic concurrency), and the move is
//      finished once the destination reports "done";
//   4. once it owns nothing and its broker reports 0 WAL records pending
//      (and 0 owned partitions, when it reports that): member → Removed;
//   5. the StatefulSet shrinks past it (statefulSetReplicas), its PVC goes
//      per spec.storage.reclaimPolicy.whenScaled (the StatefulSet's own
//      persistentVolumeClaimRetentionPolicy); then the next member.
// Scaling back up over a member being decommissioned cancels it: the moves
// in flight are cancelled on their destinations, the member goes back to
// Active, partitions already moved stay where they are (rebalance may move
// them back).
//
// A move that stops progressing is aborted before the owner swap and only
// reported after it (move-stall.ts); an aborted move stays in
// status.scale.moves, marked aborting, until its destination confirms the
// cancel, and its partition waits out a backoff in status.scale.moveRetries.
//
// Rebalance (spec.rebalance, or a new value of the narad.dev/rebalance
// annotation for a one-shot): while the partition counts of Active members
// differ by more than one, move a partition from the most loaded to the
// least loaded, same machinery.

export interface ScaleTopic {
  /** NaradTopic metadata.name. */
  name: string;
  assignments: readonly PartitionAssignment[];
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

export function moveKey(m: { topic: string; partition: number }): string {
  return `${m.topic}/${m.partition}`;
}

/**
 * StatefulSet replicas: spec.replicas when growing; when shrinking, only past
 * members already Removed (the highest ordinal still holding data stays).
 */
export function statefulSetReplicas(
  specReplicas: number,
  currentReplicas: number | undefined,
  members: readonly MemberStatus[],
): number {
  if (currentReplicas === undefined || specReplicas >= currentReplicas) return specReplicas;
  let keep = specReplicas;
  for (const m of members)
    if (m.ordinal < currentReplicas && m.state !== "Removed") keep = Math.max(keep, m.ordinal + 1);
  return keep;
}

export function planScale(input: ScaleInput): ScalePlan {
  const plan: ScalePlan = {
    next: input.scale === undefined ? undefined : { ...input.scale, moves: [...(input.scale.moves ?? [])] },
    holds: new Map(),
    start: [],
    swap: [],
    cancel: [],
    events: [],
    progress: undefined,
    blocked: undefined,
    stuck: undefined,
    aborted: [],
  };
  const byId = new Map(input.members.map((m) => [m.id, m]));
  const current = input.scale?.decommissioning;
  const cur = current === undefined ? undefined : byId.get(current);

  // Cancel: scaled back up over the member being decommissioned.
  if (cur !== undefined && cur.ordinal < input.replicas) {
    // A move whose owner was already swapped is past the point of no return:
    // the destination owns the partition and must install its copy; it stays
    // tracked until done. The others are cancelled (the source unfreezes).
    const swapped = (m: PartitionMoveStatus) =>
      input.topics.find((t) => t.name === m.topic)?.assignments.find((a) => a.partition === m.partition)
        ?.owner === m.to;
    // The cancelled ones stay, marked aborting, until their destinations
    // confirm: a destination that missed the cancel would otherwise go on
    // holding the source's freeze with nobody tracking it.
    const moves = plan.next?.moves ?? [];
    const cancelled = moves.filter((m) => !swapped(m));
    plan.cancel.push(...cancelled);
    const nowIso = new Date(input.nowMs).toISOString();
    plan.next = {
      ...plan.next,
      moves: moves.map((m) =>
        swapped(m)
          ? m
          : {
              ...m,
              aborting: m.aborting ?? {
                reason: `decommission of ${cur.id} cancelled`,
                stalled: false,
                since: nowIso,
                attempts: 1,
              },
            },
      ),
    };
    delete plan.next.moveRetries;
    delete plan.next.decommissioning;
    delete plan.next.refusingProduceSince;
    const msg = `decommission of ${cur.id} cancelled: spec.replicas is ${input.replicas} again; ${cancelled.length} move(s) in flight cancelled, partitions already moved stay where they are`;
    plan.events.push({ type: "Normal", reason: "DecommissionCancelled", message: msg });
    return finish(plan, input);
  }

  if (cur !== undefined && cur.state !== "Removed") {
    plan.holds.set(cur.id, "Decommissioning");
    return decommissionStep(plan, input, cur);
  }
  if (current !== undefined) {
    // Removed (or already dropped from members): done with it once its pod is gone.
    const pod = input.pods.find((p) => p.name === current);
    if (pod !== undefined) {
      plan.progress = {
        reason: "ScalingDown",
        message: `${current} decommissioned; waiting for the StatefulSet to remove its pod`,
      };
      return finish(plan, input);
    }
    plan.next = { ...plan.next, movesDone: 0 };
    delete plan.next.decommissioning;
    delete plan.next.refusingProduceSince;
  }

  // Next member to decommission: the highest ordinal at or above spec.replicas not Removed.
  const candidates = input.members
    .filter((m) => m.ordinal >= input.replicas && m.state !== "Removed")
    .sort((a, b) => b.ordinal - a.ordinal);
  const victim = candidates[0];
  if (victim !== undefined) {
    // Moves left over from a rebalance finish first (they involve members that stay).
    if ((plan.next?.moves ?? []).length > 0) advanceMoves(plan, input);
    if ((plan.next?.moves ?? []).length > 0) {
      plan.progress = {
        reason: "ScalingDown",
        message: `waiting for ${(plan.next?.moves ?? []).length} rebalance move(s) to finish before decommissioning ${victim.id}`,
      };
      return finish(plan, input);
    }
    const unsafe = scaleDownBlocker(input, victim);
    if (unsafe !== undefined) {
      plan.blocked = `scale-down to ${input.replicas} refused: ${unsafe}; keeping ${victim.ordinal + 1} broker(s)`;
      return finish(plan, input);
    }
    plan.holds.set(victim.id, "Decommissioning");
    plan.next = { ...plan.next, decommissioning: victim.id, moves: [], movesDone: 0 };
    delete plan.next.refusingProduceSince;
    const owned = ownedBy(input.topics, victim.id).length;
    plan.events.push({
      type: "Normal",
      reason: "Decommissioning",
      message: `decommissioning ${victim.id} (spec.replicas ${input.replicas}): ${owned} partition(s) to move, then its WAL to drain`,
    });
    plan.progress = { reason: "ScalingDown", message: `decommissioning ${victim.id}` };
    return finish(plan, input);
  }

  // Scale up in progress: members at ordinals below spec.replicas not Active yet.
  const joining = input.members.filter((m) => m.ordinal < input.replicas && m.state === "Joining");
  const missing = input.replicas - input.members.filter((m) => m.ordinal < input.replicas).length;
  if ((joining.length > 0 || missing > 0) && input.members.some((m) => m.state === "Active")) {
    plan.progress = {
      reason: "ScalingUp",
      message: `${joining.length + Math.max(0, missing)} member(s) joining: ${joining.map((m) => m.id).join(", ")}`,
    };
  }
  return rebalanceStep(plan, input);
}

function decommissionStep(plan: ScalePlan, input: ScaleInput, victim: MemberStatus): ScalePlan {
  advanceMoves(plan, input);
  const moves = plan.next?.moves ?? [];
  const inFlight = new Set(moves.map(moveKey));
  const owned = ownedBy(input.topics, victim.id);
  const destinations = remaining(input).filter((m) => m.state === "Active" && podReady(input, m.id));
  const retryOf = (p: { topic: string; partition: number }) =>
    plan.next?.moveRetries?.find((r) => r.topic === p.topic && r.partition === p.partition);
  const todo = owned.filter((p) => !inFlight.has(moveKey(p)) && !inBackoff(retryOf(p), input.nowMs));
  if (todo.length > 0 && destinations.length === 0) {
    plan.progress = {
      reason: "ScalingDown",
      message: `decommissioning ${victim.id}: ${owned.length} partition(s) left, no remaining member is Active and Ready to take them`,
    };
    return finish(plan, input);
  }
  const load = loads(
    input.topics,
    destinations.map((m) => m.id),
    moves,
  );
  for (const p of todo) {
    if ((plan.next?.moves ?? []).length >= input.maxMoves) break;
    const to = leastLoaded(load, input.topics, p.topic, retryOf(p)?.avoid);
    if (to === undefined) break;
    load.set(to, (load.get(to) ?? 0) + 1);
    addMove(plan, input, { topic: p.topic, partition: p.partition, from: victim.id, to });
  }
  const left = (plan.next?.moves ?? []).length;
  if (owned.length > 0 || left > 0) {
    plan.progress = {
      reason: "ScalingDown",
      message: `decommissioning ${victim.id}: ${owned.length} partition(s) left to move, ${left} move(s) in flight, ${plan.next?.movesDone ?? 0} done`,
    };
    return finish(plan, input);
  }
  // Owns nothing: wait for its WAL to be dispatched.
  const probe = input.decommissionProbe;
  const pod = input.pods.find((p) => p.name === victim.id);
  if (pod === undefined && neverRan(victim)) {
    // No broker ever ran for it (its pod never got an IP and no WAL count was
    // ever reported): there is no volume with records to lose.
    plan.holds.set(victim.id, "Removed");
    plan.events.push({
      type: "Normal",
      reason: "MemberRemoved",
      message: `${victim.id} decommissioned (its broker never ran, owns nothing): member → Removed`,
    });
    return finish(plan, input);
  }
  if (pod === undefined || pod.terminating) {
    // Its pod is gone (node lost, drain timed out, force-deleted) or going:
    // the last WAL count stored in status is stale, and its volume may hold
    // acknowledged records not yet dispatched. Wait for the StatefulSet to
    // recreate the pod and run the whole removal gate on the new broker: it
    // must be seen refusing produce again, on a later pass than its WAL count.
    if (plan.next !== undefined) delete plan.next.refusingProduceSince;
    plan.progress = {
      reason: "ScalingDown",
      message: `decommissioning ${victim.id}: partitions moved; its pod is ${pod === undefined ? "missing" : "terminating"}, waiting for it to come back to confirm its WAL is empty (its volume is kept meanwhile)`,
    };
    return finish(plan, input);
  }
  if (probe === undefined || !probe.reachable) {
    const why = probe === undefined ? "has no pod IP" : `does not answer (${probe.error})`;
    plan.progress = {
      reason: "ScalingDown",
      message: `decommissioning ${victim.id}: partitions moved; its broker ${why}, waiting to confirm its WAL is empty`,
    };
    return finish(plan, input);
  }
  // Its WAL counts only once no produce can add to it: the broker must refuse
  // produce (its view shows Decommissioning), seen on an earlier pass, so a
  // request admitted just before the refusal has reached the WAL by now.
  if (!probe.refusingProduce) {
    if (plan.next !== undefined) delete plan.next.refusingProduceSince;
    plan.progress = {
      reason: "ScalingDown",
      message: `decommissioning ${victim.id}: partitions moved; waiting for its broker to see Decommissioning and refuse produce`,
    };
    return finish(plan, input);
  }
  if (plan.next?.refusingProduceSince === undefined) {
    plan.next = { ...plan.next, refusingProduceSince: new Date(input.nowMs).toISOString() };
    plan.progress = {
      reason: "ScalingDown",
      message: `decommissioning ${victim.id}: its broker refuses produce; confirming its WAL is empty on the next pass`,
    };
    return finish(plan, input);
  }
  const held = probe.movedAwayCopies ?? 0;
  if (probe.pendingRecords > 0 || (probe.ownedPartitions ?? 0) > 0 || held > 0) {
    const extra = [
      probe.ownedPartitions ? `broker still reports ${probe.ownedPartitions} owned partition(s)` : "",
      held > 0 ? `${held} moved-away copy(ies) kept until their new owner serves them` : "",
    ].filter((x) => x !== "");
    plan.progress = {
      reason: "ScalingDown",
      message: `decommissioning ${victim.id}: draining its WAL (${probe.pendingRecords} record(s) pending${extra.length > 0 ? `, ${extra.join(", ")}` : ""})`,
    };
    return finish(plan, input);
  }
  plan.holds.set(victim.id, "Removed");
  plan.events.push({
    type: "Normal",
    reason: "MemberRemoved",
    message: `${victim.id} decommissioned (${plan.next?.movesDone ?? 0} partition(s) moved, WAL empty): member → Removed, the StatefulSet shrinks past it`,
  });
  plan.progress = { reason: "ScalingDown", message: `${victim.id} removed; shrinking the StatefulSet` };
  return finish(plan, input);
}

function rebalanceStep(plan: ScalePlan, input: ScaleInput): ScalePlan {
  const oneShot =
    input.rebalanceRequest !== undefined && input.rebalanceRequest !== input.scale?.rebalanceHandled
      ? input.rebalanceRequest
      : undefined;
  const wanted = input.rebalance || oneShot !== undefined;
  const inFlight = (plan.next?.moves ?? []).length;
  if (!wanted && inFlight === 0) return finish(plan, input);
  advanceMoves(plan, input);
  const members = remaining(input);
  const settled =
    input.rollBusy === undefined &&
    members.length >= input.replicas &&
    members.every((m) => m.state === "Active" && podReady(input, m.id));
  if (!settled) {
    if ((plan.next?.moves ?? []).length > 0 || wanted) {
      plan.progress = plan.progress ?? {
        reason: "Rebalancing",
        message: `rebalance waits for every member to be Active and Ready and no roll (${(plan.next?.moves ?? []).length} move(s) in flight)`,
      };
    }
    return finish(plan, input);
  }
  const ids = members.map((m) => m.id);
  const moves = plan.next?.moves ?? [];
  const load = loads(input.topics, ids, moves);
  const inFlightKeys = new Set(moves.map(moveKey));
  // A partition waiting out a backoff after an abort is not picked.
  for (const r of plan.next?.moveRetries ?? []) if (inBackoff(r, input.nowMs)) inFlightKeys.add(moveKey(r));
  if (wanted) {
    while ((plan.next?.moves ?? []).length < input.maxMoves) {
      const move = nextRebalanceMove(input.topics, load, inFlightKeys);
      if (move === undefined) break;
      inFlightKeys.add(moveKey(move));
      load.set(move.from, (load.get(move.from) ?? 0) - 1);
      load.set(move.to, (load.get(move.to) ?? 0) + 1);
      addMove(plan, input, move);
    }
  }
  const left = (plan.next?.moves ?? []).length;
  if (left > 0) {
    plan.progress = {
      reason: "Rebalancing",
      message: `rebalancing: ${left} move(s) in flight, ${plan.next?.movesDone ?? 0} done; partitions per member ${describeLoad(load)}`,
    };
    return finish(plan, input);
  }
  if (oneShot !== undefined || (plan.next?.movesDone ?? 0) > 0) {
    plan.events.push({
      type: "Normal",
      reason: "Rebalanced",
      message: `partitions balanced over ${ids.length} member(s) (${plan.next?.movesDone ?? 0} moved): ${describeLoad(load)}`,
    });
    plan.next = { ...plan.next, moves: [], movesDone: 0 };
    if (oneShot !== undefined) plan.next.rebalanceHandled = oneShot;
  }
  return finish(plan, input);
}

/**
 * Moves in flight: finished ones leave status, ready ones are swapped,
 * unknown ones (never started, or the destination restarted) are started,
 * failed ones are cancelled and planned again.
 */
function advanceMoves(plan: ScalePlan, input: ScaleInput): void {
  const kept: PartitionMoveStatus[] = [];
  let done = plan.next?.movesDone ?? 0;
  let retries: MoveRetry[] = [...(plan.next?.moveRetries ?? [])];
  const sameKey = (a: { topic: string; partition: number }, b: { topic: string; partition: number }) =>
    a.topic === b.topic && a.partition === b.partition;
  const dropRetry = (m: PartitionMoveStatus) => {
    retries = retries.filter((r) => !sameKey(r, m));
  };
  const nowIso = new Date(input.nowMs).toISOString();
  for (const prev of plan.next?.moves ?? []) {
    const topic = input.topics.find((t) => t.name === prev.topic);
    const owner = topic?.assignments.find((a) => a.partition === prev.partition)?.owner;
    const probe = input.moveProbes.get(moveKey(prev));
    if (topic === undefined || (owner !== prev.from && owner !== prev.to)) {
      // The topic (or partition) is gone, or someone else reassigned it.
      plan.cancel.push(prev);
      dropRetry(prev);
      plan.events.push({
        type: "Warning",
        reason: "MoveAbandoned",
        message: `move of ${moveKey(prev)} from ${prev.from} to ${prev.to} abandoned: ${topic === undefined ? "topic gone" : `owner is now ${owner ?? "(none)"}`}`,
      });
      continue;
    }
    const m = trackProgress(prev, probe, input.nowMs);
    if (m.aborting !== undefined) {
      if (owner === m.to) {
        // Swapped after all (an earlier term's swap the abort's live read
        // missed, or a hand edit): the destination owns it and must install.
        const { aborting: _, ...rest } = m;
        kept.push(rest);
        plan.events.push({
          type: "Warning",
          reason: "MoveAbortDropped",
          message: `abort of the move of ${moveKey(m)} dropped: ${m.to} owns the partition now, so the move must finish`,
        });
        continue;
      }
      if (cancelConfirmed(probe)) {
        // Over on the destination: the source's freeze is gone with it.
        let next = "";
        if (m.aborting.stalled) {
          const r = nextRetry(
            retries.find((x) => sameKey(x, m)),
            m,
            m.aborting.reason,
            input.nowMs,
            input.timing,
          );
          dropRetry(m);
          retries.push(r);
          next = `; the partition is moved again after ${r.notBefore} (abort ${r.attempts})`;
        }
        plan.events.push({
          type: m.aborting.stalled ? "Warning" : "Normal",
          reason: "MoveCancelled",
          message: `move of ${moveKey(m)} from ${m.from} to ${m.to} cancelled on ${m.to} (${m.aborting.reason})${next}`,
        });
        continue;
      }
      // Not confirmed: cancel again (a cancel that failed, or a destination
      // that was away and resumed the move from its marker).
      const why =
        probe === undefined
          ? "not asked"
          : probe.kind === "unreachable"
            ? probe.error
            : probe.kind === "state"
              ? `still ${probe.state}`
              : "unknown";
      const again = { ...m, aborting: { ...m.aborting, attempts: m.aborting.attempts + 1, lastError: why } };
      plan.cancel.push(again);
      kept.push(again);
      continue;
    }
    const stalled = stalledForMs(m, input.nowMs) >= input.timing.stallMs;
    if (owner === m.to) {
      // Swapped: finished once the destination has installed it.
      const installing =
        probe?.kind === "unreachable" ||
        (probe?.kind === "state" && (probe.state === "copying" || probe.state === "ready"));
      if (installing) {
        const state = probe?.kind === "state" ? probe.state : m.state;
        if (!stalled) {
          kept.push({ ...m, state });
          continue;
        }
        // Never aborted: the destination owns the partition. Reported once.
        if (m.stuckSince === undefined)
          plan.events.push({
            type: "Warning",
            reason: "MoveStuck",
            message: `partition ${moveKey(m)} was handed to ${m.to} but ${stallReason(m, probe, input.nowMs)}; a move past its owner swap is not aborted: ${m.from} keeps its copy until ${m.to} installs it`,
          });
        kept.push({ ...m, state, stuckSince: m.stuckSince ?? nowIso });
        continue;
      }
      done++;
      dropRetry(m);
      const how =
        probe?.kind === "state" && probe.state === "done"
          ? ""
          : ` (destination reports ${probe?.kind === "state" ? probe.state : "no such move"} after the swap)`;
      plan.events.push({
        type: how === "" ? "Normal" : "Warning",
        reason: "PartitionMoved",
        message: `partition ${moveKey(m)} moved from ${m.from} to ${m.to}${how}`,
      });
      continue;
    }
    // Still owned by the source (in the cache).
    if (stalled) {
      const live = input.liveOwners;
      if (live?.has(moveKey(m)) === true) {
        const liveOwner = live.get(moveKey(m));
        if (liveOwner === m.from) {
          const reason = `${stallReason(m, probe, input.nowMs)}; spec.moves.stallTimeoutSeconds ${Math.round(input.timing.stallMs / 1000)}`;
          plan.cancel.push(m);
          plan.aborted.push({
            move: m,
            cause: probe?.kind === "unreachable" ? "unreachable" : "no_progress",
          });
          kept.push({ ...m, aborting: { reason, stalled: true, since: nowIso, attempts: 1 } });
          plan.events.push({
            type: "Warning",
            reason: "MoveAborted",
            message: `move of ${moveKey(m)} from ${m.from} to ${m.to} aborted: ${reason}; cancelling it on ${m.to} (the source unfreezes), the partition is moved again after a backoff`,
          });
          continue;
        }
        if (liveOwner === m.to) {
          // The API server has the swap our cache lacks: never cancel it;
          // the next pass sees it swapped.
          kept.push(m);
          continue;
        }
      }
    }
    // A move not started yet ("pending") may find a finished one of an
    // earlier move of the same partition on its destination: that is stale,
    // start ours (a PUT over a finished move starts a new one).
    const stale =
      m.state === "pending" &&
      probe?.kind === "state" &&
      (probe.state === "done" || probe.state === "failed" || probe.state === "cancelled");
    if (probe === undefined || probe.kind === "unknown" || stale) {
      plan.start.push(m);
      kept.push(m);
    } else if (probe.kind === "unreachable") {
      kept.push(m);
    } else if (probe.state === "ready") {
      plan.swap.push(m);
      kept.push({ ...m, state: "ready" });
    } else if (probe.state === "copying") {
      kept.push({ ...m, state: "copying" });
    } else {
      // failed, cancelled, or "done" without a swap (cannot be trusted): start over.
      plan.cancel.push(m);
      plan.events.push({
        type: "Warning",
        reason: "MoveFailed",
        message: `move of ${moveKey(m)} from ${m.from} to ${m.to} ${probe.state}${probe.error ? `: ${probe.error}` : ""}; it will be planned again`,
      });
    }
  }
  plan.next = { ...plan.next, moves: kept, movesDone: done };
  if (retries.length > 0) plan.next.moveRetries = retries;
  else delete plan.next.moveRetries;
}

function addMove(
  plan: ScalePlan,
  input: ScaleInput,
  m: { topic: string; partition: number; from: string; to: string },
): void {
  const move: PartitionMoveStatus = {
    ...m,
    startedAt: new Date(input.nowMs).toISOString(),
    state: "pending",
  };
  const retry = plan.next?.moveRetries?.find((r) => r.topic === m.topic && r.partition === m.partition);
  plan.next = { ...plan.next, moves: [...(plan.next?.moves ?? []), move] };
  plan.events.push({
    type: "Normal",
    reason: "MovePlanned",
    message: `moving partition ${moveKey(m)} from ${m.from} to ${m.to}${retry === undefined ? "" : ` (again, after ${retry.attempts} abort(s))`}`,
  });
}

/** Undefined when the scale-down may start now, else why not. */
function scaleDownBlocker(input: ScaleInput, victim: MemberStatus): string | undefined {
  if (input.rollBusy !== undefined) return `a rolling restart is in progress (${input.rollBusy})`;
  const rest = remaining(input);
  if (rest.length === 0) return "no member would remain";
  const problems: string[] = [];
  for (let i = 0; i < input.replicas; i++) {
    const m = rest.find((x) => x.ordinal === i);
    if (m === undefined) problems.push(`ordinal ${i} is not a member yet`);
    else if (m.state !== "Active") problems.push(`${m.id} is ${m.state}`);
    else if (!podReady(input, m.id)) problems.push(`${m.id}'s pod is not Ready`);
  }
  if (problems.length > 0)
    return `the remaining members must all be Active and Ready (${problems.join(", ")})`;
  const owned = ownedBy(input.topics, victim.id).length;
  // A member that cannot serve its data cannot hand it over.
  if (owned > 0 && (victim.state === "Down" || !podReady(input, victim.id)))
    return `${victim.id} is ${victim.state === "Down" ? "Down" : "not Ready"} and owns ${owned} partition(s), which cannot be copied off it`;
  return undefined;
}

function finish(plan: ScalePlan, input: ScaleInput): ScalePlan {
  const n = plan.next;
  if (n !== undefined) {
    // A retry entry lives while its backoff runs or its partition moves
    // again; after that a new abort starts the backoff afresh.
    const moving = new Set((n.moves ?? []).map(moveKey));
    const retries = (n.moveRetries ?? []).filter((r) => inBackoff(r, input.nowMs) || moving.has(moveKey(r)));
    if (retries.length > 0) n.moveRetries = retries;
    else delete n.moveRetries;
  }
  plan.stuck = stuckMessage(n, input);
  if (
    n !== undefined &&
    n.decommissioning === undefined &&
    (n.moves ?? []).length === 0 &&
    n.rebalanceHandled === undefined &&
    n.moveRetries === undefined &&
    (n.movesDone ?? 0) === 0
  )
    plan.next = undefined;
  else if (n !== undefined && (n.moves ?? []).length === 0) delete n.moves;
  return plan;
}

/** The Degraded (MoveStuck) message: stalled aborts, moves stuck past their swap, partitions in backoff. */
function stuckMessage(n: ScaleStatus | undefined, input: ScaleInput): string | undefined {
  const parts: string[] = [];
  for (const m of n?.moves ?? []) {
    if (m.aborting?.stalled === true)
      parts.push(
        `move of ${moveKey(m)} from ${m.from} to ${m.to} aborted (${m.aborting.reason}); ${m.to} has not confirmed the cancel after ${m.aborting.attempts} attempt(s)${m.aborting.lastError ? ` (${m.aborting.lastError})` : ""}`,
      );
    else if (m.stuckSince !== undefined)
      parts.push(
        `partition ${moveKey(m)} was handed to ${m.to} (owner swapped) but ${m.to} has not installed it for ${Math.round(stalledForMs(m, input.nowMs) / 1000)}s: a move past its swap is never aborted; ${m.from} keeps its copy until ${m.to} installs it`,
      );
  }
  for (const r of n?.moveRetries ?? [])
    if (inBackoff(r, input.nowMs))
      parts.push(
        `move of ${moveKey(r)} aborted ${r.attempts} time(s) (last: ${r.reason}); moved again after ${r.notBefore}`,
      );
  return parts.length === 0 ? undefined : parts.join("; ");
}

/**
 * A member whose broker never ran: no address was ever recorded (its pod
 * never had an IP) and no WAL count was ever reported. Anything else may
 * have acknowledged records on its volume.
 */
function neverRan(m: MemberStatus): boolean {
  return m.address === undefined && m.walPendingRecords === undefined;
}

/** Members that stay: ordinals below spec.replicas. */
function remaining(input: ScaleInput): MemberStatus[] {
  return input.members.filter((m) => m.ordinal < input.replicas && m.state !== "Removed");
}

function podReady(input: ScaleInput, id: string): boolean {
  const p = input.pods.find((x) => x.name === id);
  return p?.ready === true && !p.terminating;
}

function ownedBy(topics: readonly ScaleTopic[], id: string): Array<{ topic: string; partition: number }> {
  const out: Array<{ topic: string; partition: number }> = [];
  for (const t of topics)
    for (const a of t.assignments) if (a.owner === id) out.push({ topic: t.name, partition: a.partition });
  return out;
}

/** Partitions per member over all topics, counting moves in flight at their destination. */
function loads(
  topics: readonly ScaleTopic[],
  ids: readonly string[],
  moves: readonly PartitionMoveStatus[],
): Map<string, number> {
  const load = new Map<string, number>(ids.map((id) => [id, 0]));
  const moving = new Map(moves.map((m) => [moveKey(m), m.to]));
  for (const t of topics)
    for (const a of t.assignments) {
      const owner = moving.get(moveKey({ topic: t.name, partition: a.partition })) ?? a.owner;
      if (load.has(owner)) load.set(owner, (load.get(owner) ?? 0) + 1);
    }
  return load;
}

/** Fewest partitions overall, then fewest of this topic, then lowest ordinal. */
function leastLoaded(
  load: Map<string, number>,
  topics: readonly ScaleTopic[],
  topic: string,
  avoid?: string,
): string | undefined {
  const t = topics.find((x) => x.name === topic);
  const inTopic = (id: string) => t?.assignments.filter((a) => a.owner === id).length ?? 0;
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

/** From the most loaded member to the least loaded, while they differ by more than one. */
function nextRebalanceMove(
  topics: readonly ScaleTopic[],
  load: Map<string, number>,
  inFlight: ReadonlySet<string>,
): { topic: string; partition: number; from: string; to: string } | undefined {
  const ids = [...load.keys()];
  if (ids.length < 2) return undefined;
  const sorted = [...ids].sort(
    (a, b) => (load.get(b) ?? 0) - (load.get(a) ?? 0) || ordinalOf(b) - ordinalOf(a),
  );
  const from = sorted[0] as string;
  const to = sorted[sorted.length - 1] as string;
  if ((load.get(from) ?? 0) - (load.get(to) ?? 0) <= 1) return undefined;
  // The topic where `from` has the most partitions and `to` the fewest.
  let best: { topic: string; partition: number; score: number } | undefined;
  for (const t of topics) {
    const mine = t.assignments.filter(
      (a) => a.owner === from && !inFlight.has(moveKey({ topic: t.name, partition: a.partition })),
    );
    if (mine.length === 0) continue;
    const theirs = t.assignments.filter((a) => a.owner === to).length;
    const score = mine.length - theirs;
    const last = mine[mine.length - 1] as PartitionAssignment;
    if (best === undefined || score > best.score) best = { topic: t.name, partition: last.partition, score };
  }
  return best === undefined ? undefined : { topic: best.topic, partition: best.partition, from, to };
}

function ordinalOf(id: string): number {
  const m = /-(\d+)$/.exec(id);
  return m ? Number(m[1]) : 0;
}

function describeLoad(load: Map<string, number>): string {
  return [...load.entries()].map(([id, n]) => `${id}=${n}`).join(", ");
}
