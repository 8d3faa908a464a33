import type { V1Pod } from "@kubernetes/client-node";
import type {
  DrainCancelStatus,
  MemberStatus,
  NaradClusterStatus,
  RollStatus,
  ScaleStatus,
} from "../../../../packages/api/src/v1alpha1/types.ts";
import type { BrokerClient } from "../../broker-client/types.ts";
import {
  BROKER_HTTP_PORT,
  CLUSTER_PLURAL,
  LABEL_CLUSTER,
  OBSERVATION_SETTLE_MS,
  REQUEUE_PROGRESSING_MS,
  STATUS_CONFLICT_REQUEUE_MS,
  STATUS_WAL_TIMEOUT_MS,
  TERMINATION_GRACE_EXTRA_SECONDS,
} from "../../constants.ts";
import { apiMessage, httpStatus } from "../../kube/api.ts";
import { clusterVerdict, statusNeedsWrite } from "../../plan/cluster-status.ts";
import { getCondition } from "../../plan/conditions.ts";
import { planMembers } from "../../plan/members.ts";
import { judgeObservations, trackReachability } from "../../plan/observation.ts";
import { type PodView, podView } from "../../plan/pods.ts";
import { judgeReplacement } from "../../plan/replacement.ts";
import { maintenanceHolds } from "../../plan/roll.ts";
import { nextVolumeIds, recordedVolumeId } from "../../plan/volumes.ts";
import { resourceNames, selectorString } from "../../specs/labels.ts";
import type { ClusterContext } from "./context.ts";

// Last step, run even when an earlier step failed (so the failure shows in
// status): membership from pods, WAL pending counts from the brokers,
// phase and conditions, one status write when anything changed.

export interface StatusOutcome {
  requeueAfterMs: number | undefined;
}

