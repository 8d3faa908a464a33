import type {
  DrainCancelStatus,
  MemberStatus,
  RollStatus,
} from "../../../packages/api/src/v1alpha1/types.ts";
import type { PodView } from "./pods.ts";

// Drained rolling restart: one decision per reconcile, from what is observed
// now plus the roll progress persisted in status.roll. Level-triggered: a
// restarted operator (or a stale pass) reaches the same decision from the
// same facts, and every disruptive action needs status.roll to name the pod
// first, so it was persisted before.
//
// Per pod:  enterMaintenance (status.roll + member Maintenance, one status write)
//        →  handoff: the topic reconcile moves leadership of every
//           replicated partition the pod leads to another in-sync replica
//           (plan/topic-replication.ts, as it does for any leader in
//           Maintenance); the roll waits until none it leads can move, at
//           most handoffTimeoutMs from startedAt, then records
//           status.roll.handoffDoneAt (and leadersKept) with its next action
//        →  drain (admin API: stop produce, dispatch the WAL)
//        →  deletePod (an Eviction) once the WAL is empty
//        →  wait for the replacement to be Ready at the new revision
//        →  finish (status.roll cleared; the member goes back to Active)
// Until the pod is deleted, every pass needs every other pod Ready and
// Active (drain included: a drained broker next to a failed one leaves one
// broker in service); a wait for them longer than gateTimeoutMs abandons
// the restart (abort: cancel the drain, clear status.roll).
//
// Gates before a roll starts on a pod (CloudNativePG / Strimzi / Redpanda,
// see reference/operators.md §2): every other member's pod exists, is not
// terminating, is Ready, and the member is Active; no decommission runs;
// the rollout is not paused. A pod at the NEW revision that is not Ready
// blocks everything (Redpanda PR #1540: a lagging health signal must never
// let a second pod go). Stuck means a wait with a reason, never a second
// disruption: only the pod named in status.roll is ever deleted.
//
// Order: outdated pods that are not Ready first (they serve nothing, and the
// new template may fix them), then the highest ordinal first.

/** What the broker in flight answered on GET /admin/v1/status this pass. */
export type BrokerProbe =
  | { reachable: true; draining: boolean; pendingRecords: number }
  | { reachable: false; error: string };

export interface RollInput {
  nowMs: number;
  /** Desired broker count: ordinals 0..replicas-1 must have pods. */
  replicas: number;
  /** The StatefulSet's status.updateRevision; undefined until its controller reported one. */
  updateRevision: string | undefined;
  pods: readonly PodView[];
  /** Members as persisted in status (what brokers act on). */
  members: readonly MemberStatus[];
  /** Roll progress as persisted in status. */
  roll: RollStatus | undefined;
  paused: boolean;
  force: boolean;
  drainTimeoutMs: number;
  /**
   * How long the pod in flight waits, before it is deleted, for every other
   * broker to be Ready and Active (from status.roll.gateBlockedSince); past
   * it the restart is abandoned (spec.rollout.gateTimeoutSeconds).
   */
  gateTimeoutMs: number;
  /** Admin status of the pod in flight; undefined when none was asked (no roll, no pod IP). */
  inFlightBroker: BrokerProbe | undefined;
  /** Partition moves in flight (rebalance), described; a roll does not start meanwhile. */
  scaleBusy?: string | undefined;
  /**
   * A broker whose drain cancel is still owed (status.drainCancel.pod): it
   * may refuse produce, so no other restart starts until it is confirmed.
   */
  drainCancelOwed?: string | undefined;
  /**
   * The replicated partitions the pod in flight leads now, each with whether
   * another replica could take leadership now (handoffTarget in
   * topic-replication.ts). Undefined: no handoff phase (no topic view).
   */
  leadership?: { led: readonly LedPartition[] } | undefined;
  /** Bound on the handoff wait, from status.roll.startedAt. */
  handoffTimeoutMs?: number | undefined;
}

export interface LedPartition {
  /** "topic/partition". */
  key: string;
  /** Another in-sync replica can lead it now: the handoff will move it. */
  movable: boolean;
}

/** How the handoff ended, carried by the first action after it (recorded in status.roll). */
export interface HandoffOutcome {
  /** Partitions still led by the pod ("topic/partition"). */
  kept: string[];
  /** Some could have moved but had not within handoffTimeoutMs. */
  timedOut: boolean;
}

