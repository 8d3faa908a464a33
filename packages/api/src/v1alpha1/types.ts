// The narad.dev/v1alpha1 API as TypeScript types. schema.ts describes the same
// shapes as OpenAPI for the CRDs; a unit test keeps the two aligned with
// defaults.ts. Types here are JSON shapes (what the API server stores), so
// timestamps are RFC 3339 strings, not Dates.
//
// Two views of each spec:
//   - NaradClusterSpec / NaradTopicSpec: what a user may write (almost all optional);
//   - Resolved*Spec: after withClusterDefaults / withTopicDefaults (defaults.ts),
//     which is what the controller should read. The API server applies OpenAPI
//     defaults too, but not inside optional objects a user omitted, and not to
//     objects stored before a default was added; the controller must not rely on it.
//
// Core Kubernetes shapes come from @kubernetes/client-node as type-only imports
// (erased at runtime), so specs/ and plan/ may use these types while staying pure.

import type {
  V1Affinity,
  V1LocalObjectReference,
  V1NetworkPolicyPeer,
  V1ObjectMeta,
  V1ResourceRequirements,
  V1Toleration,
  V1TopologySpreadConstraint,
} from "@kubernetes/client-node";
import type { IsrMember } from "./replication.ts";

export const GROUP = "narad.dev";
export const VERSION = "v1alpha1";
export const API_VERSION = "narad.dev/v1alpha1";

export const NARAD_CLUSTER_KIND = "NaradCluster";
export const NARAD_CLUSTER_PLURAL = "naradclusters";
export const NARAD_TOPIC_KIND = "NaradTopic";
export const NARAD_TOPIC_PLURAL = "naradtopics";
export const NARAD_USER_KIND = "NaradUser";
export const NARAD_USER_PLURAL = "naradusers";

/** A Kubernetes resource quantity as users write it: "500m", "1Gi" or a bare number. */
export type Quantity = string | number;

export type PullPolicy = "Always" | "IfNotPresent" | "Never";
export type ReclaimPolicy = "Retain" | "Delete";
export type BrokerLogLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "silent";

/** Reference to a Secret in the NaradCluster's namespace. */
export interface SecretReference {
  name: string;
}

// ---------------------------------------------------------------- NaradCluster spec

/** Compute resources for the broker container. Quantities may be numbers as users write them. */
export interface ResourceRequirements {
  limits?: Record<string, Quantity>;
  requests?: Record<string, Quantity>;
  claims?: { name: string; request?: string }[];
}

export interface StorageReclaimPolicy {
  /** What happens to a removed member's PVC after a scale-down. Default Retain. */
  whenScaled?: ReclaimPolicy;
  /** What happens to PVCs when the NaradCluster is deleted. Default Retain. */
  whenDeleted?: ReclaimPolicy;
}

export interface StorageSpec {
  /** PVC size for WAL + partition logs. Default "10Gi". */
  size?: string;
  /** Immutable once set (CEL). Unset = the cluster's default StorageClass. */
  storageClassName?: string;
  reclaimPolicy?: StorageReclaimPolicy;
}

export interface BrokerWalSpec {
  segmentBytes?: number;
  syncBackstopMs?: number;
}

export interface BrokerDispatchSpec {
  idlePollMs?: number;
  commitTimeoutMs?: number;
}

export interface BrokerTopicDefaultsSpec {
  /** Partitions for topics created without a count (e.g. POST /v1/topics). */
  partitions?: number;
}

/** Broker tuning; unset leaves the broker's own default (broker/src/constants.ts). */
export interface BrokerSpec {
  logLevel?: BrokerLogLevel;
  wal?: BrokerWalSpec;
  dispatch?: BrokerDispatchSpec;
  topicDefaults?: BrokerTopicDefaultsSpec;
  maxBodyBytes?: number;
  retentionCheckIntervalMs?: number;
  /**
   * Partition replication (the broker's `--replication`, config key
   * `replication`): "on" lets topics created through the HTTP API take a
   * replication factor above 1 (by default 3 on a cluster of at least 3
   * brokers). Unset keeps the broker's default. A NaradTopic applied with a
   * replicationFactor is replicated either way.
   */
  replication?: "on" | "off";
}

