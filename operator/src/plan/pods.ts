import type { V1Pod } from "../kube/models.ts";

/** What membership and status need from a broker pod, with times as epoch ms. */
export interface PodView {
  name: string;
  ordinal: number;
  uid: string;
  podIP: string | undefined;
  ready: boolean;
  /**
   * When the pod last became not ready (or was created, if later), from the
   * kubelet's timestamps; undefined when ready. Informational only: Down is
   * timed on the operator's own clock (members.ts), never from these.
   */
  notReadySinceMs: number | undefined;
  /**
   * Ready=False written by the node lifecycle controller, not the kubelet:
   * reason NodeNotReady, or Ready=False while ContainersReady stays True
   * (the kubelet always moves both). Says the node missed heartbeats, not
   * that the broker stopped.
   */
  readyVerdictFromNode?: boolean;
  /** The broker container's state in words ("waiting: CrashLoopBackOff (back-off 40s), last exit 1: Error, 6 restarts"). */
  containerState?: string;
  terminating: boolean;
  /** controller-revision-hash label: which StatefulSet revision the pod runs. */
  revision: string | undefined;
}

/**
 * Reduces a pod to a PodView. Timestamps may be Date (typed list results) or
 * RFC 3339 strings (raw watch events); both are accepted.
 */
export function podView(pod: V1Pod, statefulSetName: string): PodView | undefined {
  const name = pod.metadata?.name;
  if (name === undefined) return undefined;
  const ordinal = ordinalOf(name, statefulSetName);
  if (ordinal === undefined) return undefined;
  const readyCond = pod.status?.conditions?.find((c) => c.type === "Ready");
  const terminating =
    pod.metadata?.deletionTimestamp !== undefined && pod.metadata?.deletionTimestamp !== null;
  const ready = readyCond?.status === "True" && !terminating;
  const created = toMs(pod.metadata?.creationTimestamp);
  const transition = toMs(readyCond?.lastTransitionTime);
  const notReadySinceMs = ready ? undefined : Math.max(created ?? 0, transition ?? 0) || undefined;
  const containersReady = pod.status?.conditions?.find((c) => c.type === "ContainersReady");
  const readyVerdictFromNode =
    !ready &&
    !terminating &&
    readyCond?.status === "False" &&
    (readyCond.reason === "NodeNotReady" ||
      (containersReady?.status === "True" && readyCond.reason !== "ReadinessGatesNotReady"));
  const containerState = describeContainer(pod);
  return {
    ...(readyVerdictFromNode ? { readyVerdictFromNode } : {}),
    ...(containerState !== undefined ? { containerState } : {}),
    name,
    ordinal,
    uid: pod.metadata?.uid ?? "",
    podIP: pod.status?.podIP || undefined,
    ready,
    notReadySinceMs,
    terminating,
    revision: pod.metadata?.labels?.["controller-revision-hash"],
  };
}

/** "demo-2" of StatefulSet "demo" → 2; anything else → undefined. */
export function ordinalOf(podName: string, statefulSetName: string): number | undefined {
  const prefix = `${statefulSetName}-`;
  if (!podName.startsWith(prefix)) return undefined;
  const rest = podName.slice(prefix.length);
  if (!/^(0|[1-9][0-9]*)$/.test(rest)) return undefined;
  return Number(rest);
}

export function toMs(v: Date | string | undefined | null): number | undefined {
  if (v === undefined || v === null) return undefined;
  const ms = v instanceof Date ? v.getTime() : Date.parse(v);
  return Number.isFinite(ms) ? ms : undefined;
}

/** The first container's state, for messages about a pod that does not become Ready. */
function describeContainer(pod: V1Pod): string | undefined {
  const c = pod.status?.containerStatuses?.[0];
  if (c === undefined) return undefined;
  const parts: string[] = [];
  const st = c.state;
  if (st?.waiting)
    parts.push(
      `waiting: ${st.waiting.reason ?? "unknown"}${st.waiting.message ? ` (${st.waiting.message})` : ""}`,
    );
  else if (st?.terminated)
    parts.push(
      `terminated: exit ${st.terminated.exitCode}${st.terminated.reason ? ` ${st.terminated.reason}` : ""}`,
    );
  else if (st?.running) parts.push(c.ready ? "running, ready" : "running, not ready");
  const last = c.lastState?.terminated;
  if (last) parts.push(`last exit ${last.exitCode}${last.reason ? `: ${last.reason}` : ""}`);
  if (c.restartCount > 0) parts.push(`${c.restartCount} restart${c.restartCount === 1 ? "" : "s"}`);
  return parts.length ? parts.join(", ") : undefined;
}