/** Why a roll waits, for conditions (machine-readable) and messages. */
export type WaitCode =
  | "Paused"
  | "PodsNotReady"
  | "MemberNotActive"
  | "Decommissioning"
  | "Draining"
  | "BrokerUnreachable"
  | "PodReplacing"
  | "NewPodNotReady"
  | "DisruptionBudget"
  | "DrainCancelPending"
  | "HandingOffLeadership"
  | "NoRevision";

export type RollAction = RollStep & {
  /** Set on the first action after the handoff ended: status.roll records it. */
  handoff?: HandoffOutcome;
};

type RollStep =
  | { kind: "none"; reason: string }
  | {
      kind: "wait";
      code: WaitCode;
      reason: string;
      pod?: string;
      /** The pod in flight waits for the others (the clock of gateTimeoutMs runs). */
      gateBlocked?: true;
    }
  | {
      kind: "enterMaintenance";
      pod: string;
      reason: string;
      podReady: boolean;
      podUid?: string;
      /** The only broker in service: from its drain until its replacement is Ready nothing serves. */
      soleBroker: boolean;
    }
  | { kind: "drain"; pod: string }
  | { kind: "cancelDrain"; pod: string; reason: string }
  | { kind: "deletePod"; pod: string; uid: string; reason: string; forced: boolean; soleBroker: boolean }
  | { kind: "stuck"; pod: string; reason: string; pendingRecords: number | undefined }
  /**
   * Another broker stayed unavailable past gateTimeoutMs while this pod was in
   * flight: cancel its drain (cancelDrain: it may be draining) and clear status.roll.
   */
  | { kind: "abort"; pod: string; reason: string; cancelDrain: boolean }
  | { kind: "finish"; pod: string; revision: string };

export function planRoll(input: RollInput): RollAction {
  if (input.roll !== undefined) return continueRoll(input, input.roll);
  const rev = input.updateRevision;
  if (rev === undefined)
    return { kind: "none", reason: "the StatefulSet has not reported an update revision yet" };
  // A pod at an ordinal the spec no longer wants is leaving (decommissioned,
  // the StatefulSet shrinks past it): restarting it would name a pod that
  // is never recreated, and the roll would wait for it forever.
  const outdated = outdatedPods(input.pods, rev, input.replicas);
  if (outdated.length === 0) return { kind: "none", reason: `every pod runs revision ${rev}` };
  if (input.paused)
    return {
      kind: "wait",
      code: "Paused",
      reason: `${outdated.length} pod(s) outdated; rollout paused (spec.rollout.paused)`,
    };
  if (input.drainCancelOwed !== undefined)
    return {
      kind: "wait",
      code: "DrainCancelPending",
      reason: `${input.drainCancelOwed} may still be draining since an abandoned restart; no restart until its drain cancel is confirmed`,
    };
  const candidate = rollOrder(outdated)[0]!;
  const blocked = gate(input, candidate.name, candidate.ready);
  if (blocked !== undefined) return blocked;
  const sole = soleBroker(input, candidate);
  return {
    kind: "enterMaintenance",
    pod: candidate.name,
    podReady: candidate.ready,
    podUid: candidate.uid,
    soleBroker: sole,
    reason: `runs revision ${candidate.revision ?? "(none)"}, the StatefulSet wants ${rev}${candidate.ready ? "" : " (not Ready: restarted first)"}${sole ? "; it is the only broker, so the cluster is unavailable until its replacement is Ready" : ""}`,
  };
}