/** Pod-level knobs passed through to the StatefulSet's pod template. */
export interface PodSpecOverrides {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  affinity?: V1Affinity;
  tolerations?: V1Toleration[];
  nodeSelector?: Record<string, string>;
  topologySpreadConstraints?: V1TopologySpreadConstraint[];
  priorityClassName?: string;
  /** Use this ServiceAccount instead of the one the operator creates. */
  serviceAccountName?: string;
}

export interface RolloutSpec {
  /** Bound on a broker's WAL drain before a planned restart. Default 60, min 1. */
  drainTimeoutSeconds?: number;
  /** Stop deleting pods for rolls (already-started restarts still finish). Default false. */
  paused?: boolean;
  /** Skip the drain gate (day-2 escape hatch). Default false. */
  force?: boolean;
  /**
   * How long a pod may be gone or unready, with its broker not answering its
   * admin status, before its member is marked Down. Default 30.
   */
  downGraceSeconds?: number;
  /**
   * How long a planned restart's replacement pod may stay not Ready before
   * the cluster reports Degraded (ReplacementNotReady). Default 300, min 10.
   */
  replacementTimeoutSeconds?: number;
  /**
   * Once the replacement is stuck past replacementTimeoutSeconds, stop
   * holding its member in Maintenance, so the Down rules apply and peers
   * reroute its records. Default true.
   */
  releaseStuckReplacement?: boolean;
  /**
   * How long the pod in a planned restart waits for every other broker to be
   * Ready and Active before the restart is abandoned (its drain cancelled,
   * status.roll cleared). Default 60, min 1.
   */
  gateTimeoutSeconds?: number;
}

/** Partition moves (scale-down, rebalance): how long one may go without progress. */
export interface MovesSpec {
  /**
   * How long a move may go without progress on its destination (no state
   * change, no copied bytes) before it is aborted: cancelled on the
   * destination, so the source unfreezes, and retried later. Past the owner
   * swap a move is never aborted, only reported. Default 300, min 10.
   */
  stallTimeoutSeconds?: number;
  /** First wait before an aborted move's partition is moved again; doubles per abort up to 10 min. Default 30, min 1. */
  retryBackoffSeconds?: number;
}

export interface AuthSpec {
  /** Require credentials on the brokers' HTTP API (NARAD_AUTH). Default true. */
  enabled?: boolean;
  /**
   * Secret with key users.json (the broker's users file). Unset: the
   * operator creates "<cluster>-users" with an admin user when missing.
   */
  usersSecret?: string;
}

export interface TlsSpec {
  /** kubernetes.io/tls Secret (tls.crt, tls.key, optional ca.crt) for HTTPS on the API port. */
  secretName: string;
}

export interface NetworkPolicySpec {
  /** Create a NetworkPolicy for the broker pods. Default false. */
  enabled?: boolean;
  /**
   * Peers allowed to reach the HTTP API port (7942). Unset or empty: any
   * peer. The operator's own pods must be among them for rolls and status.
   * The cluster port (7943) only ever admits the cluster's own brokers.
   */
  allowFrom?: V1NetworkPolicyPeer[];
}

export interface SecuritySpec {
  auth?: AuthSpec;
  /**
   * Secret with key "secret": the shared secret for cluster RPC and the
   * operator's admin calls. Unset: the operator creates
   * "<cluster>-cluster-secret" when missing.
   */
  clusterSecret?: string;
  tls?: TlsSpec;
  networkPolicy?: NetworkPolicySpec;
}

export interface ResolvedSecuritySpec {
  auth: { enabled: boolean; usersSecret?: string };
  clusterSecret?: string;
  tls?: TlsSpec;
  networkPolicy: { enabled: boolean; allowFrom: V1NetworkPolicyPeer[] };
}

export interface ServiceMonitorSpec {
  /** Create a monitoring.coreos.com/v1 ServiceMonitor. Default false. */
  enabled?: boolean;
  /** Scrape interval, e.g. "30s". Unset = Prometheus default. */
  interval?: string;
  /** Extra labels on the ServiceMonitor (to match a Prometheus selector). */
  labels?: Record<string, string>;
}

/** The same knobs for a monitoring.coreos.com/v1 PodMonitor over the broker pods. */
export type PodMonitorSpec = ServiceMonitorSpec;

export interface MetricsSpec {
  serviceMonitor?: ServiceMonitorSpec;
  /** A PodMonitor instead of (or beside) the ServiceMonitor, for Prometheus setups that select PodMonitors. */
  podMonitor?: PodMonitorSpec;
}

