import type { Logger } from "pino";
import { topicName } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type {
  NaradTopic,
  PartitionMoveStatus,
  ScaleStatus,
} from "../../../../packages/api/src/v1alpha1/types.ts";
import type { BrokerEndpoint } from "../../broker-client/types.ts";
import {
  ANNOTATION_REBALANCE,
  API_GROUP_VERSION,
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
import type { PodView } from "../../plan/pods.ts";
import {
  decommissionProbeOf,
  moveProbeOf,
  rollBusyReason,
  scaleDownBlockedIsNews,
  scaleRequeueMs,
  stuckMoveCount,
} from "../../plan/scale/pass.ts";
import {
  type DecommissionProbe,
  type MoveProbe,
  moveKey,
  planScale,
  type ScaleInput,
  type ScalePlan,
  type ScaleTopic,
} from "../../plan/scale.ts";
import { clusterPodViews } from "./cluster-pods.ts";
import { type ClusterContext, NEXT, type StepResult } from "./context.ts";

// Step after the roll: scale-down (decommission with partition moves) and
// rebalance, deciding with plan/scale.ts from the cached pods, topics and
// the persisted status (members, status.scale), plus what the brokers
// answer this pass (each move's state on its destination, the WAL of the
// member being decommissioned). The status step then writes status.scale
// and the member states (holds) in one write.
//
// One pass: observe (observeScale: the caches, then the brokers and the API
// server), decide (planScale, plus plan/scale/pass.ts), act (cancel and
// start moves on their destinations, swap owners, then metrics, Events and
// the requeue).
//
// Every broker call goes through deps.brokers (broker-client), so its
// transport and credentials live in one place. The owner swap is the only
// write here: a merge patch of the NaradTopic status guarded by its
// resourceVersion; on 409 the next pass re-reads and re-checks.

export async function scaleCluster(ctx: ClusterContext): Promise<StepResult> {
  const seen = await observeScale(ctx);
  const plan = planScale(scaleInput(ctx, seen));
  ctx.scale = plan;
  const log = ctx.log.child({ step: "scale" });
  await cancelMoves(ctx, seen, plan.cancel, log);
  await startMoves(ctx, seen, plan.start, log);
  await swapOwners(ctx, plan.swap, seen.topicByName);
  reportScale(ctx, plan, seen.nowMs, log);
  const delay = scaleRequeueMs(plan, { workingMs: SCALE_REQUEUE_MS, blockedMs: REQUEUE_PROGRESSING_MS });
  if (delay !== undefined)
    ctx.requeueAfterMs = ctx.requeueAfterMs === undefined ? delay : Math.min(ctx.requeueAfterMs, delay);
  return NEXT;
}

/** What the scale step sees this pass: the caches, then the brokers' and the API server's answers. */
interface ScaleObservation {
  pods: PodView[];
  topics: ScaleTopic[];
  topicByName: ReadonlyMap<string, NaradTopic>;
  /** status.scale as persisted. */
  scale: ScaleStatus | undefined;
  /** A member's admin endpoint: its running (not terminating) pod's IP. */
  endpoint(id: string): BrokerEndpoint | undefined;
  moveProbes: Map<string, MoveProbe>;
  decommissionProbe: DecommissionProbe | undefined;
  nowMs: number;
  timing: MoveTiming;
  liveOwners: Map<string, string | undefined>;
}

async function observeScale(ctx: ClusterContext): Promise<ScaleObservation> {
  const pods = clusterPodViews(ctx);
  const cached = ctx.deps.caches.topics
    .list(ctx.namespace)
    .filter((t) => t.spec?.cluster === ctx.name && !t.metadata.deletionTimestamp);
  const topicByName = new Map(cached.map((t) => [t.metadata.name ?? "", t]));
  const topics: ScaleTopic[] = cached.map((t) => ({
    name: t.metadata.name ?? "",
    assignments: t.status?.assignments ?? [],
    replicationFactor: t.status?.replicationFactor,
  }));
  const scale = ctx.cluster.status?.scale ?? undefined;
  const endpoint = (id: string) => {
    const pod = pods.find((p) => p.name === id && !p.terminating);
    return pod?.podIP === undefined ? undefined : { podIP: pod.podIP, id };
  };
  const moveProbes = await probeMoves(ctx, scale?.moves ?? [], topicByName, endpoint);
  const leaving = scale?.decommissioning;
  const leavingEp = leaving === undefined ? undefined : endpoint(leaving);
  const decommissionProbe = leavingEp === undefined ? undefined : await probeLeaving(ctx, leavingEp);
  const nowMs = ctx.deps.clock.now();
  const timing: MoveTiming = {
    stallMs: ctx.spec.moves.stallTimeoutSeconds * 1000,
    retryBackoffMs: ctx.spec.moves.retryBackoffSeconds * 1000,
    retryBackoffMaxMs: MOVE_RETRY_BACKOFF_MAX_MS,
  };
  const liveOwners = await readLiveOwners(ctx, scale?.moves ?? [], topics, moveProbes, nowMs, timing);
  return {
    pods,
    topics,
    topicByName,
    scale,
    endpoint,
    moveProbes,
    decommissionProbe,
    nowMs,
    timing,
    liveOwners,
  };
}

/** Each move in flight, asked of its destination (in parallel), by moveKey(). */
async function probeMoves(
  ctx: ClusterContext,
  moves: readonly PartitionMoveStatus[],
  topicByName: ReadonlyMap<string, NaradTopic>,
  endpoint: (id: string) => BrokerEndpoint | undefined,
): Promise<Map<string, MoveProbe>> {
  const probes = new Map<string, MoveProbe>();
  await Promise.all(
    moves.map(async (m) => {
      const topic = topicByName.get(m.topic);
      const ep = endpoint(m.to);
      if (topic === undefined) return;
      if (ep === undefined) {
        probes.set(moveKey(m), { kind: "unreachable", error: `${m.to} has no running pod` });
        return;
      }
      try {
        const r = await ctx.deps.brokers.getMove(
          ep,
          topicName(topic),
          m.partition,
          AbortSignal.timeout(SCALE_BROKER_TIMEOUT_MS),
        );
        probes.set(moveKey(m), moveProbeOf(r));
      } catch (err) {
        probes.set(moveKey(m), { kind: "unreachable", error: apiMessage(err) });
      }
    }),
  );
  return probes;
}

/** The admin status of the member being decommissioned. */
async function probeLeaving(ctx: ClusterContext, ep: BrokerEndpoint): Promise<DecommissionProbe> {
  try {
    return decommissionProbeOf(
      await ctx.deps.brokers.status(ep, AbortSignal.timeout(SCALE_BROKER_TIMEOUT_MS)),
    );
  } catch (err) {
    return { reachable: false, error: apiMessage(err) };
  }
}

function scaleInput(ctx: ClusterContext, seen: ScaleObservation): ScaleInput {
  const { cluster, spec } = ctx;
  return {
    nowMs: seen.nowMs,
    replicas: spec.replicas,
    members: cluster.status?.members ?? [],
    pods: seen.pods,
    scale: seen.scale,
    topics: seen.topics,
    rollBusy: rollBusyReason(ctx.roll, cluster.status?.roll ?? undefined, spec.rollout.paused),
    rebalance: spec.rebalance,
    rebalanceRequest: cluster.metadata.annotations?.[ANNOTATION_REBALANCE],
    moveProbes: seen.moveProbes,
    decommissionProbe: seen.decommissionProbe,
    maxMoves: SCALE_MAX_MOVES,
    timing: seen.timing,
    liveOwners: seen.liveOwners,
  };
}

/** The move's topic (its data name) and destination endpoint, when both are known. */
function destinationOf(
  seen: ScaleObservation,
  m: PartitionMoveStatus,
): { topic: string; ep: BrokerEndpoint } | undefined {
  const topic = seen.topicByName.get(m.topic);
  const ep = seen.endpoint(m.to);
  return topic === undefined || ep === undefined ? undefined : { topic: topicName(topic), ep };
}

async function cancelMoves(
  ctx: ClusterContext,
  seen: ScaleObservation,
  moves: readonly PartitionMoveStatus[],
  log: Logger,
): Promise<void> {
  for (const m of moves) {
    const dest = destinationOf(seen, m);
    if (dest === undefined) continue;
    try {
      await ctx.deps.brokers.cancelMove(
        dest.ep,
        dest.topic,
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
      if ((m.aborting?.attempts ?? 1) <= 1)
        ctx.deps.recorder.record(ctx.cluster, "Warning", "MoveCancelFailed", msg);
    }
  }
}

async function startMoves(
  ctx: ClusterContext,
  seen: ScaleObservation,
  moves: readonly PartitionMoveStatus[],
  log: Logger,
): Promise<void> {
  for (const m of moves) {
    const dest = destinationOf(seen, m);
    if (dest === undefined) continue;
    try {
      const r = await ctx.deps.brokers.startMove(
        dest.ep,
        dest.topic,
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
}

/** The plan's metrics (aborts, stuck moves), its Events, and a refused scale-down (one Event when it starts). */
function reportScale(ctx: ClusterContext, plan: ScalePlan, nowMs: number, log: Logger): void {
  const { cluster, deps } = ctx;
  const labels = { namespace: ctx.namespace, cluster: ctx.name };
  for (const a of plan.aborted) deps.metrics?.moveAborts.inc({ ...labels, cause: a.cause });
  deps.metrics?.movesStuck.set(labels, stuckMoveCount(plan.next, nowMs));
  for (const e of plan.events) {
    log.info({ reason: e.reason }, e.message);
    deps.recorder.record(cluster, e.type, e.reason, e.message);
  }
  if (plan.blocked !== undefined) {
    log.warn(plan.blocked);
    if (scaleDownBlockedIsNews(getCondition(cluster.status?.conditions, "Degraded"), plan.blocked))
      deps.recorder.record(cluster, "Warning", "ScaleDownBlocked", plan.blocked);
  }
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
