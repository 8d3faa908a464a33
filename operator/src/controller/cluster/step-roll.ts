import type { Logger } from "pino";
import type { DrainCancelStatus, RollStatus } from "../../../../packages/api/src/v1alpha1/types.ts";
import {
  ROLL_ACTION_REQUEUE_MS,
  ROLL_DRAIN_WAIT_MS,
  ROLL_HANDOFF_TIMEOUT_MS,
  ROLL_REQUEUE_MS,
  ROLL_STATUS_TIMEOUT_MS,
} from "../../constants.ts";
import { apiMessage, type EvictionResult } from "../../kube/api.ts";
import { getCondition } from "../../plan/conditions.ts";
import type { PodView } from "../../plan/pods.ts";
import {
  type BrokerProbe,
  type LedPartition,
  outdatedPods,
  planDrainCancel,
  type RollAction,
  type RollInput,
  rollForPodInFlight,
} from "../../plan/roll.ts";
import {
  decideRoll,
  handoffEvent,
  owedDrainCancel,
  type RollEvent,
  rollFinishedEvent,
  rollRequeueMs,
  scaleBusyReason,
} from "../../plan/roll-pass.ts";
import { asReplicaAssignment, handoffTarget, replicaMemberView } from "../../plan/topic-replication.ts";
import { resourceNames } from "../../specs/labels.ts";
import { StepError } from "./apply-owned.ts";
import { clusterPodViews } from "./cluster-pods.ts";
import { type ClusterContext, NEXT, type StepResult } from "./context.ts";

// Step 3: the drained rolling restart. The StatefulSet is OnDelete, so its
// controller never replaces a pod on its own; this step does, one pod at a
// time, deciding ONE action per pass with plan/roll.ts from the cached pods,
// the StatefulSet's update revision, the persisted status (roll progress,
// members) and the in-flight broker's admin status.
//
// One pass: observe (observeRoll: the caches, the pod in flight and its
// broker), decide (decideRoll in plan/roll-pass.ts, around planRoll), act
// (carryOut: the one action, then a drain cancel still owed, the outcome for
// the status step, the requeue).
//
// Persistence: status.roll is written by the status step at the end of the
// pass that starts a pod's restart (together with its member going to
// Maintenance), and the drain and the deletion only ever happen in later
// passes, which see it in the cache. So a restarted operator reads which pod
// is in flight from status and carries on from what it observes.

export async function rollPods(ctx: ClusterContext): Promise<StepResult> {
  const seen = await observeRoll(ctx);
  const { action: planned, next } = decideRoll(seen.renamed, rollInput(ctx, seen));
  const outdated =
    seen.updateRevision === undefined
      ? 0
      : outdatedPods(seen.pods, seen.updateRevision, ctx.spec.replicas).length;
  const log = ctx.log.child({ roll: planned.kind, ...("pod" in planned ? { pod: planned.pod } : {}) });
  if (planned.handoff !== undefined && "pod" in planned) {
    const waited = seen.roll === undefined ? 0 : seen.now - Date.parse(seen.roll.startedAt);
    record(ctx, log, handoffEvent(planned.pod, planned.handoff, waited, ROLL_HANDOFF_TIMEOUT_MS));
  }
  const done = await carryOut(ctx, seen, planned, outdated, log);
  const action = done.action;
  const drainCancel =
    action.kind !== "abort"
      ? await retryDrainCancel(ctx, done.drainCancel, next, seen.pods)
      : done.drainCancel;

  ctx.roll = { next, action, outdated, drainCancel };
  const delay = rollRequeueMs(
    { next, outdated, paused: ctx.spec.rollout.paused, action },
    { waitingMs: ROLL_REQUEUE_MS, actingMs: ROLL_ACTION_REQUEUE_MS },
  );
  if (delay !== undefined) ctx.requeueAfterMs = delay;
  return NEXT;
}

/** What the roll step sees this pass. */
interface RollObservation {
  pods: PodView[];
  updateRevision: string | undefined;
  now: number;
  /** status.roll as it applies to the pod now in flight (rollForPodInFlight). */
  roll: RollStatus | undefined;
  /** The roll, when it names a replaced pod in flight afresh (persisted before anything is done to it). */
  renamed: RollStatus | undefined;
  /** The in-flight broker's admin status (not asked when renamed or no pod). */
  probe: BrokerProbe | undefined;
  /** The replicated partitions the pod in flight leads (cached topics), when a pod is in flight. */
  led: LedPartition[] | undefined;
  /** status.drainCancel as persisted. */
  drainCancel: DrainCancelStatus | undefined;
}

