// Defaults for narad.dev/v1alpha1, as pure functions. The same constants feed
// the OpenAPI `default`s in schema.ts, so the API server and the controller
// agree; the controller still resolves specs itself because the API server
// does not default inside optional objects a user omitted.

import type {
  BrokerConfigFile,
  NaradClusterSpec,
  NaradTopic,
  NaradTopicSpec,
  NaradUser,
  Quantity,
  ResolvedNaradClusterSpec,
  ResolvedNaradTopicSpec,
} from "./types.ts";

export const DEFAULT_BROKER_IMAGE = "ghcr.io/narad/narad:0.1.0";

export const clusterDefaults = {
  replicas: 3,
  image: DEFAULT_BROKER_IMAGE,
  imagePullPolicy: "IfNotPresent",
  storageSize: "10Gi",
  reclaimWhenScaled: "Retain",
  reclaimWhenDeleted: "Retain",
  brokerLogLevel: "info",
  drainTimeoutSeconds: 60,
  paused: false,
  force: false,
  downGraceSeconds: 30,
  replacementTimeoutSeconds: 300,
  releaseStuckReplacement: true,
  gateTimeoutSeconds: 60,
  serviceMonitorEnabled: false,
  podMonitorEnabled: false,
  rebalance: false,
  moveStallTimeoutSeconds: 300,
  moveRetryBackoffSeconds: 30,
  // Auth on the brokers' HTTP API: closed by default in cluster mode.
  authEnabled: true,
  networkPolicyEnabled: false,
} as const;

/** Mirrors broker/src/constants.ts (topicPartitionsMin/Max); the CRD enforces the same range. */
export const TOPIC_PARTITIONS_MIN = 1;
export const TOPIC_PARTITIONS_MAX = 108;
/** Mirrors broker/src/core/topic-spec.ts (subscriptionsMax). */
export const TOPIC_SUBSCRIPTIONS_MAX = 100;
/** Mirrors broker/src/fanout/rules.ts (maxFanoutDelayMs): one year. */
export const TOPIC_FANOUT_DELAY_MAX_MS = 365 * 24 * 60 * 60 * 1000;

export const topicDefaults = {
  partitions: 3,
  retentionMs: 604_800_000,
  retentionBytes: 0,
  visibilityTimeoutMs: 30_000,
  maxInFlightPerPartition: 1024,
  maxAckedAheadPerPartition: 1024,
} as const;

/** Broker topic names: what the broker accepts in URLs and the WAL. */
export const TOPIC_NAME_PATTERN = "^[A-Za-z0-9._-]{1,255}$";