function continueRoll(input: RollInput, roll: RollStatus): RollAction {
  const name = roll.podInFlight;
  const pod = input.pods.find((p) => p.name === name);
  const leaving = input.members.find((m) => m.id === name);
  if (leaving !== undefined && leaving.ordinal >= input.replicas)
    // The spec shrank past the pod in flight (a scale-down named after the
    // restart began, or a status from before it): it will not come back.
    return {
      kind: "abort",
      pod: name,
      cancelDrain: pod !== undefined && !pod.terminating,
      reason: `${name} is leaving the cluster (spec.replicas ${input.replicas}): its restart is dropped`,
    };
  if (pod === undefined)
    return { kind: "wait", code: "PodReplacing", pod: name, reason: `waiting for ${name} to be recreated` };
  if (pod.terminating)
    return { kind: "wait", code: "PodReplacing", pod: name, reason: `${name} is terminating` };
  const probe = input.inFlightBroker;
  if (pod.revision !== undefined && pod.revision === input.updateRevision) {
    // The replacement (or the spec was reverted to what the pod runs).
    if (probe?.reachable === true && probe.draining)
      return {
        kind: "cancelDrain",
        pod: name,
        reason: `${name} runs the current revision but is draining (spec reverted?): accepting produce again`,
      };
    if (!pod.ready)
      return {
        kind: "wait",
        code: "NewPodNotReady",
        pod: name,
        reason: `${name} runs revision ${pod.revision}; waiting for it to be Ready`,
      };
    return { kind: "finish", pod: name, revision: pod.revision };
  }

  // Still the outdated pod: drain it, then delete it. Every step from here
  // on (drain, wait, delete, even the crash path) needs the other brokers
  // Ready and Active: a second broker down must never meet a drained one.
  const blocked = gate(input, name, true, true);
  if (blocked !== undefined) return blockedOrAbort(input, roll, blocked, probe);

  // Leadership first: a replicated partition led by a broker that drains and
  // restarts is neither written nor read until it is back.
  if (input.leadership === undefined || roll.handoffDoneAt !== undefined)
    return drainAndRestart(input, roll, pod, probe, undefined);
  const led = input.leadership.led;
  const movable = led.filter((l) => l.movable);
  const waited = input.nowMs - Date.parse(roll.startedAt);
  const timeoutMs = input.handoffTimeoutMs ?? 0;
  const timedOut = Number.isFinite(waited) && waited >= timeoutMs;
  if (movable.length > 0 && !timedOut)
    return {
      kind: "wait",
      code: "HandingOffLeadership",
      pod: name,
      reason: `moving leadership of ${movable.length} replicated partition(s) off ${name} before its restart (${listKeys(movable.map((l) => l.key))})`,
    };
  return drainAndRestart(input, roll, pod, probe, {
    kept: led.map((l) => l.key),
    timedOut: movable.length > 0,
  });
}

function listKeys(keys: readonly string[]): string {
  return keys.length > 5 ? `${keys.slice(0, 5).join(", ")}, …` : keys.join(", ");
}

/** The drain and the deletion of the outdated pod in flight (the handoff is over). */
function drainAndRestart(
  input: RollInput,
  roll: RollStatus,
  pod: PodView,
  probe: BrokerProbe | undefined,
  handoff: HandoffOutcome | undefined,
): RollAction {
  const a = drainOrDelete(input, roll, pod, probe);
  return handoff === undefined ? a : { ...a, handoff };
}

function drainOrDelete(
  input: RollInput,
  roll: RollStatus,
  pod: PodView,
  probe: BrokerProbe | undefined,
): RollAction {
  const name = pod.name;
  // The drain bound runs from the end of the handoff (startedAt before it existed).
  const elapsed = input.nowMs - Date.parse(roll.handoffDoneAt ?? roll.startedAt);
  const timedOut = Number.isFinite(elapsed) && elapsed >= input.drainTimeoutMs;
  const secs = Math.round((Number.isFinite(elapsed) ? elapsed : 0) / 1000);
  if (probe === undefined || !probe.reachable) {
    const why = probe === undefined ? "has no pod IP" : `does not answer (${probe.error})`;
    // A draining broker reports not Ready by design, so "not Ready and does
    // not answer" proves a crash only for a pod that was already not Ready
    // when the roll named it; one failed probe of a drained broker is not
    // a confirmed drain. Absent (older status): treated as Ready.
    if (!pod.ready && roll.podReadyAtStart === false) {
      // It serves nothing; deleting it is what a crash would do. Its WAL stays
      // on its volume and is dispatched when the replacement starts.
      return {
        kind: "deletePod",
        pod: name,
        uid: pod.uid,
        forced: false,
        soleBroker: soleBroker(input, pod),
        reason: `${name} was not Ready before its restart and its broker ${why}: restarting it without a drain (its WAL stays on its volume)`,
      };
    }
    if (timedOut) return stuckOrForce(input, pod, `broker ${name} ${why} for ${secs}s`, undefined);
    return {
      kind: "wait",
      code: "BrokerUnreachable",
      pod: name,
      reason: `broker ${name} ${why}; waiting for it to confirm its drain`,
    };
  }
  if (!probe.draining) return { kind: "drain", pod: name };
  if (probe.pendingRecords > 0) {
    if (timedOut)
      return stuckOrForce(
        input,
        pod,
        `drain of ${name} not finished after ${secs}s: ${probe.pendingRecords} WAL record(s) pending`,
        probe.pendingRecords,
      );
    return {
      kind: "wait",
      code: "Draining",
      pod: name,
      reason: `draining ${name}: ${probe.pendingRecords} WAL record(s) pending`,
    };
  }
  if (pod.ready && !timedOut)
    // A drained broker fails its readiness probe; until the pod shows it,
    // Services and clients still send it new connections, which an eviction
    // now would refuse. Wait for it (bounded by drainTimeoutMs: a probe that
    // never fails does not hold the roll).
    return {
      kind: "wait",
      code: "Draining",
      pod: name,
      reason: `${name} drained; waiting for its pod to turn not Ready so Services stop routing to it before the restart`,
    };
  return {
    kind: "deletePod",
    pod: name,
    uid: pod.uid,
    forced: false,
    soleBroker: soleBroker(input, pod),
    reason: `${name} drained (0 WAL records pending)`,
  };
}

