// Rebalance (spec.rebalance or the one-shot narad.dev/rebalance
// annotation): move a partition from the most to the least loaded Active
// member while their counts differ by more than one. Single-copy partitions
// only; replicated ones are spread when placed and not moved afterwards.

import type { PartitionAssignment } from "../../../../packages/api/src/v1alpha1/types.ts";
import { inBackoff } from "../move-stall.ts";
import { finish } from "./finish.ts";
import {
  loads,
  moveKey,
  ordinalOf,
  podReady,
  remaining,
  type ScaleInput,
  type ScalePlan,
  type ScaleTopic,
  singleCopy,
} from "./model.ts";
import { addMove, advanceMoves } from "./moves.ts";

/** One pass of rebalancing, when asked for (spec.rebalance or a new annotation value). */
export function rebalanceStep(plan: ScalePlan, input: ScaleInput): ScalePlan {
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
    // Single-copy partitions only: a replicated one is never moved by copy.
    const mine = t.assignments.filter(
      (a) =>
        singleCopy(a) &&
        a.owner === from &&
        !inFlight.has(moveKey({ topic: t.name, partition: a.partition })),
    );
    if (mine.length === 0) continue;
    const theirs = t.assignments.filter((a) => singleCopy(a) && a.owner === to).length;
    const score = mine.length - theirs;
    const last = mine[mine.length - 1] as PartitionAssignment;
    if (best === undefined || score > best.score) best = { topic: t.name, partition: last.partition, score };
  }
  return best === undefined ? undefined : { topic: best.topic, partition: best.partition, from, to };
}

function describeLoad(load: Map<string, number>): string {
  return [...load.entries()].map(([id, n]) => `${id}=${n}`).join(", ");
}
