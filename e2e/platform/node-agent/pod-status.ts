// "What should this pod's status say" (pure). The pod worker keeps a
// ContainerSnapshot per container; this turns them into the API's PodStatus,
// following the kubelet's phase rules (pkg/kubelet/kubelet_pods.go getPhase).

import type { V1ContainerStatus, V1PodCondition, V1PodStatus } from "@kubernetes/client-node";
import { imageId } from "./images.ts";
import type { RestartPolicy } from "./restart.ts";

export interface Terminated {
  readonly exitCode: number;
  readonly signal?: number;
  readonly reason: string;
  readonly message?: string;
  readonly startedAt: Date;
  readonly finishedAt: Date;
  readonly containerId: string;
}

export type ContainerState =
  | { readonly kind: "waiting"; readonly reason: string; readonly message?: string }
  | { readonly kind: "running"; readonly startedAt: Date; readonly containerId: string }
  | ({ readonly kind: "terminated" } & Terminated);

export interface ContainerSnapshot {
  readonly name: string;
  readonly image: string;
  readonly state: ContainerState;
  readonly lastTerminated?: Terminated;
  readonly restartCount: number;
  /** Readiness probe verdict (true when there is no probe). */
  readonly ready: boolean;
  /** Startup probe passed (true when there is none). */
  readonly started: boolean;
}

export interface PodSnapshot {
  readonly podIP: string | null;
  readonly hostIP: string;
  readonly startTime: Date;
  readonly restartPolicy: RestartPolicy;
  readonly initContainers: readonly ContainerSnapshot[];
  readonly containers: readonly ContainerSnapshot[];
  /** Condition types from spec.readinessGates with their current status in the API. */
  readonly readinessGates: ReadonlyArray<{ type: string; status: boolean }>;
  /** Set after deletion finished: every container is terminated for good. */
  readonly terminating: boolean;
}

export type PodPhase = "Pending" | "Running" | "Succeeded" | "Failed";

const isSucceeded = (c: ContainerSnapshot) => c.state.kind === "terminated" && c.state.exitCode === 0;
const isFailed = (c: ContainerSnapshot) => c.state.kind === "terminated" && c.state.exitCode !== 0;

export function initDone(snap: PodSnapshot): boolean {
  return snap.initContainers.every(isSucceeded);
}

export function podPhase(snap: PodSnapshot): PodPhase {
  // An init container that failed for good (restartPolicy Never) fails the pod.
  if (snap.initContainers.some(isFailed) && snap.restartPolicy === "Never") return "Failed";
  if (!initDone(snap)) return "Pending";

  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const c of snap.containers) {
    if (c.state.kind === "running") running++;
    else if (c.state.kind === "terminated") {
      stopped++;
      if (c.state.exitCode === 0) succeeded++;
    } else if (c.lastTerminated)
      stopped++; // waiting to restart after an exit
    else waiting++;
  }
  if (waiting > 0) return "Pending";
  if (running > 0) return "Running";
  if (stopped === snap.containers.length && snap.containers.length > 0) {
    if (snap.restartPolicy === "Always" && !snap.terminating) return "Running";
    if (succeeded === snap.containers.length) return "Succeeded";
    if (snap.restartPolicy === "OnFailure" && !snap.terminating) return "Running";
    return "Failed";
  }
  return "Pending";
}

export function containerStatus(c: ContainerSnapshot): V1ContainerStatus {
  const s = c.state;
  const state: V1ContainerStatus["state"] =
    s.kind === "waiting"
      ? { waiting: { reason: s.reason, ...(s.message ? { message: s.message } : {}) } }
      : s.kind === "running"
        ? { running: { startedAt: s.startedAt } }
        : { terminated: terminatedStatus(s) };
  return {
    name: c.name,
    image: c.image,
    imageID: imageId(c.image),
    ...(s.kind === "waiting" ? {} : { containerID: s.containerId }),
    ready: s.kind === "running" && c.ready,
    started: s.kind === "running" && c.started,
    restartCount: c.restartCount,
    state,
    lastState: c.lastTerminated ? { terminated: terminatedStatus(c.lastTerminated) } : {},
  };
}

function terminatedStatus(t: Terminated): NonNullable<NonNullable<V1ContainerStatus["state"]>["terminated"]> {
  return {
    exitCode: t.exitCode,
    ...(t.signal !== undefined ? { signal: t.signal } : {}),
    reason: t.reason,
    ...(t.message ? { message: t.message } : {}),
    startedAt: t.startedAt,
    finishedAt: t.finishedAt,
    containerID: t.containerId,
  };
}