export async function updateClusterStatus(ctx: ClusterContext, stepError: unknown): Promise<StatusOutcome> {
  const { cluster, deps } = ctx;
  const now = deps.clock.now();
  const nowIso = new Date(now).toISOString();
  const prev = cluster.status ?? {};
  const uid = cluster.metadata.uid ?? "";
  const stsName = resourceNames(ctx.name).statefulSet;
  const sts = deps.caches.statefulSets.get(ctx.namespace, stsName);
  const pods = deps.caches.pods
    .list(ctx.namespace)
    .filter((p: V1Pod) => p.metadata?.labels?.[LABEL_CLUSTER] === ctx.name)
    .map((p) => podView(p, stsName))
    .filter((v): v is PodView => v !== undefined);
  const updateRevision = sts?.status?.updateRevision;
  // The roll step decided status.roll this pass; if it did not run (an
  // earlier step failed), the persisted roll stands.
  const roll: RollStatus | undefined = ctx.roll !== undefined ? ctx.roll.next : (prev.roll ?? undefined);

  // Evidence for Down decisions: is the cache current, and does each broker
  // answer its admin status? (plan/members.ts)
  const trust = judgeObservations(
    [...(deps.caches.pods.health ?? []), ...(deps.caches.statefulSets.health ?? [])],
    now,
    deps.observationSettleMs ?? OBSERVATION_SETTLE_MS,
  );
  if (!trust.trusted)
    ctx.log.info({ why: trust.reason }, "pod readiness not trusted: no member is marked Down");
  const probes = await probeBrokers(prev.members ?? [], pods, deps.brokers, ctx);
  const unreachable = trackReachability(
    deps.memory.brokerUnreachableSince.get(uid) ?? new Map(),
    probes.answered,
    now,
  );
  deps.memory.brokerUnreachableSince.set(uid, unreachable);
  // Volume identities: from brokers that answered; the last known otherwise.
  const volumes = nextVolumeIds(new Map((prev.members ?? []).map((m) => [m.id, m.volumeId])), probes.volumes);

  // A replacement that never becomes Ready must not hold its member in
  // Maintenance forever (plan/replacement.ts).
  const replacement = judgeReplacement({
    roll,
    pods,
    updateRevision,
    nowMs: now,
    seen: deps.memory.replacementSeen.get(uid),
    timeoutMs: ctx.spec.rollout.replacementTimeoutSeconds * 1000,
    release: ctx.spec.rollout.releaseStuckReplacement,
    stuckBefore: stuckReplacementPod(prev.conditions),
    terminationGraceMs: (ctx.spec.rollout.drainTimeoutSeconds + TERMINATION_GRACE_EXTRA_SECONDS) * 1000,
  });
  if (replacement.seen === undefined) deps.memory.replacementSeen.delete(uid);
  else deps.memory.replacementSeen.set(uid, replacement.seen);
  const maintenance = maintenanceHolds(roll, pods, updateRevision);
  for (const id of replacement.released) maintenance.delete(id);

  const membership = planMembers({
    statefulSetName: stsName,
    replicas: ctx.spec.replicas,
    pods,
    previous: prev.members ?? [],
    previousEpoch: prev.membershipEpoch ?? 0,
    downGraceMs: ctx.spec.rollout.downGraceSeconds * 1000,
    nowMs: now,
    notReadySinceMs: deps.memory.notReadySince.get(uid) ?? new Map(),
    brokerUnreachableSinceMs: unreachable,
    observationsTrusted: trust.trusted,
    port: BROKER_HTTP_PORT,
    maintenance,
    holds: ctx.scale?.holds,
    volumeIds: volumes.volumeIds,
  });
  deps.memory.notReadySince.set(uid, membership.notReadySinceMs);
  for (const m of membership.members) {
    const pending = probes.walPending.get(m.id);
    if (pending !== undefined) m.walPendingRecords = pending;
  }

  const live = pods.filter((p) => !p.terminating);
  const inFlight = roll === undefined ? undefined : live.find((p) => p.name === roll.podInFlight);
  // Once a cluster has been Ready it never goes back to "Creating": later
  // unready brokers are a degradation, not a slow start.
  const everReady =
    getCondition(prev.conditions, "Ready")?.status === "True" ||
    (prev.phase !== undefined && ["Running", "Degraded", "Rolling", "Scaling"].includes(prev.phase));
  const verdict = clusterVerdict(
    {
      generation: cluster.metadata.generation ?? 0,
      specReplicas: ctx.spec.replicas,
      pods: live.length,
      readyPods: live.filter((p) => p.ready).length,
      members: membership.members,
      statefulSetExists: sts !== undefined,
      statefulSetReplicas: sts?.spec?.replicas,
      outdatedPods:
        updateRevision === undefined
          ? 0
          : live.filter((p) => p.revision !== undefined && p.revision !== updateRevision).length,
      refused: ctx.refused,
      scale:
        ctx.scale === undefined
          ? undefined
          : { progress: ctx.scale.progress, blocked: ctx.scale.blocked, stuck: ctx.scale.stuck },
      storage: ctx.storage,
      stepError: stepError === undefined ? undefined : apiMessage(stepError),
      everReady,
      stuckReplacement: replacement.stuck?.message,
      drainCancel: drainCancelMessage(ctx.roll !== undefined ? ctx.roll.drainCancel : prev.drainCancel),
      roll:
        roll === undefined && ctx.roll === undefined
          ? undefined
          : {
              inFlight: roll?.podInFlight,
              plannedUnavailable: roll !== undefined && inFlight?.ready !== true ? 1 : 0,
              action: ctx.roll?.action,
              paused: ctx.spec.rollout.paused,
            },
    },
    prev.conditions,
    nowIso,
  );

  const status: NaradClusterStatus = {
    // A pass whose step failed has not carried out this generation.
    observedGeneration:
      stepError === undefined ? (cluster.metadata.generation ?? 0) : (prev.observedGeneration ?? 0),
    phase: verdict.phase,
    replicas: live.length,
    readyReplicas: live.filter((p) => p.ready).length,
    conditions: verdict.conditions,
    members: membership.members,
    membershipEpoch: membership.epoch,
    selector: selectorString(ctx.name),
    // null clears it (merge patch)
    roll: mergePatchOf(prev.roll ?? undefined, roll) as RollStatus,
    // The roll step decided it this pass; else the persisted one stands.
    drainCancel: mergePatchOf(
      prev.drainCancel,
      ctx.roll !== undefined ? ctx.roll.drainCancel : prev.drainCancel,
    ) as DrainCancelStatus,
    // The scale step decided it this pass; else the persisted one stands.
    scale: mergePatchOf(prev.scale, ctx.scale !== undefined ? ctx.scale.next : prev.scale) as ScaleStatus,
  };
  if (sts?.status?.currentRevision !== undefined) status.currentRevision = sts.status.currentRevision;
  if (updateRevision !== undefined) status.updateRevision = updateRevision;

  for (const t of membership.transitions) {
    const down = t.includes("→ Down");
    ctx.log.info({ epoch: membership.epoch }, `member ${t} (membership epoch ${membership.epoch})`);
    deps.recorder.record(
      cluster,
      down ? "Warning" : "Normal",
      down ? "MemberDown" : "MemberChanged",
      `${t}; membership epoch ${membership.epoch}`,
    );
  }
  for (const f of membership.failures) {
    ctx.log.warn(`member ${f}`);
    deps.recorder.record(cluster, "Warning", "MemberFailed", f);
  }
  for (const v of volumes.changes) {
    // A new volume: ISR entries naming the old one vouch for nothing. The
    // topic reconciles (requeued by this write) elect away from it if it led.
    const msg = `${v.member} runs on another volume: ${v.from} → ${v.to}; its replicas are out of sync until their leaders add it back`;
    ctx.log.warn({ member: v.member, from: v.from, to: v.to }, msg);
    deps.recorder.record(cluster, "Warning", "VolumeChanged", msg);
  }
  const stuckBefore = getCondition(prev.conditions, "Degraded")?.reason === "ReplacementNotReady";
  if (replacement.stuck !== undefined && !stuckBefore) {
    ctx.log.warn({ pod: replacement.stuck.pod }, replacement.stuck.message);
    deps.recorder.record(cluster, "Warning", "ReplacementNotReady", replacement.stuck.message);
  }
  if (prev.phase !== status.phase) {
    ctx.log.info({ from: prev.phase, to: status.phase }, "phase changed");
    deps.recorder.record(
      cluster,
      status.phase === "Degraded" || status.phase === "Failed" ? "Warning" : "Normal",
      "Phase",
      `phase ${prev.phase ?? "(none)"} → ${status.phase}`,
    );
  }

  if (statusNeedsWrite(prev, status)) {
    try {
      await deps.api.patchStatus(
        { plural: CLUSTER_PLURAL, namespace: ctx.namespace, name: ctx.name },
        status,
        cluster.metadata.resourceVersion ?? "",
      );
    } catch (err) {
      if (httpStatus(err) !== 409) throw err;
      // Our cache has not seen the last write yet (often our own): try again
      // shortly from the newer object rather than counting a failure.
      ctx.log.debug("status write conflicted (stale cache); reconciling again shortly");
      return { requeueAfterMs: STATUS_CONFLICT_REQUEUE_MS };
    }
    ctx.log.debug({ phase: status.phase, epoch: status.membershipEpoch }, "status written");
  } else {
    ctx.log.debug("status unchanged; not writing");
  }

  const stable = getCondition(verdict.conditions, "Stable")?.status === "True";
  const candidates = [
    stable ? undefined : REQUEUE_PROGRESSING_MS,
    membership.recheckAfterMs,
    replacement.recheckAfterMs,
    trust.retryAfterMs,
  ].filter((v): v is number => v !== undefined);
  return { requeueAfterMs: candidates.length ? Math.min(...candidates) : undefined };
}

