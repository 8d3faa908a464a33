import type { KubernetesObject } from "@kubernetes/client-node";
import type { NaradCluster, NaradTopic } from "../../../packages/api/src/v1alpha1/types.ts";
import {
  ANNOTATION_REBALANCE,
  ANNOTATION_RESTARTED_AT,
  CLUSTER_KIND,
  LABEL_CLUSTER,
  TOPIC_KIND,
} from "../constants.ts";
import { objectKey } from "./deps.ts";

// Which work-queue keys an informer event touches. Pure, so the rules that
// keep the operator from reconciling on its own status writes are tested.

/** What we last saw of a cluster, to tell spec/membership changes from status-only writes. */
export interface ClusterSeen {
  generation: number | undefined;
  deleting: boolean;
  epoch: number | undefined;
  /**
   * The annotations that act like spec (restartedAt rolls the pods,
   * rebalance moves partitions) but do not bump metadata.generation.
   */
  actionAnnotations: string;
  /**
   * Each member's state, volume id and whether it failed while held:
   * replicated topics elect on a Down (or failed) leader or a leader on
   * another volume (neither bumps the membership epoch).
   */
  memberVolumes: string;
  /**
   * Whether a roll or a scale runs (status.roll, status.scale): the
   * preferred-leader balance of replicated topics waits for both to end.
   */
  busy: string;
}

/** Annotations whose change must reconcile at once, not at the next resync. */
export const ACTION_ANNOTATIONS: readonly string[] = [ANNOTATION_RESTARTED_AT, ANNOTATION_REBALANCE];

export interface Route {
  clusters: string[];
  topics: string[];
  /** For cluster events: what to remember (undefined after a delete). */
  seen?: ClusterSeen | undefined;
}

export function clusterSeen(c: NaradCluster): ClusterSeen {
  return {
    generation: c.metadata.generation,
    deleting: Boolean(c.metadata.deletionTimestamp),
    epoch: c.status?.membershipEpoch,
    actionAnnotations: JSON.stringify(ACTION_ANNOTATIONS.map((k) => c.metadata.annotations?.[k] ?? null)),
    memberVolumes: JSON.stringify(
      (c.status?.members ?? []).map((m) => [m.id, m.state, m.volumeId ?? null, m.failedSince !== undefined]),
    ),
    busy: JSON.stringify([
      c.status?.roll?.podInFlight ?? null,
      c.status?.scale?.decommissioning ?? null,
      (c.status?.scale?.moves?.length ?? 0) > 0,
    ]),
  };
}

/**
 * - NaradCluster: requeued on add/delete, spec changes (generation),
 *   deletion and changes of the action annotations (restartedAt, rebalance:
 *   they change no generation); NOT on status-only updates (our own writes would loop). Its
 *   topics are requeued when its membership epoch changes too (placement
 *   depends on Active members), when a member's state, volume id or failure
 *   changes (elections of replicated partitions depend on them), and when a
 *   roll or a scale starts or ends (the preferred-leader balance waits for them).
 * - NaradTopic: requeued on every event (its finalizer and deletion matter).
 * - Owned objects and pods: their cluster, by the narad.dev/cluster label.
 */
export function route(
  kind: string,
  type: "add" | "update" | "delete",
  obj: KubernetesObject,
  before: ClusterSeen | undefined,
  topicsOf: (namespace: string, cluster: string) => readonly NaradTopic[],
): Route {
  const ns = obj.metadata?.namespace ?? "";
  const name = obj.metadata?.name ?? "";
  if (kind === CLUSTER_KIND) {
    const c = obj as NaradCluster;
    const now = clusterSeen(c);
    const specChanged =
      type !== "update" ||
      before === undefined ||
      before.generation !== now.generation ||
      before.deleting !== now.deleting ||
      before.actionAnnotations !== now.actionAnnotations;
    const membershipChanged =
      specChanged ||
      before?.epoch !== now.epoch ||
      before?.memberVolumes !== now.memberVolumes ||
      before?.busy !== now.busy;
    return {
      clusters: specChanged ? [objectKey(ns, name)] : [],
      topics: membershipChanged ? topicsOf(ns, name).map((t) => objectKey(ns, t.metadata.name ?? "")) : [],
      seen: type === "delete" ? undefined : now,
    };
  }
  if (kind === TOPIC_KIND) return { clusters: [], topics: [objectKey(ns, name)] };
  const cluster = obj.metadata?.labels?.[LABEL_CLUSTER];
  return { clusters: cluster ? [objectKey(ns, cluster)] : [], topics: [] };
}
