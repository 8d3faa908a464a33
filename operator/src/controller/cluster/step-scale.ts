import type { V1Pod } from "@kubernetes/client-node";
import { topicName } from "../../api/v1alpha1/defaults.ts";
import type { NaradTopic, PartitionMoveStatus } from "../../api/v1alpha1/types.ts";
import {
  ANNOTATION_REBALANCE,
  API_GROUP_VERSION,
  LABEL_CLUSTER,
  REQUEUE_PROGRESSING_MS,
  SCALE_BROKER_TIMEOUT_MS,
  SCALE_MAX_MOVES,
  SCALE_REQUEUE_MS,
  TOPIC_KIND,
  TOPIC_PLURAL,
} from "../../constants.ts";
import { apiMessage, httpStatus } from "../../kube/api.ts";
import { getCondition } from "../../plan/conditions.ts";
import { type PodView, podView } from "../../plan/pods.ts";
import {
  type DecommissionProbe,
  type MoveProbe,
  moveKey,
  planScale,
  type ScaleTopic,
} from "../../plan/scale.ts";
import { resourceNames } from "../../specs/labels.ts";
import { type ClusterContext, NEXT, type StepResult } from "./context.ts";

// Step after the roll: scale-down (decommission with partition moves) and
// rebalance, deciding with plan/scale.ts from the cached pods, topics and
// the persisted status (members, status.scale), plus what the brokers
// answer this pass (each move's state on its destination, the WAL of the
// member being decommissioned). The status step then writes status.scale
// and the member states (holds) in one write.
//
// Every broker call goes through deps.brokers (broker-client), so its
// transport and credentials live in one place. The owner swap is the only
// write here: a merge patch of the NaradTopic status guarded by its
// resourceVersion; on 409 the next pass re-reads and re-checks.

export async function scaleCluster(ctx: ClusterContext): Promise<StepResult> {
  const { cluster, deps } = ctx;
  const stsName = resourceNames(ctx.name).statefulSet;
  const pods = deps.caches.pods
    .list(ctx.namespace)
    .filter((p: V1Pod) => p.metadata?.labels?.[LABEL_CLUSTER] === ctx.name)
    .map((p) => podView(p, stsName))
    .filter((v): v is PodView => v !== undefined);
  const topics = deps.caches.topics
    .list(ctx.namespace)
    .filter((t) => t.spec?.cluster === ctx.name && !t.metadata.deletionTimestamp);
  const topicByName = new Map(topics.map((t) => [t.metadata.name ?? "", t]));
  const views: ScaleTopic[] = topics.map((t) => ({
    name: t.metadata.name ?? "",
    assignments: t.status?.assignments ?? [],
  }));
  const scale = cluster.status?.scale ?? undefined;
  const endpoint = (id: string) => {
    const pod = pods.find((p) => p.name === id && !p.terminating);
    return pod?.podIP === undefined ? undefined : { podIP: pod.podIP, id };
  };

  const moveProbes = new Map<string, MoveProbe>();
  await Promise.all(
    (scale?.moves ?? []).map(async (m) => {
      const topic = topicByName.get(m.topic);
      const ep = endpoint(m.to);
      if (topic === undefined) return;
      if (ep === undefined) {
        moveProbes.set(moveKey(m), { kind: "unreachable", error: `${m.to} has no running pod` });
        return;
      }
      try {
        const r = await deps.brokers.getMove(
          ep,
          topicName(topic),
          m.partition,
          AbortSignal.timeout(SCALE_BROKER_TIMEOUT_MS),
        );
        moveProbes.set(
          moveKey(m),
          r === undefined
            ? { kind: "unknown" }
            : { kind: "state", state: r.state, ...(r.error !== undefined ? { error: r.error } : {}) },
        );
      } catch (err) {
        moveProbes.set(moveKey(m), { kind: "unreachable", error: apiMessage(err) });
      }
    }),
  );

  let decommissionProbe: DecommissionProbe | undefined;
  const leaving = scale?.decommissioning;
  const leavingEp = leaving === undefined ? undefined : endpoint(leaving);
  if (leavingEp !== undefined) {
    try {
      const s = await deps.brokers.status(leavingEp, AbortSignal.timeout(SCALE_BROKER_TIMEOUT_MS));
      decommissionProbe = {
        reachable: true,
        pendingRecords: s.wal.pendingRecords,
        ownedPartitions: s.ownedPartitions,
        refusingProduce: s.draining,
        movedAwayCopies: s.movedAwayCopies,
      };
    } catch (err) {
      decommissionProbe = { reachable: false, error: apiMessage(err) };
    }
  }

  const rollNext = ctx.roll !== undefined ? ctx.roll.next : (cluster.status?.roll ?? undefined);
  const rollBusy =
    rollNext !== undefined
      ? `${rollNext.podInFlight} in a planned restart`
      : ctx.roll !== undefined && ctx.roll.outdated > 0 && !ctx.spec.rollout.paused
        ? `${ctx.roll.outdated} pod(s) to restart`
        : undefined;

  const plan = planScale({
    nowMs: deps.clock.now(),
    replicas: ctx.spec.replicas,
    members: cluster.status?.members ?? [],
    pods,
    scale,
    topics: views,
    rollBusy,
    rebalance: ctx.spec.rebalance,
    rebalanceRequest: cluster.metadata.annotations?.[ANNOTATION_REBALANCE],
    moveProbes,
    decommissionProbe,
    maxMoves: SCALE_MAX_MOVES,
  });
  ctx.scale = plan;
  const log = ctx.log.child({ step: "scale" });

  for (const m of plan.cancel) {
    const topic = topicByName.get(m.topic);
    const ep = endpoint(m.to);
    if (topic === undefined || ep === undefined) continue;
    try {
      await deps.brokers.cancelMove(
        ep,
        topicName(topic),
        m.partition,
        AbortSignal.timeout(SCALE_BROKER_TIMEOUT_MS),
      );
      log.info(`cancelled move of ${moveKey(m)} on ${m.to}`);
    } catch (err) {
      // The destination stops renewing the source's freeze when it goes; the
      // freeze lapses on its own (broker side), so this is not fatal.
      const msg = `cancelling the move of ${moveKey(m)} on ${m.to} failed: ${apiMessage(err)}`;
      log.warn(msg);
      deps.recorder.record(cluster, "Warning", "MoveCancelFailed", msg);
    }
  }
  for (const m of plan.start) {
    const topic = topicByName.get(m.topic);
    const ep = endpoint(m.to);
    if (topic === undefined || ep === undefined) continue;
    try {
      const r = await deps.brokers.startMove(
        ep,
        topicName(topic),
        m.partition,
        m.from,
        AbortSignal.timeout(SCALE_BROKER_TIMEOUT_MS),
      );
      log.info(`started move of ${moveKey(m)} from ${m.from} on ${m.to}: ${r.state}`);
    } catch (err) {
      // Retried next pass (the move stays in status; its probe says unknown).
      log.warn(`starting the move of ${moveKey(m)} on ${m.to} failed: ${apiMessage(err)}`);
    }
  }
  await swapOwners(ctx, plan.swap, topicByName);

  for (const e of plan.events) {
    log.info({ reason: e.reason }, e.message);
    deps.recorder.record(cluster, e.type, e.reason, e.message);
  }
  if (plan.blocked !== undefined) {
    log.warn(plan.blocked);
    // One Event when the refusal starts (or its reason changes), not one per pass.
    const prev = getCondition(cluster.status?.conditions, "Degraded");
    if (prev?.reason !== "ScaleDownBlocked" || !prev.message.includes(plan.blocked))
      deps.recorder.record(cluster, "Warning", "ScaleDownBlocked", plan.blocked);
  }
  const busy = plan.next?.decommissioning !== undefined || (plan.next?.moves ?? []).length > 0;
  const delay =
    busy || plan.progress !== undefined
      ? SCALE_REQUEUE_MS
      : plan.blocked
        ? REQUEUE_PROGRESSING_MS
        : undefined;
  if (delay !== undefined)
    ctx.requeueAfterMs = ctx.requeueAfterMs === undefined ? delay : Math.min(ctx.requeueAfterMs, delay);
  return NEXT;
}

