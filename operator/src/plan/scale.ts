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
//
// The pieces live in plan/scale/: model.ts (input, output, views of the
// input), decommission.ts, moves.ts, rebalance.ts, finish.ts.

import type { MemberStatus, PartitionMoveStatus } from "../../../packages/api/src/v1alpha1/types.ts";
import { decommissionStep, scaleDownBlocker } from "./scale/decommission.ts";
import { finish } from "./scale/finish.ts";
import { ownedBy, type ScaleInput, type ScalePlan } from "./scale/model.ts";
import { advanceMoves } from "./scale/moves.ts";
import { rebalanceStep } from "./scale/rebalance.ts";

export type {
  DecommissionProbe,
  MoveProbe,
  ScaleEvent,
  ScaleInput,
  ScalePlan,
  ScaleTopic,
} from "./scale/model.ts";
export { moveKey } from "./scale/model.ts";

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

/** The scale decision of one reconcile pass. */
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