export interface NaradClusterSpec {
  /** Broker count. Default 3, min 1. */
  replicas?: number;
  /** Broker image. Default DEFAULT_BROKER_IMAGE (defaults.ts). */
  image?: string;
  imagePullPolicy?: PullPolicy;
  imagePullSecrets?: V1LocalObjectReference[];
  resources?: ResourceRequirements;
  storage?: StorageSpec;
  broker?: BrokerSpec;
  pod?: PodSpecOverrides;
  rollout?: RolloutSpec;
  security?: SecuritySpec;
  metrics?: MetricsSpec;
  /** Opt in to moving existing partitions onto newly added members. Default false. */
  rebalance?: boolean;
  moves?: MovesSpec;
}

// ---------------------------------------------------------------- NaradCluster status

export type NaradClusterPhase =
  | "Pending"
  | "Creating"
  | "Running"
  | "Rolling"
  | "Scaling"
  | "Degraded"
  | "Failed";

export type ClusterConditionType = "Ready" | "Progressing" | "Degraded" | "Stable";
export type TopicConditionType = "Ready";
export type ConditionStatus = "True" | "False" | "Unknown";

/** metav1.Condition, as JSON. */
export interface Condition {
  type: string;
  status: ConditionStatus;
  observedGeneration?: number;
  /** RFC 3339. */
  lastTransitionTime: string;
  /** CamelCase machine-readable reason. */
  reason: string;
  message: string;
}

export type MemberState = "Joining" | "Active" | "Maintenance" | "Down" | "Decommissioning" | "Removed";

export interface MemberStatus {
  /** Member id; equals the pod name (e.g. "demo-0"). */
  id: string;
  pod: string;
  ordinal: number;
  /** "podIP:7942" (the broker's HTTP/admin port); absent while the pod has no IP. */
  address?: string;
  state: MemberState;
  /** RFC 3339 time the member entered `state`. */
  since: string;
  /** WAL records not yet dispatched, as last reported by the broker. */
  walPendingRecords?: number;
  /** Controller revision (pod-template hash) the pod runs. */
  revision?: string;
  /**
   * The identity (uuid) of the data volume the broker runs on, from its
   * `volume-id` marker as reported in /admin/v1/status. A new value means the
   * member came back on an empty or foreign volume: ISR entries naming the
   * old one vouch for nothing (docs/adr/0007-replication.md).
   */
  volumeId?: string;
  /**
   * RFC 3339. A member whose state the decommission or the roll holds
   * (Decommissioning, Maintenance) is never marked Down; when its pod is not
   * Ready and its broker has failed its admin status for the Down grace, this
   * says since when, and replicated partitions elect around it as around a
   * Down member. Cleared when it answers again.
   */
  failedSince?: string;
}

/** A planned restart in progress (at most one pod at a time). */
export interface RollStatus {
  podInFlight: string;
  /** RFC 3339. */
  startedAt: string;
  /** Why the pod is being restarted (first spec difference, or "forced"). */
  reason: string;
  /**
   * Whether the pod was Ready when the roll named it. Only a pod that was not
   * Ready then may be restarted without a confirmed drain (absent: treated as Ready).
   */
  podReadyAtStart?: boolean;
  /**
   * uid of the pod the roll named. A pod in flight with another uid was
   * replaced since (a recreated pod still outdated, e.g. a crash-looping
   * replacement whose image was then fixed): the roll names it afresh.
   */
  podUid?: string;
  /** RFC 3339: since when the other brokers keep this restart from going on (cleared when they are back). */
  gateBlockedSince?: string;
  /**
   * RFC 3339: when the handoff ended, i.e. leadership of every replicated
   * partition the pod led moved to another in-sync replica, or the bounded
   * wait for it ended. The drain starts after it; a restarted operator that
   * finds it absent waits for the handoff again.
   */
  handoffDoneAt?: string;
  /** Replicated partitions ("topic/partition") the pod still led when the handoff ended. */
  leadersKept?: string[];
}