/**
 * Owner swaps, one status patch per topic guarded by its resourceVersion,
 * each partition re-checked against the cached assignments (still owned by
 * the move's source). A conflict means our cache is stale: the next pass
 * sees the newer object and tries again; the destination stays ready (and
 * keeps the source frozen) meanwhile.
 */
async function swapOwners(
  ctx: ClusterContext,
  swaps: readonly PartitionMoveStatus[],
  topicByName: ReadonlyMap<string, NaradTopic>,
): Promise<void> {
  const byTopic = new Map<string, PartitionMoveStatus[]>();
  for (const m of swaps) byTopic.set(m.topic, [...(byTopic.get(m.topic) ?? []), m]);
  for (const [name, moves] of byTopic) {
    const topic = topicByName.get(name);
    if (topic === undefined) continue;
    const prev = topic.status?.assignments ?? [];
    const swapped = moves.filter((m) => prev.find((a) => a.partition === m.partition)?.owner === m.from);
    if (swapped.length === 0) continue;
    const assignments = prev.map((a) => {
      const m = swapped.find((x) => x.partition === a.partition);
      return m === undefined ? a : { partition: a.partition, owner: m.to };
    });
    const epoch = (topic.status?.assignmentEpoch ?? 0) + 1;
    const what = swapped.map((m) => `${m.partition}: ${m.from} → ${m.to}`).join(", ");
    try {
      await ctx.deps.api.patchStatus(
        { plural: TOPIC_PLURAL, namespace: ctx.namespace, name },
        { assignments, assignmentEpoch: epoch },
        topic.metadata.resourceVersion ?? "",
      );
      const msg = `owner swapped for partition(s) ${what} (destination ready); assignment epoch ${epoch}`;
      ctx.log.info({ topic: name }, msg);
      ctx.deps.recorder.record(
        { ...topic, apiVersion: API_GROUP_VERSION, kind: TOPIC_KIND },
        "Normal",
        "OwnerSwapped",
        msg,
      );
    } catch (err) {
      if (httpStatus(err) === 409) {
        ctx.log.debug(
          { topic: name },
          "owner swap conflicted (topic changed since cached); retrying next pass",
        );
        continue;
      }
      ctx.log.warn({ topic: name, err: apiMessage(err) }, `owner swap of ${what} failed`);
    }
  }
}