function drainCancelMessage(d: DrainCancelStatus | undefined): string | undefined {
  if (d === undefined) return undefined;
  return `${d.pod} may still be draining (refusing produce) since its restart was abandoned at ${d.since}: cancelling its drain failed ${d.attempts} time(s)${d.lastError ? ` (${d.lastError})` : ""}; retrying every pass`;
}

/** The pod a persisted ReplacementNotReady condition names (plan/replacement.ts writes the message). */
function stuckReplacementPod(conditions: NaradClusterStatus["conditions"]): string | undefined {
  const c = getCondition(conditions, "Progressing");
  if (c?.reason !== "ReplacementNotReady") return undefined;
  return /^replacement pod (\S+) not Ready/.exec(c.message ?? "")?.[1];
}

/**
 * A status object (roll, scale) for a merge patch: null clears it, and a key
 * it had that the new value lacks is sent as null (a merge patch keeps absent keys).
 */
function mergePatchOf(prev: object | undefined, next: object | undefined): unknown {
  if (next === undefined) return null;
  const out: Record<string, unknown> = { ...next };
  for (const k of Object.keys(prev ?? {})) if (!(k in out)) out[k] = null;
  return out;
}

/**
 * Asks every member's broker for its admin status (bounded by
 * STATUS_WAL_TIMEOUT_MS): at the pod's IP, or the member's last known
 * address while its pod is away. The answers are the broker-side evidence a
 * Down needs; a member with nowhere to ask counts as not answering. Ready
 * brokers' answers also carry the WAL backlog (information, not a gate).
 */
async function probeBrokers(
  members: readonly MemberStatus[],
  pods: readonly PodView[],
  brokers: BrokerClient,
  ctx: ClusterContext,
): Promise<{
  answered: Map<string, boolean>;
  walPending: Map<string, number>;
  volumes: Map<string, string>;
}> {
  const byName = new Map(pods.map((p) => [p.name, p]));
  const ids = new Set([...members.map((m) => m.id), ...pods.map((p) => p.name)]);
  const lastAddress = new Map(members.map((m) => [m.id, m.address]));
  const answered = new Map<string, boolean>();
  const walPending = new Map<string, number>();
  const volumes = new Map<string, string>();
  await Promise.all(
    [...ids].map(async (id) => {
      const pod = byName.get(id);
      const ip = pod?.podIP ?? lastAddress.get(id)?.replace(/:\d+$/, "");
      if (ip === undefined || ip === "") {
        answered.set(id, false);
        return;
      }
      try {
        const s = await brokers.status({ podIP: ip, id }, AbortSignal.timeout(STATUS_WAL_TIMEOUT_MS));
        answered.set(id, true);
        if (pod?.ready === true) walPending.set(id, s.wal.pendingRecords);
        if (s.volume !== undefined) volumes.set(id, recordedVolumeId(s.volume));
      } catch (err) {
        answered.set(id, false);
        ctx.log.debug({ member: id, err: apiMessage(err) }, "broker admin status unavailable");
      }
    }),
  );
  return { answered, walPending, volumes };
}
