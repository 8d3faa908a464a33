import type { V1StatefulSet } from "@kubernetes/client-node";
import type {
  MemberStatus,
  NaradClusterStatus,
  RollStatus,
} from "../../../../packages/api/src/v1alpha1/types.ts";
import type { BrokerClient } from "../../broker-client/types.ts";
import {
  BROKER_HTTP_PORT,
  CLUSTER_PLURAL,
  OBSERVATION_SETTLE_MS,
  REQUEUE_PROGRESSING_MS,
  STATUS_CONFLICT_REQUEUE_MS,
  STATUS_WAL_TIMEOUT_MS,
  TERMINATION_GRACE_EXTRA_SECONDS,
} from "../../constants.ts";
import { apiMessage, httpStatus } from "../../kube/api.ts";
import { type ClusterFacts, clusterVerdict, statusNeedsWrite } from "../../plan/cluster-status.ts";
import { getCondition } from "../../plan/conditions.ts";
import { type MembersResult, planMembers } from "../../plan/members.ts";
import { judgeObservations, type ObservationTrust, trackReachability } from "../../plan/observation.ts";
import type { PodView } from "../../plan/pods.ts";
import { judgeReplacement, type ReplacementVerdict } from "../../plan/replacement.ts";
import { maintenanceHolds } from "../../plan/roll.ts";
import {
  drainCancelMessage,
  everReady,
  nextClusterStatus,
  statusRequeueMs,
  stuckReplacementPod,
} from "../../plan/status-pass.ts";
import { nextVolumeIds, recordedVolumeId, type VolumeChange } from "../../plan/volumes.ts";
import { resourceNames, selectorString } from "../../specs/labels.ts";
import { clusterPodViews } from "./cluster-pods.ts";
import type { ClusterContext } from "./context.ts";

// Last step, run even when an earlier step failed (so the failure shows in
// status): membership from pods, WAL pending counts from the brokers,
// phase and conditions, one status write when anything changed.
//
// One pass: observe (observeStatus: the caches, whether they can be
// trusted, every broker's admin status), decide (judgeMembers: reachability,
// volumes, a stuck replacement, planMembers; then clusterVerdict and
// nextClusterStatus, all from plan/), act (Events for what changed, the
// status write, the requeue).

export interface StatusOutcome {
  requeueAfterMs: number | undefined;
}

export async function updateClusterStatus(ctx: ClusterContext, stepError: unknown): Promise<StatusOutcome> {
  const seen = await observeStatus(ctx);
  const judged = judgeMembers(ctx, seen);
  const { prev, live } = seen;
  const verdict = clusterVerdict(
    clusterFacts(ctx, seen, judged, stepError),
    prev.conditions,
    new Date(seen.now).toISOString(),
  );
  const status = nextClusterStatus({
    prev,
    generation: ctx.cluster.metadata.generation ?? 0,
    stepFailed: stepError !== undefined,
    verdict,
    pods: live.length,
    readyPods: live.filter((p) => p.ready).length,
    membership: judged.membership,
    selector: selectorString(ctx.name),
    roll: seen.roll,
    // The roll and scale steps decided these this pass; else the persisted ones stand.
    drainCancel: ctx.roll !== undefined ? ctx.roll.drainCancel : prev.drainCancel,
    scale: ctx.scale !== undefined ? ctx.scale.next : prev.scale,
    currentRevision: seen.sts?.status?.currentRevision,
    updateRevision: seen.updateRevision,
  });
  reportStatusChanges(ctx, prev, status, judged);
  if (!(await writeStatus(ctx, prev, status))) return { requeueAfterMs: STATUS_CONFLICT_REQUEUE_MS };
  return {
    requeueAfterMs: statusRequeueMs(
      verdict.conditions,
      [judged.membership.recheckAfterMs, judged.replacement.recheckAfterMs, seen.trust.retryAfterMs],
      REQUEUE_PROGRESSING_MS,
    ),
  };
}

/** What the status step sees this pass. */
interface StatusObservation {
  now: number;
  prev: NaradClusterStatus;
  /** metadata.uid: the key of what the operator remembers between passes. */
  uid: string;
  stsName: string;
  sts: V1StatefulSet | undefined;
  updateRevision: string | undefined;
  pods: PodView[];
  /** The pods not terminating. */
  live: PodView[];
  /** status.roll after this pass: the roll step's decision, or the persisted one when it did not run. */
  roll: RollStatus | undefined;
  /** Whether the caches are current enough to decide Down from (plan/observation.ts). */
  trust: ObservationTrust;
  probes: BrokerProbes;
}

