// Mapping between the broker's TopicConfig and the NaradTopic resource.
// Pure functions; the operator's defaults fill what a kubectl-applied
// NaradTopic leaves out, so both sides read the same values.

import { topicName, withTopicDefaults } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type { IsrMember, ReplicaAssignment } from "../../../../packages/api/src/v1alpha1/replication.ts";
import {
  API_VERSION,
  type MemberStatus,
  type MoveState,
  NARAD_TOPIC_KIND,
  type NaradSubscriptionSpec,
  type NaradTopic,
  type NaradTopicSpec,
  type PartitionAssignment,
  type PartitionMoveStatus,
} from "../../../../packages/api/src/v1alpha1/types.ts";
import type { ClusterMove, Member, NewTopic, SubscriptionConfig, TopicConfig, TopicPatch } from "../types.ts";
import { kubeNameForTopic } from "./names.ts";

/** Label on NaradTopics the broker creates, so `kubectl get -l` finds a cluster's topics. */
export const CLUSTER_LABEL = "narad.dev/cluster";

/** Annotation naming the topic's creator (Narad v1's owner): metadata, so the CRD schema is unchanged. */
export const OWNER_ANNOTATION = "narad.dev/owner";

/**
 * The broker's record of an admitted fan-out link (JSON, on the child):
 * which declaration it admitted (spec.parent, spec.delayMs), the parent's
 * incarnation, and the attachment's identity. The link is in effect only
 * while spec still says the same and that parent incarnation lives, so a
 * kubectl edit of spec.parent or spec.delayMs ends it, and a namesake of a
 * deleted parent never inherits it. Metadata, as the owner: users declare
 * links in spec, the broker keeps what only it decides here.
 */
export const ATTACHMENT_ANNOTATION = "narad.dev/attachment";

/** Why a link declared in spec.parent is not in effect (the broker's fan-out rules refused it). */
export const LINK_PROBLEM_ANNOTATION = "narad.dev/link-problem";

export interface Attachment {
  parent: string;
  parentUid: string;
  delayMs: number;
  epoch: string;
  attachedAtMs: number;
}

/** The attachment annotation, or undefined when absent or not one the broker wrote. */
export function attachmentOf(resource: NaradTopic): Attachment | undefined {
  const raw = resource.metadata.annotations?.[ATTACHMENT_ANNOTATION];
  if (typeof raw !== "string") return undefined;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null) return undefined;
  const a = v as Record<string, unknown>;
  const ok =
    typeof a.parent === "string" &&
    typeof a.parentUid === "string" &&
    typeof a.epoch === "string" &&
    /^[0-9a-f]{16}$/.test(a.epoch) &&
    Number.isSafeInteger(a.delayMs) &&
    Number.isSafeInteger(a.attachedAtMs);
  return ok ? (a as unknown as Attachment) : undefined;
}

export function attachmentAnnotation(a: Attachment): string {
  return JSON.stringify({
    parent: a.parent,
    parentUid: a.parentUid,
    delayMs: a.delayMs,
    epoch: a.epoch,
    attachedAtMs: a.attachedAtMs,
  });
}

/** What spec declares: the parent and delay, or undefined for no link. */
export function declaredLinkOf(resource: NaradTopic): { parent: string; delayMs: number } | undefined {
  const parent = resource.spec?.parent;
  if (typeof parent !== "string" || parent === "") return undefined;
  return { parent, delayMs: resource.spec.delayMs ?? 0 };
}

/**
 * The attachment when it admitted exactly what spec declares now (the parent
 * incarnation is the metastore's to check: it needs the other topics).
 */
export function matchingAttachment(resource: NaradTopic): Attachment | undefined {
  const declared = declaredLinkOf(resource);
  const a = attachmentOf(resource);
  if (declared === undefined || a === undefined) return undefined;
  return a.parent === declared.parent && a.delayMs === declared.delayMs ? a : undefined;
}

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
    ...replicationOf(resource),
    ...linkOf(resource),
  };
}

/**
 * The replication settings in effect: spec's (the broker writes both at
 * create), else what the operator recorded in status when it chose a
 * default for a NaradTopic applied without them; absent: one copy.
 */
function replicationOf(
  resource: NaradTopic,
): Pick<TopicConfig, "replication_factor" | "min_insync_replicas"> {
  const rf = resource.spec?.replicationFactor ?? resource.status?.replicationFactor;
  const min = resource.spec?.minInsyncReplicas ?? resource.status?.minInsyncReplicas;
  return {
    ...(rf === undefined ? {} : { replication_factor: rf }),
    ...(min === undefined ? {} : { min_insync_replicas: min }),
  };
}

/** The link fields while the attachment matches spec; none for a pending or refused declaration. */
function linkOf(
  resource: NaradTopic,
): Pick<TopicConfig, "parent" | "fanout_delay_ms" | "attach_epoch" | "attached_at_ms"> {
  const a = matchingAttachment(resource);
  if (a === undefined) return {};
  return {
    parent: a.parent,
    ...(a.delayMs > 0 ? { fanout_delay_ms: a.delayMs } : {}),
    attach_epoch: a.epoch,
    attached_at_ms: a.attachedAtMs,
  };
}

/** `config` without its link (the parent incarnation it names is gone). */
export function withoutLink(config: TopicConfig): TopicConfig {
  const { parent: _p, fanout_delay_ms: _d, attach_epoch: _e, attached_at_ms: _a, ...rest } = config;
  return rest;
}

