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
  nextRollStatus,
  outdatedPods,
  planDrainCancel,
  planRoll,
  type RollAction,
  rollForPodInFlight,
} from "../../plan/roll.ts";
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
// Persistence: status.roll is written by the status step at the end of the
// pass that starts a pod's restart (together with its member going to
// Maintenance), and the drain and the deletion only ever happen in later
// passes, which see it in the cache. So a restarted operator reads which pod
// is in flight from status and carries on from what it observes.

export async function rollPods(ctx: ClusterContext): Promise<StepResult> {
  const { cluster, deps } = ctx;
  const stsName = resourceNames(ctx.name).statefulSet;
  const sts = deps.caches.statefulSets.get(ctx.namespace, stsName);
  const pods = clusterPodViews(ctx);
  const updateRevision = sts?.status?.updateRevision;
  const now = deps.clock.now();
  const persistedRoll = cluster.status?.roll ?? undefined;
  const prevRoll = rollForPodInFlight(persistedRoll, pods, updateRevision, now);
  // A pod in flight replaced since the roll named it is named afresh, and
  // that is persisted before anything is done to it.
  const renamed = prevRoll !== persistedRoll ? prevRoll : undefined;
  const inFlightPod = prevRoll === undefined ? undefined : pods.find((p) => p.name === prevRoll.podInFlight);
  const probe =
    inFlightPod === undefined || renamed !== undefined ? undefined : await probeBroker(ctx, inFlightPod);

  let action: RollAction =
    renamed !== undefined
      ? {
          kind: "wait",
          code: "PodReplacing",
          pod: renamed.podInFlight,
          reason: `${renamed.podInFlight} was replaced since the roll named it and is still outdated: restarting the new pod (${renamed.podReadyAtStart ? "Ready" : "not Ready"})`,
        }
      : planRoll({
          nowMs: now,
          replicas: ctx.spec.replicas,
          updateRevision,
          pods,
          members: cluster.status?.members ?? [],
          roll: prevRoll,
          paused: ctx.spec.rollout.paused,
          force: ctx.spec.rollout.force,
          drainTimeoutMs: ctx.spec.rollout.drainTimeoutSeconds * 1000,
          gateTimeoutMs: ctx.spec.rollout.gateTimeoutSeconds * 1000,
          inFlightBroker: probe,
          scaleBusy: cluster.status?.scale?.moves?.length
            ? `${cluster.status.scale.moves.length} partition move(s) in flight`
            : undefined,
          drainCancelOwed: cluster.status?.drainCancel?.pod,
          leadership: prevRoll === undefined ? undefined : { led: ledBy(ctx, prevRoll.podInFlight) },
          handoffTimeoutMs: ROLL_HANDOFF_TIMEOUT_MS,
        });
  const outdated =
    updateRevision === undefined ? 0 : outdatedPods(pods, updateRevision, ctx.spec.replicas).length;
  let next: RollStatus | undefined = renamed ?? nextRollStatus(prevRoll, action, now);
  const podOf = (name: string) => pods.find((p) => p.name === name);
  let drainCancel: DrainCancelStatus | undefined = cluster.status?.drainCancel ?? undefined;
  const log = ctx.log.child({ roll: action.kind, ...("pod" in action ? { pod: action.pod } : {}) });
  if (action.handoff !== undefined && "pod" in action) {
    const h = action.handoff;
    const waited = prevRoll === undefined ? 0 : now - Date.parse(prevRoll.startedAt);
    if (h.kept.length === 0) {
      const msg = `${action.pod} leads no replicated partition (handoff done in ${waited} ms); draining it`;
      log.info(msg);
      deps.recorder.record(cluster, "Normal", "LeadershipHandedOff", msg);
    } else {
      const why = h.timedOut
        ? `leadership did not move within ${ROLL_HANDOFF_TIMEOUT_MS / 1000}s`
        : "no other in-sync replica is Active on its recorded volume";
      const msg = `${action.pod} still leads ${h.kept.length} replicated partition(s) (${h.kept.slice(0, 10).join(", ")}${h.kept.length > 10 ? ", …" : ""}): ${why}; they stay led by it and are unavailable while it restarts`;
      log.warn(msg);
      deps.recorder.record(cluster, "Warning", "LeadershipKept", msg);
    }
  }

  switch (action.kind) {
    case "none":
      log.debug(action.reason);
      break;
    case "wait":
      log.debug({ code: action.code }, `roll waits: ${action.reason}`);
      // One Event when the other brokers start to hold the pod in flight, not one per pass.
      if (action.gateBlocked === true && prevRoll?.gateBlockedSince === undefined)
        deps.recorder.record(cluster, "Warning", "RollWaiting", action.reason);
      break;
    case "enterMaintenance": {
      const msg = `restarting ${action.pod} (${action.reason}): member → Maintenance, then drain`;
      log.info({ soleBroker: action.soleBroker }, msg);
      // A single broker's restart is downtime: a Warning, so it is seen.
      deps.recorder.record(cluster, action.soleBroker ? "Warning" : "Normal", "RollingUpdate", msg);
      break;
    }
    case "drain": {
      const pod = podOf(action.pod);
      if (pod?.podIP === undefined) break;
      try {
        const s = await deps.brokers.drain({ podIP: pod.podIP, id: pod.name }, ROLL_DRAIN_WAIT_MS);
        const msg = `asked ${pod.name} to drain: ${s.wal.pendingRecords} WAL record(s) pending after ${ROLL_DRAIN_WAIT_MS} ms`;
        log.info({ pending: s.wal.pendingRecords }, msg);
        deps.recorder.record(cluster, "Normal", "Draining", msg);
      } catch (err) {
        // The next pass probes again; an unanswered probe is a wait, never a restart without a drain.
        log.warn({ err: apiMessage(err) }, `drain request to ${pod.name} failed`);
      }
      break;
    }
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
    case "deletePod": {
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
        action = { kind: "wait", code: "DisruptionBudget", pod: action.pod, reason };
        break;
      }
      const msg = `evicted pod ${action.pod} for a planned restart: ${action.reason}${action.soleBroker ? "; the only broker: nothing serves until its replacement is Ready" : ""}`;
      log.info({ result: result.kind, forced: action.forced }, msg);
      deps.recorder.record(
        cluster,
        action.forced ? "Warning" : "Normal",
        action.forced ? "ForcedRestart" : "RollingUpdate",
        result.kind === "evicted" ? msg : `pod ${action.pod} was already gone or replaced`,
      );
      break;
    }
    case "abort": {
      const pod = podOf(action.pod);
      let cancelled = "";
      if (action.cancelDrain && pod?.podIP !== undefined) {
        try {
          await deps.brokers.cancelDrain({ podIP: pod.podIP, id: pod.name });
          cancelled = "; drain cancelled, it accepts produce again";
        } catch (err) {
          // The roll is cleared anyway (its member leaves Maintenance, so
          // peers stop holding for it), and the cancel is retried every pass
          // from status.drainCancel until the broker confirms it.
          cancelled = `; cancelling its drain failed (${apiMessage(err)}), retrying every pass`;
          drainCancel = {
            pod: action.pod,
            since: new Date(now).toISOString(),
            attempts: 1,
            lastError: apiMessage(err),
          };
        }
      } else if (action.cancelDrain) {
        // No address to ask now: the cancel is owed all the same.
        drainCancel = {
          pod: action.pod,
          since: new Date(now).toISOString(),
          attempts: 0,
          lastError: "no pod IP",
        };
      }
      const msg = `${action.reason}${cancelled}`;
      log.warn(msg);
      deps.recorder.record(cluster, "Warning", "RollAborted", msg);
      action = { ...action, reason: msg };
      break;
    }
    case "stuck": {
      log.warn({ pending: action.pendingRecords }, `roll blocked: ${action.reason}`);
      // One Event when the roll becomes blocked, not one per pass.
      if (getCondition(cluster.status?.conditions, "Progressing")?.reason !== "RollBlocked")
        deps.recorder.record(cluster, "Warning", "RollBlocked", action.reason);
      break;
    }
    case "finish": {
      next = undefined;
      const left = outdated;
      const msg =
        left === 0
          ? `${action.pod} restarted and Ready at revision ${action.revision}; every pod runs it now`
          : `${action.pod} restarted and Ready at revision ${action.revision}; ${left} pod(s) to go`;
      log.info(msg);
      deps.recorder.record(cluster, "Normal", left === 0 ? "RollComplete" : "RollingUpdate", msg);
      break;
    }
  }

  if (action.kind !== "abort") drainCancel = await retryDrainCancel(ctx, drainCancel, next, pods);

  ctx.roll = { next, action, outdated, drainCancel };
  const rolling = next !== undefined || (outdated > 0 && !ctx.spec.rollout.paused);
  if (rolling) ctx.requeueAfterMs = isWaiting(action) ? ROLL_REQUEUE_MS : ROLL_ACTION_REQUEUE_MS;
  return NEXT;
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

function isWaiting(a: RollAction): boolean {
  return a.kind === "wait" || a.kind === "stuck" || a.kind === "none";
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