function quantities(q: Record<string, Quantity> | undefined): Record<string, string> | undefined {
  if (q === undefined) return undefined;
  // Users may write `cpu: 1`; core types hold quantities as strings.
  return Object.fromEntries(Object.entries(q).map(([k, v]) => [k, String(v)]));
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** A fully defaulted copy of a NaradCluster spec. Does not mutate its input. */
export function withClusterDefaults(spec: NaradClusterSpec | undefined): ResolvedNaradClusterSpec {
  const s = spec ?? {};
  const d = clusterDefaults;
  const sm = s.metrics?.serviceMonitor;
  const pm = s.metrics?.podMonitor;
  return {
    replicas: s.replicas ?? d.replicas,
    image: s.image ?? d.image,
    imagePullPolicy: s.imagePullPolicy ?? d.imagePullPolicy,
    imagePullSecrets: [...(s.imagePullSecrets ?? [])],
    resources: dropUndefined({
      limits: quantities(s.resources?.limits),
      requests: quantities(s.resources?.requests),
      claims: s.resources?.claims?.map((c) => ({ ...c })),
    }),
    storage: dropUndefined({
      size: s.storage?.size ?? d.storageSize,
      storageClassName: s.storage?.storageClassName,
      reclaimPolicy: {
        whenScaled: s.storage?.reclaimPolicy?.whenScaled ?? d.reclaimWhenScaled,
        whenDeleted: s.storage?.reclaimPolicy?.whenDeleted ?? d.reclaimWhenDeleted,
      },
    }),
    broker: dropUndefined({
      logLevel: s.broker?.logLevel ?? d.brokerLogLevel,
      wal: { ...s.broker?.wal },
      dispatch: { ...s.broker?.dispatch },
      topicDefaults: { ...s.broker?.topicDefaults },
      maxBodyBytes: s.broker?.maxBodyBytes,
      retentionCheckIntervalMs: s.broker?.retentionCheckIntervalMs,
      replication: s.broker?.replication,
    }),
    pod: {
      ...s.pod,
      labels: { ...s.pod?.labels },
      annotations: { ...s.pod?.annotations },
    },
    rollout: {
      drainTimeoutSeconds: s.rollout?.drainTimeoutSeconds ?? d.drainTimeoutSeconds,
      paused: s.rollout?.paused ?? d.paused,
      force: s.rollout?.force ?? d.force,
      downGraceSeconds: s.rollout?.downGraceSeconds ?? d.downGraceSeconds,
      replacementTimeoutSeconds: s.rollout?.replacementTimeoutSeconds ?? d.replacementTimeoutSeconds,
      releaseStuckReplacement: s.rollout?.releaseStuckReplacement ?? d.releaseStuckReplacement,
      gateTimeoutSeconds: s.rollout?.gateTimeoutSeconds ?? d.gateTimeoutSeconds,
    },
    security: dropUndefined({
      auth: dropUndefined({
        enabled: s.security?.auth?.enabled ?? d.authEnabled,
        usersSecret: s.security?.auth?.usersSecret,
      }),
      clusterSecret: s.security?.clusterSecret,
      tls: s.security?.tls === undefined ? undefined : { ...s.security.tls },
      networkPolicy: {
        enabled: s.security?.networkPolicy?.enabled ?? d.networkPolicyEnabled,
        allowFrom: [...(s.security?.networkPolicy?.allowFrom ?? [])],
      },
    }),
    metrics: {
      serviceMonitor: dropUndefined({
        enabled: sm?.enabled ?? d.serviceMonitorEnabled,
        interval: sm?.interval,
        labels: { ...sm?.labels },
      }),
      podMonitor: dropUndefined({
        enabled: pm?.enabled ?? d.podMonitorEnabled,
        interval: pm?.interval,
        labels: { ...pm?.labels },
      }),
    },
    rebalance: s.rebalance ?? d.rebalance,
    moves: {
      stallTimeoutSeconds: s.moves?.stallTimeoutSeconds ?? d.moveStallTimeoutSeconds,
      retryBackoffSeconds: s.moves?.retryBackoffSeconds ?? d.moveRetryBackoffSeconds,
    },
  };
}

/** A fully defaulted copy of a NaradTopic spec. Does not mutate its input. */
export function withTopicDefaults(spec: NaradTopicSpec): ResolvedNaradTopicSpec {
  const t = topicDefaults;
  return dropUndefined({
    cluster: spec.cluster,
    name: spec.name,
    partitions: spec.partitions ?? t.partitions,
    retentionMs: spec.retentionMs ?? t.retentionMs,
    retentionBytes: spec.retentionBytes ?? t.retentionBytes,
    visibilityTimeoutMs: spec.visibilityTimeoutMs ?? t.visibilityTimeoutMs,
    maxInFlightPerPartition: spec.maxInFlightPerPartition ?? t.maxInFlightPerPartition,
    maxAckedAheadPerPartition: spec.maxAckedAheadPerPartition ?? t.maxAckedAheadPerPartition,
    subscriptions: spec.subscriptions,
    schema: spec.schema,
    parent: spec.parent,
    delayMs: spec.delayMs,
    replicationFactor: spec.replicationFactor,
    minInsyncReplicas: spec.minInsyncReplicas,
  });
}

/**
 * The topic's name as the broker sees it: spec.name if set, else metadata.name.
 * Kubernetes names are lowercase DNS subdomains, so spec.name exists for names
 * that are not (e.g. "Orders"); every DNS subdomain already matches TOPIC_NAME_PATTERN.
 */
export function topicName(topic: Pick<NaradTopic, "metadata" | "spec">): string {
  const name = topic.spec.name ?? topic.metadata.name;
  if (name === undefined) throw new Error("NaradTopic has neither spec.name nor metadata.name");
  return name;
}

/**
 * The broker --config file for a resolved spec. Only keys the user set are
 * written (absent keys keep broker defaults), except logLevel and
 * drainTimeoutMs, which the operator always decides: the broker's SIGTERM
 * drain is bounded by rollout.drainTimeoutSeconds.
 */
export function brokerConfigFromSpec(spec: ResolvedNaradClusterSpec): BrokerConfigFile {
  const b = spec.broker;
  return dropUndefined({
    logLevel: b.logLevel,
    walSegmentBytes: b.wal.segmentBytes,
    walSyncBackstopMs: b.wal.syncBackstopMs,
    dispatchIdlePollMs: b.dispatch.idlePollMs,
    dispatchCommitTimeoutMs: b.dispatch.commitTimeoutMs,
    topicPartitions: b.topicDefaults.partitions,
    maxBodyBytes: b.maxBodyBytes,
    retentionCheckIntervalMs: b.retentionCheckIntervalMs,
    drainTimeoutMs: spec.rollout.drainTimeoutSeconds * 1000,
    replication: b.replication,
  });
}

// ---------------------------------------------------------------- NaradUser

/** The Users API's username rule (packages/users apiUsernamePattern, as a CRD pattern). */
export const USER_NAME_PATTERN = "^[A-Za-z0-9._-]{1,64}$";
/** The Users API's grant pattern: topic-name characters and an optional trailing "*". */
export const USER_GRANT_PATTERN = "^[A-Za-z0-9._-]{0,255}\\*?$";
/** The Users API's bound on grants per user. */
export const USER_GRANTS_MAX = 256;
/** The key of a passwordSecret read when spec.passwordSecret.key is unset, and of the generated Secret. */
export const USER_PASSWORD_KEY = "password";

/** The user's name in the Users API: spec.username if set, else metadata.name. */
export function userName(user: Pick<NaradUser, "metadata" | "spec">): string {
  return user.spec.username ?? user.metadata.name ?? "";
}