async function observeRoll(ctx: ClusterContext): Promise<RollObservation> {
  const { cluster, deps } = ctx;
  const sts = deps.caches.statefulSets.get(ctx.namespace, resourceNames(ctx.name).statefulSet);
  const pods = clusterPodViews(ctx);
  const updateRevision = sts?.status?.updateRevision;
  const now = deps.clock.now();
  const persisted = cluster.status?.roll ?? undefined;
  const roll = rollForPodInFlight(persisted, pods, updateRevision, now);
  // A pod in flight replaced since the roll named it is named afresh, and
  // that is persisted before anything is done to it.
  const renamed = roll !== persisted ? roll : undefined;
  const inFlightPod = roll === undefined ? undefined : pods.find((p) => p.name === roll.podInFlight);
  const probe =
    inFlightPod === undefined || renamed !== undefined ? undefined : await probeBroker(ctx, inFlightPod);
  const led = renamed !== undefined || roll === undefined ? undefined : ledBy(ctx, roll.podInFlight);
  return {
    pods,
    updateRevision,
    now,
    roll,
    renamed,
    probe,
    led,
    drainCancel: cluster.status?.drainCancel ?? undefined,
  };
}

function rollInput(ctx: ClusterContext, seen: RollObservation): RollInput {
  return {
    nowMs: seen.now,
    replicas: ctx.spec.replicas,
    updateRevision: seen.updateRevision,
    pods: seen.pods,
    members: ctx.cluster.status?.members ?? [],
    roll: seen.roll,
    paused: ctx.spec.rollout.paused,
    force: ctx.spec.rollout.force,
    drainTimeoutMs: ctx.spec.rollout.drainTimeoutSeconds * 1000,
    gateTimeoutMs: ctx.spec.rollout.gateTimeoutSeconds * 1000,
    inFlightBroker: seen.probe,
    scaleBusy: scaleBusyReason(ctx.cluster.status?.scale),
    drainCancelOwed: ctx.cluster.status?.drainCancel?.pod,
    leadership: seen.led === undefined ? undefined : { led: seen.led },
    handoffTimeoutMs: ROLL_HANDOFF_TIMEOUT_MS,
  };
}

function record(ctx: ClusterContext, log: Logger, e: RollEvent): void {
  if (e.type === "Warning") log.warn(e.message);
  else log.info(e.message);
  ctx.deps.recorder.record(ctx.cluster, e.type, e.reason, e.message);
}

/**
 * Carries out this pass's one action. An eviction the disruption budget
 * refuses turns into a wait, an abort's message says what became of its
 * drain; an abort whose drain cancel is not confirmed owes one
 * (status.drainCancel).
 */
async function carryOut(
  ctx: ClusterContext,
  seen: RollObservation,
  action: RollAction,
  outdated: number,
  log: Logger,
): Promise<{ action: RollAction; drainCancel: DrainCancelStatus | undefined }> {
  const { cluster, deps } = ctx;
  const podOf = (name: string) => seen.pods.find((p) => p.name === name);
  switch (action.kind) {
    case "none":
      log.debug(action.reason);
      break;
    case "wait":
      log.debug({ code: action.code }, `roll waits: ${action.reason}`);
      // One Event when the other brokers start to hold the pod in flight, not one per pass.
      if (action.gateBlocked === true && seen.roll?.gateBlockedSince === undefined)
        deps.recorder.record(cluster, "Warning", "RollWaiting", action.reason);
      break;
    case "enterMaintenance": {
      const msg = `restarting ${action.pod} (${action.reason}): member → Maintenance, then drain`;
      log.info({ soleBroker: action.soleBroker }, msg);
      // A single broker's restart is downtime: a Warning, so it is seen.
      deps.recorder.record(cluster, action.soleBroker ? "Warning" : "Normal", "RollingUpdate", msg);
      break;
    }
    case "drain":
      await drainPod(ctx, podOf(action.pod), log);
      break;
    case "cancelDrain": {
      const pod = podOf(action.pod);
      if (pod?.podIP === undefined) break;
      try {
        await deps.brokers.cancelDrain({ podIP: pod.podIP, id: pod.name });
        log.info(action.reason);
        deps.recorder.record(cluster, "Normal", "DrainCancelled", action.reason);
      } catch (err) {
        log.warn({ err: apiMessage(err) }, `cancelling the drain of ${pod.name} failed`);
      }
      break;
    }
    case "deletePod":
      return { action: await evictPod(ctx, action, log), drainCancel: seen.drainCancel };
    case "abort":
      return abortRestart(ctx, seen, action, log);
    case "stuck": {
      log.warn({ pending: action.pendingRecords }, `roll blocked: ${action.reason}`);
      // One Event when the roll becomes blocked, not one per pass.
      if (getCondition(cluster.status?.conditions, "Progressing")?.reason !== "RollBlocked")
        deps.recorder.record(cluster, "Warning", "RollBlocked", action.reason);
      break;
    }
    case "finish":
      record(ctx, log, rollFinishedEvent(action.pod, action.revision, outdated));
      break;
  }
  return { action, drainCancel: seen.drainCancel };
}

