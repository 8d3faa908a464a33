import type { V1Pod } from "../kube/models.ts";

/** What membership and status need from a broker pod, with times as epoch ms. */
export interface PodView {
  name: string;
  ordinal: number;
  uid: string;
  podIP: string | undefined;
  ready: boolean;
  /** When the pod last became not ready (or was created, if later); undefined when ready. */
  notReadySinceMs: number | undefined;
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
  return {
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