export interface NaradClusterStatus {
  observedGeneration?: number;
  phase?: NaradClusterPhase;
  /** Pods that exist (for the scale subresource). */
  replicas?: number;
  readyReplicas?: number;
  conditions?: Condition[];
  members?: MemberStatus[];
  /** Bumped on every member change; brokers compare epochs. */
  membershipEpoch?: number;
  currentRevision?: string;
  updateRevision?: string;
  roll?: RollStatus;
  /** Label selector string for the scale subresource (HPA / kubectl scale). */
  selector?: string;
  /** Scale-down / rebalance progress, so a restarted operator resumes it. */
  scale?: ScaleStatus;
  /**
   * A restart abandoned while its broker may be draining, whose drain cancel
   * has not been confirmed yet: retried every pass until the broker reports
   * it accepts produce again (or restarted, which ends a drain).
   */
  drainCancel?: DrainCancelStatus;
}

export interface DrainCancelStatus {
  pod: string;
  /** RFC 3339: when the restart was abandoned. */
  since: string;
  attempts: number;
  lastError?: string;
}

export type MoveState = "pending" | "copying" | "ready" | "done" | "failed" | "cancelled";

/** One partition being moved between members (the destination broker runs the copy). */
export interface PartitionMoveStatus {
  /** NaradTopic metadata.name (not the broker topic name). */
  topic: string;
  partition: number;
  /** Source member id. */
  from: string;
  /** Destination member id. */
  to: string;
  /** RFC 3339. */
  startedAt: string;
  /** Last state the destination reported ("pending" until it was asked). */
  state: MoveState;
  /** RFC 3339: when the destination last showed progress (a new state or more bytes copied); startedAt until then. */
  progressAt?: string;
  /** What that progress was (state and byte counts), to tell the next report from it. */
  progressMark?: string;
  /**
   * The move is being aborted (stalled, or its decommission was cancelled):
   * the cancel is sent every pass until the destination confirms it
   * (cancelled, failed, or no such move), and the move is never swapped meanwhile.
   */
  aborting?: MoveAbort;
  /** RFC 3339: past the owner swap, since when the destination has not installed it (reported, never aborted). */
  stuckSince?: string;
}

export interface MoveAbort {
  reason: string;
  /** Aborted for a stall (Degraded MoveStuck, retried after a backoff), not because its decommission was cancelled. */
  stalled: boolean;
  /** RFC 3339. */
  since: string;
  /** Cancels sent so far. */
  attempts: number;
  /** Why the destination has not confirmed yet (its last answer or error). */
  lastError?: string;
}

/** A partition whose move was aborted: not moved again before notBefore. */
export interface MoveRetry {
  topic: string;
  partition: number;
  /** Aborts so far; the backoff doubles with each. */
  attempts: number;
  /** RFC 3339. */
  notBefore: string;
  /** The destination that stalled: the next move prefers another one. */
  avoid: string;
  reason: string;
}

export interface ScaleStatus {
  /** Member being decommissioned (highest ordinal at or above spec.replicas). */
  decommissioning?: string;
  /** Partition moves in flight (decommission or rebalance); at most a few at a time. */
  moves?: PartitionMoveStatus[];
  /** Moves finished since the operator started this scale or rebalance. */
  movesDone?: number;
  /**
   * When the decommissioning member's broker was first seen refusing produce
   * while owning nothing; its WAL is judged empty only on a later pass, so a
   * produce admitted just before the refusal is counted.
   */
  refusingProduceSince?: string;
  /** Value of the narad.dev/rebalance annotation last carried out (one-shot rebalance). */
  rebalanceHandled?: string;
  /** Partitions whose move was aborted, waiting out their backoff (until moved). */
  moveRetries?: MoveRetry[];
}

export interface NaradCluster {
  apiVersion: typeof API_VERSION;
  kind: typeof NARAD_CLUSTER_KIND;
  metadata: V1ObjectMeta;
  spec: NaradClusterSpec;
  status?: NaradClusterStatus;
}

// ---------------------------------------------------------------- NaradTopic

