// The plugin's write commands and port-forward's choice of pod, as pure decisions.
//
// restart and rebalance set one of the operator's action annotations
// (operator/src/constants.ts): any new value acts once. The value is the
// current time with milliseconds, so two requests in the same second still
// differ; the operator only compares values, it never parses them.

import type { V1Pod } from "@kubernetes/client-node";
import type { MemberStatus, NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import { ANNOTATION_REBALANCE, ANNOTATION_RESTARTED_AT } from "../constants.ts";
import { podReady } from "./status-view.ts";

export type ActionName = "restart" | "rebalance";

export const ACTION_ANNOTATION: Record<ActionName, string> = {
  restart: ANNOTATION_RESTARTED_AT,
  rebalance: ANNOTATION_REBALANCE,
};

/** JSON merge patch of the NaradCluster for an action. */
export function actionPatch(
  action: ActionName,
  now: Date,
): {
  metadata: { annotations: Record<string, string> };
} {
  return { metadata: { annotations: { [ACTION_ANNOTATION[action]]: now.toISOString() } } };
}

/** What the command prints once the annotation is written, from the cluster as the patch returned it. */
export function actionMessage(action: ActionName, cluster: NaradCluster): string {
  const key = ACTION_ANNOTATION[action];
  const value = cluster.metadata.annotations?.[key] ?? "";
  const then =
    action === "restart"
      ? "the operator restarts the brokers one at a time, each drained first"
      : "the operator rebalances partitions once every member is Active and no roll runs";
  const lines = [
    `naradcluster ${cluster.metadata.namespace}/${cluster.metadata.name} annotated ${key}=${value}: ${then}`,
  ];
  // The roll waits for spec.rollout.paused; say so rather than let the user wonder.
  if (action === "restart" && cluster.spec?.rollout?.paused === true)
    lines.push("note: spec.rollout.paused is true: no pod restarts until the rollout is unpaused");
  return `${lines.join("\n")}\n`;
}

export type PodChoice = { ok: true; pod: string } | { ok: false; error: string };

/**
 * The pod to forward to: the one asked for (it must be Ready), else a Ready
 * pod whose member is Active, else any Ready pod; lowest ordinal first, so
 * repeated runs land on the same broker.
 */
export function choosePod(cluster: NaradCluster, pods: readonly V1Pod[], wanted?: string): PodChoice {
  const name = cluster.metadata.name ?? "";
  const namespace = cluster.metadata.namespace ?? "";
  const ready = pods.filter(podReady);
  if (wanted !== undefined) {
    const pod = pods.find((p) => p.metadata?.name === wanted);
    if (pod === undefined)
      return { ok: false, error: `pod ${wanted} is not a broker of ${namespace}/${name}` };
    if (!podReady(pod)) return { ok: false, error: `pod ${namespace}/${wanted} is not Ready` };
    return { ok: true, pod: wanted };
  }
  if (ready.length === 0) return { ok: false, error: `no Ready broker pod in ${namespace}/${name}` };
  const states = new Map<string, MemberStatus["state"]>(
    (cluster.status?.members ?? []).map((m) => [m.pod, m.state]),
  );
  const ranked = [...ready].sort((a, b) => {
    const activeA = states.get(a.metadata?.name ?? "") === "Active" ? 0 : 1;
    const activeB = states.get(b.metadata?.name ?? "") === "Active" ? 0 : 1;
    return activeA - activeB || ordinal(a) - ordinal(b);
  });
  return { ok: true, pod: ranked[0]?.metadata?.name ?? "" };
}

/** StatefulSet pods end in -<ordinal>; anything else sorts last. */
function ordinal(pod: V1Pod): number {
  const match = /-(\d+)$/.exec(pod.metadata?.name ?? "");
  return match === null ? Number.MAX_SAFE_INTEGER : Number(match[1]);
}