/**
 * The pod in flight waits for the others; once they have kept it waiting
 * for gateTimeoutMs (counted from status.roll.gateBlockedSince, which the
 * first blocked pass records), the restart is abandoned so a drained broker
 * does not stay out of service next to a failed one.
 */
function blockedOrAbort(
  input: RollInput,
  roll: RollStatus,
  blocked: Extract<RollAction, { kind: "wait" }>,
  probe: BrokerProbe | undefined,
): RollAction {
  const name = roll.podInFlight;
  const since = roll.gateBlockedSince === undefined ? Number.NaN : Date.parse(roll.gateBlockedSince);
  const waited = input.nowMs - since;
  if (Number.isFinite(waited) && waited >= input.gateTimeoutMs) {
    // Unknown (no answer) counts as possibly draining: the cancel is harmless.
    const cancelDrain = probe === undefined || !probe.reachable || probe.draining;
    return {
      kind: "abort",
      pod: name,
      cancelDrain,
      reason: `restart of ${name} abandoned after ${Math.round(waited / 1000)}s waiting for the other brokers (${blocked.reason}; spec.rollout.gateTimeoutSeconds ${Math.round(input.gateTimeoutMs / 1000)})${cancelDrain ? `: cancelling its drain` : ""}; the roll starts again once every broker is Ready`,
    };
  }
  return { ...blocked, pod: name, gateBlocked: true, reason: `${name} waits: ${blocked.reason}` };
}

/**
 * status.roll after this pass: set when a restart starts, cleared when it
 * finishes or is abandoned; gateBlockedSince is recorded on the first pass
 * the other brokers block the pod in flight and dropped once they do not.
 */
export function nextRollStatus(
  prev: RollStatus | undefined,
  action: RollAction,
  nowMs: number,
): RollStatus | undefined {
  if (action.kind === "enterMaintenance")
    return {
      podInFlight: action.pod,
      startedAt: new Date(nowMs).toISOString(),
      reason: action.reason,
      podReadyAtStart: action.podReady,
      ...(action.podUid === undefined ? {} : { podUid: action.podUid }),
    };
  if (action.kind === "finish" || action.kind === "abort" || prev === undefined) return undefined;
  if (action.kind === "wait" && action.gateBlocked === true)
    return { ...prev, gateBlockedSince: prev.gateBlockedSince ?? new Date(nowMs).toISOString() };
  const { gateBlockedSince: _, ...rest } = prev;
  if (action.handoff === undefined) return rest;
  return {
    ...rest,
    handoffDoneAt: new Date(nowMs).toISOString(),
    ...(action.handoff.kept.length > 0 ? { leadersKept: action.handoff.kept } : {}),
  };
}