export interface NaradTopicSpec {
  /** Name of the NaradCluster in the same namespace. Required, immutable. */
  cluster: string;
  /**
   * Topic name as the broker sees it, when it must differ from metadata.name
   * (e.g. upper case, which Kubernetes names cannot hold). Immutable.
   * Use topicName() (defaults.ts) to read the effective name.
   */
  name?: string;
  /** 1..108, default 3; may only increase. */
  partitions?: number;
  /** Default 604800000 (7 days). */
  retentionMs?: number;
  /** Default 0 = unlimited. */
  retentionBytes?: number;
  /** Default 30000; immutable. */
  visibilityTimeoutMs?: number;
  /** Default 1024. */
  maxInFlightPerPartition?: number;
  /** Default 1024. */
  maxAckedAheadPerPartition?: number;
  /**
   * Copies of each partition, 1..5, on distinct brokers. Default 3 on a
   * cluster of at least 3 brokers, else 1. Immutable.
   */
  replicationFactor?: number;
  /** Copies an acks=all record needs before it is answered; 1..replicationFactor, default min(2, factor). */
  minInsyncReplicas?: number;
  /**
   * Declared consumer groups (named subscriptions), keyed by name. Unset
   * settings inherit the topic's. At most 100.
   */
  subscriptions?: NaradSubscriptionSpec[];
  /** The topic's JSON Schema (latest version); absent: any payload is accepted. */
  schema?: NaradTopicSchemaSpec;
  /**
   * Fan-out: the topic (broker name) whose committed records this one, a
   * child, receives. Set by the broker on attach; set with kubectl, it is a
   * declared link the broker admits under the fan-out rules or refuses (the
   * reason in the narad.dev/link-problem annotation). docs/fan-out.md.
   */
  parent?: string;
  /** Fan-out, with parent: a delay child receives each record this long after its parent commit. 0..1 year. */
  delayMs?: number;
}

/** A topic's JSON Schema, carried as JSON text (a structural CRD schema cannot hold an arbitrary document). */
export interface NaradTopicSchemaSpec {
  /** From 1; grows by one per (additive) change. */
  version: number;
  /** The JSON Schema document as JSON text. */
  definition: string;
}

/** One named subscription (consumer group) of a topic. */
export interface NaradSubscriptionSpec {
  /** The group name consumers pass as ?group= (the topic name rule). Required. */
  name: string;
  /** Lease length for this group; default: the topic's visibilityTimeoutMs. */
  visibilityTimeoutMs?: number;
  /** Default: the topic's maxInFlightPerPartition. */
  maxInFlightPerPartition?: number;
  /** Default: the topic's maxAckedAheadPerPartition. */
  maxAckedAheadPerPartition?: number;
}

export type NaradTopicPhase = "Pending" | "Assigning" | "Ready" | "Failed";

export interface PartitionAssignment {
  partition: number;
  /**
   * Member id (pod name) that owns the partition. For a replicated partition
   * the leader ("" while it is offline), kept for readers that know only owners.
   */
  owner: string;
  /**
   * Replicated partitions only (replicationFactor > 1; all four fields are
   * set together, see ReplicaAssignment in replication.ts). The leader: null
   * while no in-sync replica is live (offline).
   */
  leader?: string | null;
  /** Every replica, the preferred leader first. */
  replicas?: string[];
  /** The in-sync replicas, each with the volume it held when it joined. */
  isr?: IsrMember[];
  /** Bumped on every leader change (going offline included); replicas fence lower epochs. */
  leaderEpoch?: number;
}

export interface NaradTopicStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  phase?: NaradTopicPhase;
  assignments?: PartitionAssignment[];
  /** Bumped on every assignment change. */
  assignmentEpoch?: number;
  /** The replication factor in effect: spec.replicationFactor, or the default the operator chose at placement. */
  replicationFactor?: number;
  /** The min_insync_replicas in effect. */
  minInsyncReplicas?: number;
  /** Partitions whose ISR is smaller than their replica list. */
  underReplicatedPartitions?: number;
  /** Partitions with no leader (no live in-sync replica). */
  offlinePartitions?: number;
}

export interface NaradTopic {
  apiVersion: typeof API_VERSION;
  kind: typeof NARAD_TOPIC_KIND;
  metadata: V1ObjectMeta;
  spec: NaradTopicSpec;
  status?: NaradTopicStatus;
}

// ---------------------------------------------------------------- NaradUser

/** What a grant allows (the Users API's actions). */
export type NaradUserAction = "produce" | "consume" | "create" | "admin";

/** One grant, in the shape the Users API takes (POST /v1/users `grants`). */
export interface NaradUserGrant {
  action: NaradUserAction;
  /** Exact topic name, or a prefix followed by "*" ("*": every topic). */
  topics: string;
  /** Consumer groups covered (same pattern syntax); absent: every group. */
  groups?: string;
}

