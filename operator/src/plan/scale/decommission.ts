// Scale down, one member at a time: the gate, moving its partitions away,
// and the removal gate (its broker refuses produce and its WAL is empty).

import type { MemberStatus } from "../../../../packages/api/src/v1alpha1/types.ts";
import { inBackoff } from "../move-stall.ts";
import { finish } from "./finish.ts";
import {
  leastLoaded,
  loads,
  moveKey,
  neverRan,
  ownedBy,
  podReady,
  remaining,
  replicaOf,
  type ScaleInput,
  type ScalePlan,
} from "./model.ts";
import { addMove, advanceMoves } from "./moves.ts";

/** One pass of decommissioning `victim`: move its partitions away, then the removal gate. */
export function decommissionStep(plan: ScalePlan, input: ScaleInput, victim: MemberStatus): ScalePlan {
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
  // Replicated partitions are not moved by copy: the topic reconcile adds a
  // replacement replica beside each of its replicas, the leader adds that to
  // the ISR once it has caught up, then leadership moves off and the old
  // replica is dropped (plan/topic-replication.ts). Its volume holds data
  // until no record names it.
  const listed = replicaOf(input.topics, victim.id);
  if (listed.length > 0) {
    const leading = listed.filter((x) => x.leader).length;
    plan.progress = {
      reason: "ScalingDown",
      message: `decommissioning ${victim.id}: ${listed.length} replicated partition(s) still list it (${leading} led by it), waiting for their replacement replicas to be in sync (${listed
        .slice(0, 5)
        .map((x) => moveKey(x))
        .join(", ")}${listed.length > 5 ? ", …" : ""})`,
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

/** Undefined when the scale-down may start now, else why not. */
export function scaleDownBlocker(input: ScaleInput, victim: MemberStatus): string | undefined {
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
  // Replicas sit on distinct brokers: a replicated topic needs as many to remain.
  const needs = input.topics.filter((t) => (t.replicationFactor ?? 1) > input.replicas);
  if (needs.length > 0) {
    const top = Math.max(...needs.map((t) => t.replicationFactor ?? 1));
    return `topic(s) ${needs.map((t) => `${t.name} (replication factor ${t.replicationFactor})`).join(", ")} need ${top} brokers, ${input.replicas} would remain`;
  }
  const owned = ownedBy(input.topics, victim.id).length;
  // A member that cannot serve its data cannot hand it over.
  if (owned > 0 && (victim.state === "Down" || !podReady(input, victim.id)))
    return `${victim.id} is ${victim.state === "Down" ? "Down" : "not Ready"} and owns ${owned} partition(s), which cannot be copied off it`;
  return undefined;
}