function stuckOrForce(
  input: RollInput,
  pod: PodView,
  what: string,
  pendingRecords: number | undefined,
): RollAction {
  if (input.force) {
    const blocked = gate(input, pod.name, true, true);
    if (blocked !== undefined)
      return { ...blocked, pod: pod.name, reason: `${what}; forced, but ${blocked.reason}` };
    return {
      kind: "deletePod",
      pod: pod.name,
      uid: pod.uid,
      forced: true,
      soleBroker: soleBroker(input, pod),
      reason: `${what}; spec.rollout.force is set: deleting anyway (pending records stay in its WAL on its volume)`,
    };
  }
  return {
    kind: "stuck",
    pod: pod.name,
    pendingRecords,
    reason: `${what}; waiting (no other pod is touched; set spec.rollout.force to restart it anyway)`,
  };
}

/**
 * Ordinals whose brokers are in the cluster now: 0..replicas-1, plus every
 * member above spec.replicas that is not Removed yet, and every live pod up
 * there that no Removed member accounts for. After spec.replicas drops, the
 * members above it keep serving (and owning partitions) until their
 * decommission removes them, which waits for the roll; the StatefulSet keeps
 * their pods, and the PodDisruptionBudget counts them. A gate that looked only
 * below spec.replicas drained a broker next to a failed one up there, and then
 * waited on the budget's refusal with no bound (operator-loop seeds 149, 150).
 * A stale status can only name a member as not Removed for longer, which
 * makes the gate wait, never let a restart through.
 */
export function inServiceOrdinals(input: Pick<RollInput, "replicas" | "pods" | "members">): number[] {
  const out = new Set<number>();
  for (let i = 0; i < input.replicas; i++) out.add(i);
  const removed = new Set(input.members.filter((m) => m.state === "Removed").map((m) => m.ordinal));
  for (const m of input.members) if (m.ordinal >= input.replicas && m.state !== "Removed") out.add(m.ordinal);
  for (const p of input.pods)
    if (p.ordinal >= input.replicas && !p.terminating && !removed.has(p.ordinal)) out.add(p.ordinal);
  return [...out].sort((a, b) => a - b);
}

/**
 * `pod` is the only broker in service (a 1-broker cluster, no member above
 * it still serving): there is no peer to keep serving while it restarts, so
 * the restart is accepted downtime. It is drained all the same (its WAL is
 * dispatched before it goes), and the gates are trivially open.
 */
function soleBroker(input: RollInput, pod: PodView): boolean {
  const inService = inServiceOrdinals(input);
  return inService.length === 1 && inService[0] === pod.ordinal;
}

/**
 * Every in-service ordinal (inServiceOrdinals) other than `pod` has a Ready,
 * non-terminating pod whose member is Active; no decommission runs; `pod`'s
 * own member is Active when its pod is Ready (inFlight: it is in Maintenance
 * by our own doing). Returns the wait when a gate does not hold.
 */
function gate(
  input: RollInput,
  pod: string,
  podReady: boolean,
  inFlight = false,
): Extract<RollAction, { kind: "wait" }> | undefined {
  const decommissioning = input.members.filter((m) => m.state === "Decommissioning").map((m) => m.id);
  if (decommissioning.length > 0)
    return {
      kind: "wait",
      code: "Decommissioning",
      reason: `decommission running (${decommissioning.join(", ")})`,
    };
  if (input.scaleBusy !== undefined && !inFlight)
    return { kind: "wait", code: "Decommissioning", reason: input.scaleBusy };
  const notReady: string[] = [];
  const inService = inServiceOrdinals(input);
  for (const i of inService) {
    const p = input.pods.find((x) => x.ordinal === i);
    if (p?.name === pod) continue;
    const label = p?.name ?? input.members.find((m) => m.ordinal === i)?.id ?? `ordinal ${i}`;
    if (p === undefined) notReady.push(`${label} missing`);
    else if (p.terminating) notReady.push(`${label} terminating`);
    else if (!p.ready)
      notReady.push(
        `${label} not Ready${p.revision === input.updateRevision ? " (at the new revision)" : ""}`,
      );
  }
  for (const p of input.pods)
    if (p.ordinal >= input.replicas && !inService.includes(p.ordinal) && p.name !== pod && p.terminating)
      notReady.push(`${p.name} terminating`);
  if (notReady.length > 0) return { kind: "wait", code: "PodsNotReady", reason: notReady.join(", ") };
  const notActive = input.members
    .filter((m) => inService.includes(m.ordinal) && m.state !== "Active")
    .filter((m) => m.id !== pod || (!inFlight && podReady))
    .map((m) => `${m.id}=${m.state}`);
  if (notActive.length > 0)
    return { kind: "wait", code: "MemberNotActive", reason: `members not Active: ${notActive.join(", ")}` };
  return undefined;
}