async function drainPod(ctx: ClusterContext, pod: PodView | undefined, log: Logger): Promise<void> {
  if (pod?.podIP === undefined) return;
  try {
    const s = await ctx.deps.brokers.drain({ podIP: pod.podIP, id: pod.name }, ROLL_DRAIN_WAIT_MS);
    const msg = `asked ${pod.name} to drain: ${s.wal.pendingRecords} WAL record(s) pending after ${ROLL_DRAIN_WAIT_MS} ms`;
    log.info({ pending: s.wal.pendingRecords }, msg);
    ctx.deps.recorder.record(ctx.cluster, "Normal", "Draining", msg);
  } catch (err) {
    // The next pass probes again; an unanswered probe is a wait, never a restart without a drain.
    log.warn({ err: apiMessage(err) }, `drain request to ${pod.name} failed`);
  }
}

/** The restart itself; returns the action as carried out (a wait when the disruption budget refuses). */
async function evictPod(
  ctx: ClusterContext,
  action: Extract<RollAction, { kind: "deletePod" }>,
  log: Logger,
): Promise<RollAction> {
  const { cluster, deps } = ctx;
  // An Eviction, not a DELETE: the API server checks the PodDisruptionBudget
  // against its own current view, atomically, where our cache may be stale.
  let result: EvictionResult;
  try {
    result = await deps.api.evictPod(ctx.namespace, action.pod, action.uid);
  } catch (err) {
    const msg = `evict pod ${action.pod}: ${apiMessage(err)}`;
    deps.recorder.record(cluster, "Warning", "RollFailed", msg);
    throw new StepError(msg, { cause: err });
  }
  if (result.kind === "budget") {
    // Not ours to override: wait, and say so (once per blocked stretch).
    const reason = `the PodDisruptionBudget refuses evicting ${action.pod} now (${result.message}); retrying`;
    log.warn(reason);
    const shown = getCondition(cluster.status?.conditions, "Progressing")?.message ?? "";
    if (!shown.includes("PodDisruptionBudget"))
      deps.recorder.record(cluster, "Warning", "EvictionRefused", reason);
    return { kind: "wait", code: "DisruptionBudget", pod: action.pod, reason };
  }
  const msg = `evicted pod ${action.pod} for a planned restart: ${action.reason}${action.soleBroker ? "; the only broker: nothing serves until its replacement is Ready" : ""}`;
  log.info({ result: result.kind, forced: action.forced }, msg);
  deps.recorder.record(
    cluster,
    action.forced ? "Warning" : "Normal",
    action.forced ? "ForcedRestart" : "RollingUpdate",
    result.kind === "evicted" ? msg : `pod ${action.pod} was already gone or replaced`,
  );
  return action;
}

/**
 * A restart abandoned (another broker stayed unavailable): its drain is
 * cancelled when it may be draining; a cancel that fails, or has no address
 * to go to, is owed (status.drainCancel) and retried every pass.
 */
