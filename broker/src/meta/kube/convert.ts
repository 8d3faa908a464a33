// Mapping between the broker's TopicConfig and the NaradTopic resource.
// Pure functions; the operator's defaults fill what a kubectl-applied
// NaradTopic leaves out, so both sides read the same values.

import { topicName, withTopicDefaults } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import {
  API_VERSION,
  type MemberStatus,
  type MoveState,
  NARAD_TOPIC_KIND,
  type NaradSubscriptionSpec,
  type NaradTopic,
  type NaradTopicSpec,
  type PartitionMoveStatus,
} from "../../../../packages/api/src/v1alpha1/types.ts";
import type { ClusterMove, Member, NewTopic, SubscriptionConfig, TopicConfig, TopicPatch } from "../types.ts";
import { kubeNameForTopic } from "./names.ts";

/** Label on NaradTopics the broker creates, so `kubectl get -l` finds a cluster's topics. */
export const CLUSTER_LABEL = "narad.dev/cluster";

/** Annotation naming the topic's creator (Narad v1's owner): metadata, so the CRD schema is unchanged. */
export const OWNER_ANNOTATION = "narad.dev/owner";

/** JSON timestamps arrive as strings; client-node's types say Date. Accept both. */
export function isoTime(value: Date | string | undefined): string {
  if (value === undefined) return new Date(0).toISOString();
  const d = value instanceof Date ? value : new Date(value);
  return Number.isNaN(d.getTime()) ? new Date(0).toISOString() : d.toISOString();
}

export function topicConfigOf(resource: NaradTopic): TopicConfig {
  const s = withTopicDefaults(resource.spec);
  return {
    name: topicName(resource),
    // The API server assigns metadata.uid at create and never reuses it: a
    // NaradTopic deleted and applied again is a different incarnation.
    uid: resource.metadata.uid ?? "",
    partitions: s.partitions,
    retention_ms: s.retentionMs,
    retention_bytes: s.retentionBytes,
    visibility_timeout_ms: s.visibilityTimeoutMs,
    max_in_flight_per_partition: s.maxInFlightPerPartition,
    max_acked_ahead_per_partition: s.maxAckedAheadPerPartition,
    created_at: isoTime(resource.metadata.creationTimestamp),
    ...(s.subscriptions === undefined || s.subscriptions.length === 0
      ? {}
      : { subscriptions: s.subscriptions.map(subscriptionConfigOf) }),
    ...(s.schema === undefined
      ? {}
      : { schema: { version: s.schema.version, definition: s.schema.definition } }),
    ...ownerOf(resource),
  };
}

function ownerOf(resource: NaradTopic): { owner?: string } {
  const owner = resource.metadata.annotations?.[OWNER_ANNOTATION];
  return typeof owner === "string" && owner !== "" ? { owner } : {};
}

function subscriptionConfigOf(s: NaradSubscriptionSpec): SubscriptionConfig {
  return dropUndefined({
    name: s.name,
    visibility_timeout_ms: s.visibilityTimeoutMs,
    max_in_flight_per_partition: s.maxInFlightPerPartition,
    max_acked_ahead_per_partition: s.maxAckedAheadPerPartition,
  });
}

function subscriptionSpecOf(s: SubscriptionConfig): NaradSubscriptionSpec {
  return dropUndefined({
    name: s.name,
    visibilityTimeoutMs: s.visibility_timeout_ms,
    maxInFlightPerPartition: s.max_in_flight_per_partition,
    maxAckedAheadPerPartition: s.max_acked_ahead_per_partition,
  });
}

/** Partition → owner member id, from status.assignments. */
export function assignmentsOf(resource: NaradTopic): ReadonlyMap<number, string> {
  const out = new Map<number, string>();
  for (const a of resource.status?.assignments ?? []) {
    if (a.owner !== "") out.set(a.partition, a.owner);
  }
  return out;
}

/** The CRD's minimum for retentionMs is 1: 0 ("keep forever" in TopicConfig) is left to the default. */
function positiveOrUndefined(n: number): number | undefined {
  return n > 0 ? n : undefined;
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export function naradTopicFor(topic: NewTopic, namespace: string, cluster: string): NaradTopic {
  const spec: NaradTopicSpec = dropUndefined({
    cluster,
    name: topic.name,
    partitions: topic.partitions,
    retentionMs: positiveOrUndefined(topic.retention_ms),
    retentionBytes: topic.retention_bytes,
    visibilityTimeoutMs: positiveOrUndefined(topic.visibility_timeout_ms),
    maxInFlightPerPartition: positiveOrUndefined(topic.max_in_flight_per_partition),
    maxAckedAheadPerPartition: positiveOrUndefined(topic.max_acked_ahead_per_partition),
    subscriptions:
      topic.subscriptions === undefined || topic.subscriptions.length === 0
        ? undefined
        : topic.subscriptions.map(subscriptionSpecOf),
    schema: topic.schema === undefined ? undefined : { ...topic.schema },
  });
  return {
    apiVersion: API_VERSION,
    kind: NARAD_TOPIC_KIND,
    metadata: {
      name: kubeNameForTopic(topic.name),
      namespace,
      labels: { [CLUSTER_LABEL]: cluster },
      ...(topic.owner === undefined ? {} : { annotations: { [OWNER_ANNOTATION]: topic.owner } }),
    },
    spec,
  };
}

/**
 * A JSON merge patch body for spec. A merge patch replaces lists whole, so
 * `subscriptions` is the full new list; an empty one removes the field (null).
 */
export function specMergePatch(patch: TopicPatch): {
  spec: Omit<Partial<NaradTopicSpec>, "subscriptions"> & { subscriptions?: NaradSubscriptionSpec[] | null };
} {
  return {
    spec: dropUndefined({
      partitions: patch.partitions,
      retentionMs: patch.retention_ms === undefined ? undefined : positiveOrUndefined(patch.retention_ms),
      retentionBytes: patch.retention_bytes,
      maxInFlightPerPartition: patch.max_in_flight_per_partition,
      maxAckedAheadPerPartition: patch.max_acked_ahead_per_partition,
      subscriptions:
        patch.subscriptions === undefined
          ? undefined
          : patch.subscriptions.length === 0
            ? null
            : patch.subscriptions.map(subscriptionSpecOf),
      // Both fields at once: a merge patch replaces them key by key.
      schema: patch.schema === undefined ? undefined : { ...patch.schema },
    }),
  };
}

export function memberOf(m: MemberStatus): Member {
  return { id: m.id, address: m.address ?? "", state: m.state };
}

/** Moves the operator keeps in status after they ended (until it prunes them). */
const finishedMoveStates: ReadonlySet<MoveState> = new Set(["done", "failed", "cancelled"]);

/**
 * status.scale.moves still in flight, named by topic: status names NaradTopic
 * objects, the API speaks topic names. A move of an object this broker does
 * not know as a topic (deleted, or of another cluster) is left out.
 */
export function movesInFlight(
  moves: readonly PartitionMoveStatus[],
  topicOfObject: (kubeName: string) => string | undefined,
): ClusterMove[] {
  return moves.flatMap((m) => {
    if (finishedMoveStates.has(m.state)) return [];
    const topic = topicOfObject(m.topic);
    return topic === undefined ? [] : [{ topic, partition: m.partition, from: m.from, to: m.to }];
  });
}