/**
 * status.roll as it applies to the pod now in flight. When that pod is not
 * the one the roll named (another uid: it was replaced since, and is still
 * outdated, e.g. a crash-looping replacement whose image was then fixed),
 * the roll names it afresh: its own readiness now, and a new start for the
 * drain bound. Otherwise podReadyAtStart would describe a pod that no longer
 * exists, and a replacement that never ran could only be restarted by force.
 * Unchanged when no uid was recorded (older status) or the pod is at the
 * update revision (the normal replacement).
 */
export function rollForPodInFlight(
  roll: RollStatus | undefined,
  pods: readonly PodView[],
  updateRevision: string | undefined,
  nowMs: number,
): RollStatus | undefined {
  if (roll?.podUid === undefined) return roll;
  const pod = pods.find((p) => p.name === roll.podInFlight);
  if (pod === undefined || pod.terminating || pod.uid === roll.podUid) return roll;
  if (pod.revision !== undefined && pod.revision === updateRevision) return roll;
  const { gateBlockedSince: _, ...rest } = roll;
  return {
    ...rest,
    podUid: pod.uid,
    podReadyAtStart: pod.ready,
    startedAt: new Date(nowMs).toISOString(),
  };
}

/**
 * Live pods the spec still wants (ordinal below replicas) whose revision
 * differs from the StatefulSet's update revision. A pod above replicas is
 * leaving (decommissioned, or about to be): it is never restarted, and the
 * scale-down must not wait for it to be.
 */
export function outdatedPods(pods: readonly PodView[], updateRevision: string, replicas: number): PodView[] {
  return pods.filter((p) => !p.terminating && p.revision !== updateRevision && p.ordinal < replicas);
}

/** Not Ready first, then highest ordinal first. */
export function rollOrder(pods: readonly PodView[]): PodView[] {
  return [...pods].sort((a, b) => (a.ready === b.ready ? b.ordinal - a.ordinal : a.ready ? 1 : -1));
}

/**
 * Members the roll holds in Maintenance: the pod in flight, from the moment
 * the roll names it until its replacement is Ready at the new revision.
 */
export function maintenanceHolds(
  roll: RollStatus | undefined,
  pods: readonly PodView[],
  updateRevision: string | undefined,
): Set<string> {
  if (roll === undefined) return new Set();
  const pod = pods.find((p) => p.name === roll.podInFlight);
  const done =
    pod !== undefined &&
    !pod.terminating &&
    pod.ready &&
    pod.revision !== undefined &&
    pod.revision === updateRevision;
  return done ? new Set() : new Set([roll.podInFlight]);
}

/**
 * An abandoned restart whose drain cancel failed (the broker was away, or
 * timed out): its broker may still refuse produce, and nothing else would
 * ever tell it to stop. The cancel is repeated each pass until the broker
 * reports it is not draining (a restarted broker is not: a drain lives in
 * its memory), or a new restart names the pod (which drains it on purpose).
 */
export type DrainCancelStep =
  | { kind: "none" }
  | { kind: "clear"; reason: string }
  | { kind: "wait"; reason: string }
  | { kind: "retry"; pod: string; attempt: number };

export function planDrainCancel(
  pending: DrainCancelStatus | undefined,
  roll: RollStatus | undefined,
  pod: PodView | undefined,
  probe: BrokerProbe | undefined,
): DrainCancelStep {
  if (pending === undefined) return { kind: "none" };
  const name = pending.pod;
  if (roll?.podInFlight === name)
    return { kind: "clear", reason: `a new restart of ${name} drains it on purpose` };
  if (pod === undefined || pod.terminating)
    return { kind: "wait", reason: `${name} is ${pod === undefined ? "missing" : "terminating"}` };
  if (probe?.reachable === true && !probe.draining)
    return { kind: "clear", reason: `${name} accepts produce again` };
  return { kind: "retry", pod: name, attempt: pending.attempts + 1 };
}