async function abortRestart(
  ctx: ClusterContext,
  seen: RollObservation,
  action: Extract<RollAction, { kind: "abort" }>,
  log: Logger,
): Promise<{ action: RollAction; drainCancel: DrainCancelStatus | undefined }> {
  const pod = seen.pods.find((p) => p.name === action.pod);
  let drainCancel = seen.drainCancel;
  let cancelled = "";
  if (action.cancelDrain && pod?.podIP !== undefined) {
    try {
      await ctx.deps.brokers.cancelDrain({ podIP: pod.podIP, id: pod.name });
      cancelled = "; drain cancelled, it accepts produce again";
    } catch (err) {
      // The roll is cleared anyway (its member leaves Maintenance, so
      // peers stop holding for it), and the cancel is retried every pass
      // from status.drainCancel until the broker confirms it.
      cancelled = `; cancelling its drain failed (${apiMessage(err)}), retrying every pass`;
      drainCancel = owedDrainCancel(action.pod, seen.now, 1, apiMessage(err));
    }
  } else if (action.cancelDrain) {
    // No address to ask now: the cancel is owed all the same.
    drainCancel = owedDrainCancel(action.pod, seen.now, 0, "no pod IP");
  }
  const msg = `${action.reason}${cancelled}`;
  log.warn(msg);
  ctx.deps.recorder.record(ctx.cluster, "Warning", "RollAborted", msg);
  return { action: { ...action, reason: msg }, drainCancel };
}

/**
 * A drain cancel owed since an abandoned restart (status.drainCancel):
 * decided by planDrainCancel from a fresh probe of that broker; returns what
 * status.drainCancel becomes.
 */
async function retryDrainCancel(
  ctx: ClusterContext,
  pending: DrainCancelStatus | undefined,
  roll: RollStatus | undefined,
  pods: readonly PodView[],
): Promise<DrainCancelStatus | undefined> {
  if (pending === undefined) return undefined;
  const { cluster, deps } = ctx;
  const pod = pods.find((p) => p.name === pending.pod);
  const probe =
    pod === undefined || roll?.podInFlight === pending.pod ? undefined : await probeBroker(ctx, pod);
  const step = planDrainCancel(pending, roll, pod, probe);
  if (step.kind === "none") return undefined;
  if (step.kind === "clear") {
    const msg = `the drain of ${pending.pod} owed since an abandoned restart is over: ${step.reason}`;
    ctx.log.info(msg);
    deps.recorder.record(cluster, "Normal", "DrainCancelled", msg);
    return undefined;
  }
  if (step.kind === "wait") return pending;
  ctx.requeueAfterMs = Math.min(ctx.requeueAfterMs ?? ROLL_REQUEUE_MS, ROLL_REQUEUE_MS);
  if (pod?.podIP === undefined) return { ...pending, lastError: "no pod IP" };
  try {
    const s = await deps.brokers.cancelDrain({ podIP: pod.podIP, id: pod.name });
    if (!s.draining) {
      const msg = `cancelled the drain of ${pod.name} (owed since an abandoned restart) after ${step.attempt} attempt(s): it accepts produce again`;
      ctx.log.info(msg);
      deps.recorder.record(cluster, "Normal", "DrainCancelled", msg);
      return undefined;
    }
    return { ...pending, attempts: step.attempt, lastError: "still draining after the cancel" };
  } catch (err) {
    ctx.log.warn(
      { err: apiMessage(err), attempt: step.attempt },
      `cancelling the drain of ${pod.name} failed again`,
    );
    return { ...pending, attempts: step.attempt, lastError: apiMessage(err) };
  }
}

/**
 * The replicated partitions `pod` leads now (cached NaradTopics of this
 * cluster), each with whether another replica can lead it now.
 */
function ledBy(ctx: ClusterContext, pod: string): LedPartition[] {
  const members = new Map((ctx.cluster.status?.members ?? []).map((m) => [m.id, replicaMemberView(m)]));
  const out: LedPartition[] = [];
  for (const t of ctx.deps.caches.topics.list(ctx.namespace)) {
    if (t.spec?.cluster !== ctx.name || t.metadata.deletionTimestamp) continue;
    for (const a of t.status?.assignments ?? []) {
      const r = asReplicaAssignment(a);
      if (r === undefined || r.leader !== pod) continue;
      out.push({
        key: `${t.metadata.name ?? ""}/${a.partition}`,
        movable: handoffTarget(r, members) !== undefined,
      });
    }
  }
  return out;
}

async function probeBroker(ctx: ClusterContext, pod: PodView): Promise<BrokerProbe | undefined> {
  if (pod.terminating) return undefined;
  if (pod.podIP === undefined) return { reachable: false, error: "no pod IP" };
  try {
    const s = await ctx.deps.brokers.status(
      { podIP: pod.podIP, id: pod.name },
      AbortSignal.timeout(ROLL_STATUS_TIMEOUT_MS),
    );
    return { reachable: true, draining: s.draining, pendingRecords: s.wal.pendingRecords };
  } catch (err) {
    return { reachable: false, error: apiMessage(err) };
  }
}