/** A key of a Secret in the NaradUser's namespace. */
export interface NaradUserPasswordSecret {
  name: string;
  /** Default "password". */
  key?: string;
}

export interface NaradUserSpec {
  /** Name of the NaradCluster in the same namespace. Required, immutable. */
  cluster: string;
  /**
   * The user's name in the Users API, when it must differ from
   * metadata.name (e.g. upper case). Immutable. userName() reads the
   * effective name.
   */
  username?: string;
  /** What the user may do; at most 256. */
  grants?: NaradUserGrant[];
  /**
   * Take the password from this Secret (the user's own). Absent: the
   * operator generates one into a Secret named after the NaradUser.
   */
  passwordSecret?: NaradUserPasswordSecret;
}

export interface NaradUserStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  /** The user's name in the Users API. */
  username?: string;
  /** The Secret holding the password (keys username, password), or the passwordSecret's name. */
  secret?: string;
  /**
   * created_at_ms of the users-Secret entry this NaradUser created: the
   * proof that the entry is its own (docs/adr/0009-naraduser.md).
   */
  userCreatedAtMs?: number;
}

export interface NaradUser {
  apiVersion: typeof API_VERSION;
  kind: typeof NARAD_USER_KIND;
  metadata: V1ObjectMeta;
  spec: NaradUserSpec;
  status?: NaradUserStatus;
}

// ---------------------------------------------------------------- resolved (defaulted) views

export interface ResolvedResourceRequirements extends V1ResourceRequirements {
  limits?: Record<string, string>;
  requests?: Record<string, string>;
}

export interface ResolvedStorageSpec {
  size: string;
  storageClassName?: string;
  reclaimPolicy: Required<StorageReclaimPolicy>;
}

export interface ResolvedBrokerSpec {
  logLevel: BrokerLogLevel;
  wal: BrokerWalSpec;
  dispatch: BrokerDispatchSpec;
  topicDefaults: BrokerTopicDefaultsSpec;
  maxBodyBytes?: number;
  retentionCheckIntervalMs?: number;
  replication?: "on" | "off";
}

export interface ResolvedServiceMonitorSpec {
  enabled: boolean;
  interval?: string;
  labels: Record<string, string>;
}

export interface ResolvedPodSpecOverrides extends PodSpecOverrides {
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface ResolvedNaradClusterSpec {
  replicas: number;
  image: string;
  imagePullPolicy: PullPolicy;
  imagePullSecrets: V1LocalObjectReference[];
  resources: ResolvedResourceRequirements;
  storage: ResolvedStorageSpec;
  broker: ResolvedBrokerSpec;
  pod: ResolvedPodSpecOverrides;
  rollout: Required<RolloutSpec>;
  security: ResolvedSecuritySpec;
  metrics: { serviceMonitor: ResolvedServiceMonitorSpec; podMonitor: ResolvedServiceMonitorSpec };
  rebalance: boolean;
  moves: Required<MovesSpec>;
}

export type ResolvedNaradTopicSpec = Required<
  Omit<
    NaradTopicSpec,
    "name" | "subscriptions" | "schema" | "parent" | "delayMs" | "replicationFactor" | "minInsyncReplicas"
  >
> & {
  /**
   * Left as written: the default depends on the cluster's size at placement
   * (resolveReplicationSettings in replication.ts).
   */
  replicationFactor?: number;
  minInsyncReplicas?: number;
  name?: string;
  /** Left as written (absent when none): unset subscription fields inherit the topic's at use. */
  subscriptions?: NaradSubscriptionSpec[];
  /** Absent when the topic has none (there is no default schema). */
  schema?: NaradTopicSchemaSpec;
  /** Absent for a topic that is not (declared) a fan-out child. */
  parent?: string;
  delayMs?: number;
};

/**
 * The broker's --config file (camelCase JSON). Exactly these keys: the broker
 * rejects unknown ones. Absent keys keep the broker's defaults.
 */
export interface BrokerConfigFile {
  logLevel?: string;
  walSegmentBytes?: number;
  walSyncBackstopMs?: number;
  dispatchIdlePollMs?: number;
  dispatchCommitTimeoutMs?: number;
  topicPartitions?: number;
  maxBodyBytes?: number;
  retentionCheckIntervalMs?: number;
  drainTimeoutMs?: number;
  replication?: "on" | "off";
}
