import type { V1Pod } from "@kubernetes/client-node";
import { topicName } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradTopic, PartitionMoveStatus } from "../../../../packages/api/src/v1alpha1/types.ts";
import {
  ANNOTATION_REBALANCE,
  API_GROUP_VERSION,
  LABEL_CLUSTER,
  MOVE_RETRY_BACKOFF_MAX_MS,
  REQUEUE_PROGRESSING_MS,
  SCALE_BROKER_TIMEOUT_MS,
  SCALE_MAX_MOVES,
  SCALE_REQUEUE_MS,
  TOPIC_KIND,
  TOPIC_PLURAL,
} from "../../constants.ts";
import { apiMessage, httpStatus } from "../../kube/api.ts";
import { getCondition } from "../../plan/conditions.ts";
import { abortCandidates, type MoveTiming } from "../../plan/move-stall.ts";
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
    replicationFactor: t.status?.replicationFactor,
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
            : {
                kind: "state",
                state: r.state,
                ...(r.error !== undefined ? { error: r.error } : {}),
                ...(r.copiedBytes !== undefined ? { copiedBytes: r.copiedBytes } : {}),
                ...(r.destHwm !== undefined ? { destHwm: r.destHwm } : {}),
              },
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

  const nowMs = deps.clock.now();
  const timing: MoveTiming = {
    stallMs: ctx.spec.moves.stallTimeoutSeconds * 1000,
    retryBackoffMs: ctx.spec.moves.retryBackoffSeconds * 1000,
    retryBackoffMaxMs: MOVE_RETRY_BACKOFF_MAX_MS,
  };
  const liveOwners = await readLiveOwners(ctx, scale?.moves ?? [], views, moveProbes, nowMs, timing);

  const plan = planScale({
    nowMs,
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
    timing,
    liveOwners,
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
      // freeze lapses on its own (broker side). An aborting move is cancelled
      // again next pass until its destination confirms (plan/scale.ts), so
      // only its first failure is an Event; the condition carries the rest.
      const msg = `cancelling the move of ${moveKey(m)} on ${m.to} failed: ${apiMessage(err)}`;
      log.warn(msg);
      if ((m.aborting?.attempts ?? 1) <= 1) deps.recorder.record(cluster, "Warning", "MoveCancelFailed", msg);
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

  const labels = { namespace: ctx.namespace, cluster: ctx.name };
  for (const a of plan.aborted) deps.metrics?.moveAborts.inc({ ...labels, cause: a.cause });
  const stalled =
    (plan.next?.moves ?? []).filter((m) => m.aborting?.stalled === true || m.stuckSince !== undefined)
      .length + (plan.next?.moveRetries ?? []).filter((r) => Date.parse(r.notBefore) > nowMs).length;
  deps.metrics?.movesStuck.set(labels, stalled);

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
 * The owner of each move that would be aborted this pass, read from the API
 * server: the cache may not show a swap made moments ago, and cancelling a
 * move past its swap would take the partition from its new owner. A read
 * that fails leaves the move out (not aborted this pass).
 */
async function readLiveOwners(
  ctx: ClusterContext,
  moves: readonly PartitionMoveStatus[],
  topics: readonly ScaleTopic[],
  probes: ReadonlyMap<string, MoveProbe>,
  nowMs: number,
  timing: MoveTiming,
): Promise<Map<string, string | undefined>> {
  const cachedOwner = (m: PartitionMoveStatus) =>
    topics.find((t) => t.name === m.topic)?.assignments.find((a) => a.partition === m.partition)?.owner;
  const candidates = abortCandidates(moves, cachedOwner, probes, moveKey, nowMs, timing.stallMs);
  const live = new Map<string, string | undefined>();
  for (const name of new Set(candidates.map((m) => m.topic))) {
    try {
      const t = await ctx.deps.api.getTopic(ctx.namespace, name);
      for (const m of candidates.filter((x) => x.topic === name))
        live.set(moveKey(m), t?.status?.assignments?.find((a) => a.partition === m.partition)?.owner);
    } catch (err) {
      ctx.log.warn({ topic: name, err: apiMessage(err) }, "could not read the topic to confirm a move abort");
    }
  }
  return live;
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