/** The attachment a TopicConfig's link fields describe (parentUid: the parent's incarnation now). */
export function attachmentFor(
  link: Pick<TopicConfig, "parent" | "fanout_delay_ms" | "attach_epoch" | "attached_at_ms">,
  parentUid: string,
): Attachment | undefined {
  if (link.parent === undefined || link.attach_epoch === undefined) return undefined;
  return {
    parent: link.parent,
    parentUid,
    delayMs: link.fanout_delay_ms ?? 0,
    epoch: link.attach_epoch,
    attachedAtMs: link.attached_at_ms ?? 0,
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

/**
 * Partition → owner member id, from status.assignments; for a replicated
 * partition its leader (none while it is offline).
 */
export function assignmentsOf(resource: NaradTopic): ReadonlyMap<number, string> {
  const out = new Map<number, string>();
  for (const a of resource.status?.assignments ?? []) {
    const r = replicaAssignmentOf(a);
    const owner = r === undefined ? a.owner : (r.leader ?? "");
    if (owner !== "") out.set(a.partition, owner);
  }
  return out;
}

function isIsrMember(v: unknown): v is IsrMember {
  if (typeof v !== "object" || v === null) return false;
  const m = v as Record<string, unknown>;
  return typeof m.member === "string" && typeof m.volumeId === "string";
}

/**
 * The replicated record of an assignment entry, or undefined for a
 * single-copy one (or one whose replicated fields are malformed). The
 * record's fields are set together; `leader` null, or absent with the
 * other three set (a JSON merge patch drops null members inside a list),
 * is an offline partition.
 */
export function replicaAssignmentOf(a: PartitionAssignment): ReplicaAssignment | undefined {
  const { leader, replicas, isr, leaderEpoch } = a;
  if (replicas === undefined || isr === undefined || leaderEpoch === undefined) return undefined;
  if (leader !== undefined && leader !== null && typeof leader !== "string") return undefined;
  if (!Array.isArray(replicas) || !replicas.every((r) => typeof r === "string")) return undefined;
  if (!Array.isArray(isr) || !isr.every(isIsrMember)) return undefined;
  if (!Number.isSafeInteger(leaderEpoch) || leaderEpoch < 0) return undefined;
  return {
    partition: a.partition,
    leader: leader === undefined || leader === "" ? null : leader,
    replicas: [...replicas],
    isr: isr.map((m) => ({ member: m.member, volumeId: m.volumeId })),
    leaderEpoch,
  };
}

/** Partition → replicated record, from status.assignments (single-copy partitions are absent). */
export function replicaAssignmentsOf(resource: NaradTopic): ReadonlyMap<number, ReplicaAssignment> {
  const out = new Map<number, ReplicaAssignment>();
  for (const a of resource.status?.assignments ?? []) {
    const r = replicaAssignmentOf(a);
    if (r !== undefined) out.set(a.partition, r);
  }
  return out;
}

/** Where partition `p`'s entry sits in status.assignments, or -1. */
export function assignmentIndex(resource: NaradTopic, partition: number): number {
  return (resource.status?.assignments ?? []).findIndex((a) => a.partition === partition);
}

/** The CRD's minimum for retentionMs is 1: 0 ("keep forever" in TopicConfig) is left to the default. */
function positiveOrUndefined(n: number): number | undefined {
  return n > 0 ? n : undefined;
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** `attachment`: the link of a topic created as a child (its parent incarnation known to the caller). */
export function naradTopicFor(
  topic: NewTopic,
  namespace: string,
  cluster: string,
  attachment?: Attachment,
): NaradTopic {
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
    parent: attachment?.parent,
    delayMs: attachment === undefined || attachment.delayMs === 0 ? undefined : attachment.delayMs,
    // Written as resolved at create, so a later change of the cluster's size never changes them.
    replicationFactor: topic.replication_factor,
    minInsyncReplicas: topic.min_insync_replicas,
  });
  const annotations = {
    ...(topic.owner === undefined ? {} : { [OWNER_ANNOTATION]: topic.owner }),
    ...(attachment === undefined ? {} : { [ATTACHMENT_ANNOTATION]: attachmentAnnotation(attachment) }),
  };
  return {
    apiVersion: API_VERSION,
    kind: NARAD_TOPIC_KIND,
    metadata: {
      name: kubeNameForTopic(topic.name),
      namespace,
      labels: { [CLUSTER_LABEL]: cluster },
      ...(Object.keys(annotations).length === 0 ? {} : { annotations }),
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
      minInsyncReplicas: patch.min_insync_replicas,
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

type SpecPatch = Omit<ReturnType<typeof specMergePatch>["spec"], "parent" | "delayMs"> & {
  parent?: string | null;
  delayMs?: number | null;
};

/**
 * The merge patch of a TopicPatch: spec, and with a link change (`link`:
 * the new attachment, or null to unlink) spec.parent, spec.delayMs and the
 * annotations in the same write, so a link is made or broken at once. Any
 * link change clears a reported link problem.
 */
export function topicMergePatch(
  patch: TopicPatch,
  link: Attachment | null | undefined,
): { spec: SpecPatch; metadata?: { annotations: Record<string, string | null> } } {
  const { spec } = specMergePatch(patch);
  if (link === undefined) return { spec };
  return {
    spec: {
      ...spec,
      parent: link === null ? null : link.parent,
      delayMs: link === null || link.delayMs === 0 ? null : link.delayMs,
    },
    metadata: {
      annotations: {
        [ATTACHMENT_ANNOTATION]: link === null ? null : attachmentAnnotation(link),
        [LINK_PROBLEM_ANNOTATION]: null,
      },
    },
  };
}

export function memberOf(m: MemberStatus): Member {
  return {
    id: m.id,
    address: m.address ?? "",
    state: m.state,
    ...(m.volumeId === undefined || m.volumeId === "" ? {} : { volumeId: m.volumeId }),
  };
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