async function observeStatus(ctx: ClusterContext): Promise<StatusObservation> {
  const { cluster, deps } = ctx;
  const now = deps.clock.now();
  const prev = cluster.status ?? {};
  const stsName = resourceNames(ctx.name).statefulSet;
  const sts = deps.caches.statefulSets.get(ctx.namespace, stsName);
  const pods = clusterPodViews(ctx);
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
  return {
    now,
    prev,
    uid: cluster.metadata.uid ?? "",
    stsName,
    sts,
    updateRevision: sts?.status?.updateRevision,
    pods,
    live: pods.filter((p) => !p.terminating),
    roll,
    trust,
    probes,
  };
}

interface JudgedMembers {
  membership: MembersResult;
  replacement: ReplacementVerdict;
  volumeChanges: VolumeChange[];
}

/**
 * The members to write, judged from this pass's observation and what the
 * operator remembers between passes (since when a broker has not answered,
 * a replacement not Ready, a pod not Ready), which it updates.
 */
function judgeMembers(ctx: ClusterContext, seen: StatusObservation): JudgedMembers {
  const { deps } = ctx;
  const { now, prev, uid, pods, roll, updateRevision, probes } = seen;
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
    statefulSetName: seen.stsName,
    replicas: ctx.spec.replicas,
    pods,
    previous: prev.members ?? [],
    previousEpoch: prev.membershipEpoch ?? 0,
    downGraceMs: ctx.spec.rollout.downGraceSeconds * 1000,
    nowMs: now,
    notReadySinceMs: deps.memory.notReadySince.get(uid) ?? new Map(),
    brokerUnreachableSinceMs: unreachable,
    observationsTrusted: seen.trust.trusted,
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
  return { membership, replacement, volumeChanges: volumes.changes };
}

/** What clusterVerdict decides phase and conditions from. */
function clusterFacts(
  ctx: ClusterContext,
  seen: StatusObservation,
  judged: JudgedMembers,
  stepError: unknown,
): ClusterFacts {
  const { prev, live, roll, sts, updateRevision } = seen;
  const inFlight = roll === undefined ? undefined : live.find((p) => p.name === roll.podInFlight);
  return {
    generation: ctx.cluster.metadata.generation ?? 0,
    specReplicas: ctx.spec.replicas,
    pods: live.length,
    readyPods: live.filter((p) => p.ready).length,
    members: judged.membership.members,
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
    everReady: everReady(prev),
    stuckReplacement: judged.replacement.stuck?.message,
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
  };
}

/** Events (and log lines) for member transitions and failures, volume changes, a stuck replacement, the phase. */
function reportStatusChanges(
  ctx: ClusterContext,
  prev: NaradClusterStatus,
  status: NaradClusterStatus,
  judged: JudgedMembers,
): void {
  const { cluster, deps } = ctx;
  const { membership, replacement } = judged;
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
  for (const v of judged.volumeChanges) {
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
}

/**
 * One status write when anything changed, guarded by the cluster's
 * resourceVersion. False on a conflict: our cache has not seen the last
 * write yet (often our own), so the caller tries again shortly from the
 * newer object rather than counting a failure.
 */
async function writeStatus(
  ctx: ClusterContext,
  prev: NaradClusterStatus,
  status: NaradClusterStatus,
): Promise<boolean> {
  if (!statusNeedsWrite(prev, status)) {
    ctx.log.debug("status unchanged; not writing");
    return true;
  }
  try {
    await ctx.deps.api.patchStatus(
      { plural: CLUSTER_PLURAL, namespace: ctx.namespace, name: ctx.name },
      status,
      ctx.cluster.metadata.resourceVersion ?? "",
    );
  } catch (err) {
    if (httpStatus(err) !== 409) throw err;
    ctx.log.debug("status write conflicted (stale cache); reconciling again shortly");
    return false;
  }
  ctx.log.debug({ phase: status.phase, epoch: status.membershipEpoch }, "status written");
  return true;
}

interface BrokerProbes {
  answered: Map<string, boolean>;
  walPending: Map<string, number>;
  volumes: Map<string, string>;
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
): Promise<BrokerProbes> {
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