/** Conditions, keeping lastTransitionTime from `previous` when the status did not change. */
export function podConditions(
  snap: PodSnapshot,
  phase: PodPhase,
  previous: readonly V1PodCondition[],
  now: Date,
): V1PodCondition[] {
  const initialized = initDone(snap);
  const containersReady =
    phase === "Running" && snap.containers.every((c) => c.state.kind === "running" && c.ready);
  const gatesOk = snap.readinessGates.every((g) => g.status);
  const completed = phase === "Succeeded" || phase === "Failed";
  const want: Array<[string, boolean, string | undefined]> = [
    ["PodScheduled", true, undefined],
    ["Initialized", initialized, initialized ? undefined : "ContainersNotInitialized"],
    [
      "ContainersReady",
      containersReady,
      containersReady ? undefined : completed ? "PodCompleted" : "ContainersNotReady",
    ],
    [
      "Ready",
      containersReady && gatesOk,
      containersReady && gatesOk
        ? undefined
        : completed
          ? "PodCompleted"
          : containersReady
            ? "ReadinessGatesNotReady"
            : "ContainersNotReady",
    ],
  ];
  return want.map(([type, ok, reason]) => {
    const status = ok ? "True" : "False";
    const prev = previous.find((p) => p.type === type);
    const lastTransitionTime =
      prev && prev.status === status && prev.lastTransitionTime ? prev.lastTransitionTime : now;
    return { type, status, lastTransitionTime, ...(reason ? { reason } : {}) };
  });
}

export function podStatus(snap: PodSnapshot, previous: readonly V1PodCondition[], now: Date): V1PodStatus {
  const phase = podPhase(snap);
  return {
    phase,
    hostIP: snap.hostIP,
    hostIPs: [{ ip: snap.hostIP }],
    ...(snap.podIP ? { podIP: snap.podIP, podIPs: [{ ip: snap.podIP }] } : {}),
    startTime: snap.startTime,
    conditions: podConditions(snap, phase, previous, now),
    ...(snap.initContainers.length > 0
      ? { initContainerStatuses: snap.initContainers.map(containerStatus) }
      : {}),
    containerStatuses: snap.containers.map(containerStatus),
  };
}

type Json = string | number | boolean | null | Date | Json[] | { [k: string]: Json | undefined };

/**
 * A strategic merge patch merges maps key by key, so a container going from
 * `running` to `waiting` would keep both unless the others are nulled
 * explicitly. This adds those nulls (state keys and optional message/signal).
 */
/**
 * With `uid`, the patch carries metadata.uid, which the API server treats as
 * a precondition (409 when the pod of that name is another object by now):
 * a worker for a pod deleted during its setup must never write its status
 * (its pod IP above all) onto the pod the StatefulSet recreated under the
 * same name. Without it, podIPs merge by key, the successor ends up with two
 * IPs and every later status patch of it is refused (422), so it never
 * becomes Ready.
 */
export function statusPatchBody(status: V1PodStatus, uid?: string): { metadata?: Json; status: Json } {
  const fixState = (s: V1ContainerStatus["state"] | undefined): Json => {
    const out: Record<string, Json> = { waiting: null, running: null, terminated: null };
    if (s?.waiting) out["waiting"] = { reason: s.waiting.reason ?? null, message: s.waiting.message ?? null };
    if (s?.running) out["running"] = { startedAt: s.running.startedAt ?? null };
    if (s?.terminated) {
      out["terminated"] = {
        ...(s.terminated as unknown as Record<string, Json>),
        signal: s.terminated.signal ?? null,
        message: s.terminated.message ?? null,
      };
    }
    return out;
  };
  const fix = (cs: V1ContainerStatus): Json => ({
    ...(cs as unknown as Record<string, Json>),
    state: fixState(cs.state),
    lastState: cs.lastState?.terminated ? fixState(cs.lastState) : {},
  });
  return {
    ...(uid === undefined || uid === "" ? {} : { metadata: { uid } }),
    status: {
      ...(status as unknown as Record<string, Json>),
      conditions: (status.conditions ?? []).map((c) => ({
        ...(c as unknown as Record<string, Json>),
        reason: c.reason ?? null,
      })),
      containerStatuses: (status.containerStatuses ?? []).map(fix),
      ...(status.initContainerStatuses
        ? { initContainerStatuses: status.initContainerStatuses.map(fix) }
        : {}),
    },
  };
}
