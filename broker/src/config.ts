// The only reader of flags, NARAD_* environment variables and the config
// file. Precedence: flag > environment > config file > default. Returns a
// frozen, validated Config; everything else receives values from it.

import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { groupNamePattern, topicNamePattern } from "./api-contract.ts";
import * as k from "./constants.ts";
import { parseGoDurationMs } from "./core/go-duration.ts";
import type { TopicDefaults } from "./core/topic-spec.ts";
import type { DispatcherOptions } from "./dispatch/types.ts";

export type DefaultAcks = "auto" | "wal" | "all";

export interface Config {
  dev: boolean;
  http: { host: string; port: number };
  /** Also accept on 127.0.0.1:<HTTP port>, forwarded to the HTTP listener (http/loopback-forward.ts). */
  loopbackForward: boolean;
  cluster: { host: string; port: number };
  dataDir: string;
  nodeId: string;
  logLevel: string;
  metastore: "file" | "kubernetes";
  /** NaradCluster this broker belongs to (kubernetes metastore); "" with the file metastore. */
  clusterName: string;
  /**
   * metadata.uid of that NaradCluster (the operator sets NARAD_CLUSTER_UID);
   * written into the volume-id marker, so a volume moved from another cluster
   * is recognised as foreign. "" when not known (file metastore, older operator).
   */
  clusterUid: string;
  /** Namespace of the NaradCluster and its NaradTopics (kubernetes metastore). */
  namespace: string;
  drainTimeoutMs: number;
  /** acks=all: how long a produce waits for the owner's commit. */
  acksAllTimeoutMs: number;
  /**
   * The acks mode of a produce that names none (Narad's clients never do):
   * "auto" is acks=all on a replicated topic and acks=wal otherwise; the
   * answer keeps Narad's shape (202) either way (http/produce-acks.ts).
   */
  defaultAcks: DefaultAcks;
  /**
   * Cluster mode: a read of the producer registry is trusted for producer
   * epoch decisions this long after it started; a re-init that bumps an
   * epoch waits at most about this long for brokers that do not confirm it.
   */
  producerFenceLeaseMs: number;
  /**
   * Kubernetes metastore: a decision about a Users API user never uses a
   * read of the API users Secret older than this; past it they answer 503.
   */
  usersMaxStalenessMs: number;
  /** Kubernetes metastore: how often the API users Secret is read, and how long one read or write of it may take. */
  usersPollMs: number;
  usersRequestTimeoutMs: number;
  /**
   * A query parameter a route does not know: ignored as Narad v1 does,
   * except a near miss of a known name (typos, the default: 400
   * unknown_query_parameter, since ?kye= must not store a record without its
   * key); every one refused (refuse); or every one ignored (ignore).
   */
  unknownQueryParams: "typos" | "refuse" | "ignore";
  produceMaxBodyBytes: number;
  batchMaxBodyBytes: number;
  /** Produce memory budget (bytes of bodies not yet durable) and how long a produce waits for its share. */
  admission: { budgetBytes: number; timeoutMs: number };
  /** Produce rate limits in messages/s per topic and per client; undefined = off. */
  rateLimits: { topic?: { rate: number; burst: number }; client?: { rate: number; burst: number } };
  wal: {
    segmentBytes: number;
    rotateDispatchedBytes: number;
    maxRecordBytes: number;
    maxGroupBytes: number;
    syncBackstopMs: number;
  };
  log: {
    segmentBytes: number;
    indexIntervalBytes: number;
    maxFrameBytes: number;
    retentionCheckIntervalMs: number;
  };
  dispatch: DispatcherOptions;
  topicDefaults: TopicDefaults;
  /** Longest a consume long-poll waits (a longer `wait` is cut to it). */
  consume: { maxWaitMs: number };
  /**
   * Caps of one read (GET /records, a replay, a queue delivery, a peer's
   * Read RPC). Fixed, not flags: the HTTP API refuses a `limit` or
   * `max_bytes` above the cap (400), so a lower cap would break clients that
   * ask for the documented maximum; and 8 MiB fits an RPC message.
   */
  read: { maxRecords: number; maxBytes: number };
  security: SecurityConfig;
  limits: LimitsConfig;
  /**
   * Partition replication (docs/replication.md): "off" keeps every new
   * topic at one copy and refuses a replication_factor above 1 (400
   * replication_not_enabled); "on" (the default) applies ADR 0007's
   * defaults.
   */
  replication: "on" | "off";
  /** Partition replication's timings (docs/replication.md). */
  replica: ReplicaConfig;
}

/** Timings of partition replication (replication-io/replica-manager.ts). */
export interface ReplicaConfig {
  /** A follower not caught up for this long leaves the ISR (never below min_insync_replicas). */
  lagMs: number;
  /** A leader waits this long for a commit's replicas before it answers REPLICATION_TIMEOUT (the records stay, a re-send is deduped). */
  commitTimeoutMs: number;
  isrCheckIntervalMs: number;
  isrRetryMs: number;
  fetchMaxBytes: number;
  /** A follower's fetch long-polls this long at the leader's end. */
  fetchMaxWaitMs: number;
  retryBackoffMs: number;
  frontierRefreshMs: number;
  /** A follower rewrites the HWM in its replica checkpoint at most this often (the epoch: at once). */
  checkpointIntervalMs: number;
}

/**
 * Bounds against hostile or broken clients (docs/security.md). Each one is
 * a setting; each refusal it causes is counted in narad_limit_refusals_total.
 */
export interface LimitsConfig {
  /** Records one produce-batch may decode to (each costs heap beyond its body bytes). */
  batchMaxRecords: number;
  /** Topics in the metastore, and partitions summed over all topics. */
  maxTopics: number;
  maxPartitions: number;
  /** Partition logs this node keeps open at once (each holds at least 2 fds). */
  maxOpenLogs: number;
  /** Read handles of sealed segments open at once, over all partition logs (an LRU, opened on demand). */
  maxSegmentFds: number;
  /** Time to send the request head, and the whole request (head and body). */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** A socket with no traffic for this long is closed (above the consume long-poll bound). */
  idleTimeoutMs: number;
  /** After bodyGraceMs, a body arriving slower than this on average loses its request (408). */
  bodyMinBytesPerSecond: number;
  bodyGraceMs: number;
  /** Login throttle per (username, client address): free attempts, then one per interval. */
  loginFreeAttempts: number;
  loginIntervalMs: number;
  /** scrypt checks running at once, and queued before 503. */
  hashConcurrency: number;
  hashMaxQueued: number;
  /** Named producers in the producer registry (POST /v1/producers with a new name beyond it: 409). */
  maxNamedProducers: number;
}

/** HTTP authentication, cluster RPC authentication and TLS (README "Security"). */
export interface SecurityConfig {
  /** Authentication + RBAC on the HTTP API (health, readiness and metrics stay open). */
  auth: "on" | "off";
  /** Users file (JSON); undefined: single node creates <data-dir>/auth.json when auth is on. */
  authFile: string | undefined;
  /** Shared secret of the cluster RPC (file path); undefined: cluster RPC unauthenticated. */
  clusterSecretFile: string | undefined;
  /** Directory with tls.crt and tls.key: the HTTP listener serves HTTPS. */
  tlsDir: string | undefined;
  /** Directory with ca.crt, tls.crt and tls.key: mutual TLS on the cluster RPC. */
  clusterTlsDir: string | undefined;
  /** /metrics needs an authenticated principal (only meaningful with auth on). */
  metricsAuth: boolean;
}

/**
 * Whether authentication is on when --auth is not given: closed by default in
 * cluster mode (the operator hands every broker its users Secret), open on a
 * single node so the quickstart works without credentials.
 */
export function defaultAuthMode(metastoreKind: "file" | "kubernetes"): "on" | "off" {
  return metastoreKind === "kubernetes" ? "on" : "off";
}

export class ConfigError extends Error {}

/** Where Kubernetes mounts the pod's namespace (in-cluster service account). */
export const SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
const NAMESPACE_FALLBACK = "default";

/** --namespace default: POD_NAMESPACE (downward API), else the service-account file, else "default". */
function defaultNamespace(env: NodeJS.ProcessEnv, namespaceFile: string): string {
  if (env.POD_NAMESPACE) return env.POD_NAMESPACE;
  try {
    if (existsSync(namespaceFile)) {
      const ns = readFileSync(namespaceFile, "utf8").trim();
      if (ns !== "") return ns;
    }
  } catch {
    // unreadable: fall through
  }
  return NAMESPACE_FALLBACK;
}

/**
 * Settings that can come from a flag, an env var or the config file (camelCase
 * key). `narad` is the variable Narad (Go) reads for the same setting, so a
 * deployment written for it keeps its environment; ours wins when both are set.
 */
interface SettingSpec {
  env: string;
  file: string;
  narad?: string;
}
const settings = {
  addr: { env: "NARAD_HTTP_ADDR", file: "addr" },
  "cluster-addr": { env: "NARAD_CLUSTER_ADDR", file: "clusterAddr" },
  "data-dir": { env: "NARAD_DATA_DIR", file: "dataDir" },
  "node-id": { env: "NARAD_NODE_ID", file: "nodeId" },
  "log-level": { env: "NARAD_LOG_LEVEL", file: "logLevel" },
  metastore: { env: "NARAD_METASTORE", file: "metastore" },
  "cluster-name": { env: "NARAD_CLUSTER_NAME", file: "clusterName" },
  "cluster-uid": { env: "NARAD_CLUSTER_UID", file: "clusterUid" },
  namespace: { env: "NARAD_NAMESPACE", file: "namespace" },
  "drain-timeout-ms": { env: "NARAD_DRAIN_TIMEOUT_MS", file: "drainTimeoutMs" },
  "acks-all-timeout-ms": { env: "NARAD_ACKS_ALL_TIMEOUT_MS", file: "acksAllTimeoutMs" },
  "default-acks": { env: "NARAD_DEFAULT_ACKS", file: "defaultAcks" },
  "producer-fence-lease-ms": { env: "NARAD_PRODUCER_FENCE_LEASE_MS", file: "producerFenceLeaseMs" },
  "users-max-staleness-ms": { env: "NARAD_USERS_MAX_STALENESS_MS", file: "usersMaxStalenessMs" },
  "unknown-query-params": { env: "NARAD_UNKNOWN_QUERY_PARAMS", file: "unknownQueryParams" },
  "max-body-bytes": { env: "NARAD_MAX_BODY_BYTES", file: "maxBodyBytes" },
  "produce-memory-budget": { env: "NARAD_PRODUCE_MEMORY_BUDGET", file: "produceMemoryBudget" },
  "admission-timeout-ms": { env: "NARAD_ADMISSION_TIMEOUT_MS", file: "admissionTimeoutMs" },
  "topic-rate-limit": { env: "NARAD_TOPIC_RATE_LIMIT", file: "topicRateLimit" },
  "topic-rate-burst": { env: "NARAD_TOPIC_RATE_BURST", file: "topicRateBurst" },
  "client-rate-limit": { env: "NARAD_CLIENT_RATE_LIMIT", file: "clientRateLimit" },
  "client-rate-burst": { env: "NARAD_CLIENT_RATE_BURST", file: "clientRateBurst" },
  "wal-segment-bytes": { env: "NARAD_WAL_SEGMENT_BYTES", file: "walSegmentBytes" },
  "wal-sync-backstop-ms": { env: "NARAD_WAL_SYNC_BACKSTOP_MS", file: "walSyncBackstopMs" },
  "log-segment-bytes": { env: "NARAD_LOG_SEGMENT_BYTES", file: "logSegmentBytes" },
  "dispatch-idle-poll-ms": { env: "NARAD_DISPATCH_IDLE_POLL_MS", file: "dispatchIdlePollMs" },
  "dispatch-commit-timeout-ms": { env: "NARAD_DISPATCH_COMMIT_TIMEOUT_MS", file: "dispatchCommitTimeoutMs" },
  "dispatch-in-doubt-hold-ms": { env: "NARAD_DISPATCH_IN_DOUBT_HOLD_MS", file: "dispatchInDoubtHoldMs" },
  "replica-lag-ms": { env: "NARAD_REPLICA_LAG_MS", file: "replicaLagMs" },
  "replica-commit-timeout-ms": { env: "NARAD_REPLICA_COMMIT_TIMEOUT_MS", file: "replicaCommitTimeoutMs" },
  "dispatch-max-pass-bytes": { env: "NARAD_DISPATCH_MAX_PASS_BYTES", file: "dispatchMaxPassBytes" },
  "dispatch-window-records": { env: "NARAD_DISPATCH_WINDOW_RECORDS", file: "dispatchWindowRecords" },
  "dispatch-lookahead-windows": {
    env: "NARAD_DISPATCH_LOOKAHEAD_WINDOWS",
    file: "dispatchLookaheadWindows",
  },
  "topic-partitions": {
    env: "NARAD_TOPIC_PARTITIONS",
    file: "topicPartitions",
    narad: "NARAD_TOPIC_DEFAULT_PARTITIONS",
  },
  "topic-max-partitions": { env: "NARAD_TOPIC_MAX_PARTITIONS", file: "topicMaxPartitions" },
  "topic-retention-ms": {
    env: "NARAD_TOPIC_RETENTION_MS",
    file: "topicRetentionMs",
    narad: "NARAD_TOPIC_DEFAULT_RETENTION_AGE_MS",
  },
  "topic-visibility-timeout-ms": {
    env: "NARAD_TOPIC_VISIBILITY_TIMEOUT_MS",
    file: "topicVisibilityTimeoutMs",
    narad: "NARAD_TOPIC_DEFAULT_VISIBILITY_TIMEOUT_MS",
  },
  "topic-max-in-flight": {
    env: "NARAD_TOPIC_MAX_IN_FLIGHT",
    file: "topicMaxInFlight",
    narad: "NARAD_TOPIC_DEFAULT_MAX_IN_FLIGHT_PER_PARTITION",
  },
  "topic-max-acked-ahead": {
    env: "NARAD_TOPIC_MAX_ACKED_AHEAD",
    file: "topicMaxAckedAhead",
    narad: "NARAD_TOPIC_DEFAULT_MAX_ACKED_AHEAD_PER_PARTITION",
  },
  "max-consume-wait": {
    env: "NARAD_MAX_CONSUME_WAIT",
    file: "maxConsumeWait",
    narad: "NARAD_HTTP_MAX_CONSUME_WAIT",
  },
  "retention-check-interval-ms": {
    env: "NARAD_RETENTION_CHECK_INTERVAL_MS",
    file: "retentionCheckIntervalMs",
  },
  auth: { env: "NARAD_AUTH", file: "auth" },
  "auth-file": { env: "NARAD_AUTH_FILE", file: "authFile" },
  "cluster-secret-file": { env: "NARAD_CLUSTER_SECRET_FILE", file: "clusterSecretFile" },
  "tls-dir": { env: "NARAD_TLS_DIR", file: "tlsDir" },
  "cluster-tls-dir": { env: "NARAD_CLUSTER_TLS_DIR", file: "clusterTlsDir" },
  "batch-max-records": { env: "NARAD_BATCH_MAX_RECORDS", file: "batchMaxRecords" },
  "max-topics": { env: "NARAD_MAX_TOPICS", file: "maxTopics" },
  "max-partitions": { env: "NARAD_MAX_PARTITIONS", file: "maxPartitions" },
  "max-open-logs": { env: "NARAD_MAX_OPEN_LOGS", file: "maxOpenLogs" },
  "max-segment-fds": { env: "NARAD_MAX_SEGMENT_FDS", file: "maxSegmentFds" },
  "headers-timeout-ms": { env: "NARAD_HEADERS_TIMEOUT_MS", file: "headersTimeoutMs" },
  "request-timeout-ms": { env: "NARAD_REQUEST_TIMEOUT_MS", file: "requestTimeoutMs" },
  "idle-timeout-ms": { env: "NARAD_IDLE_TIMEOUT_MS", file: "idleTimeoutMs" },
  "body-min-rate": { env: "NARAD_BODY_MIN_RATE", file: "bodyMinRate" },
  "body-grace-ms": { env: "NARAD_BODY_GRACE_MS", file: "bodyGraceMs" },
  "metrics-auth": { env: "NARAD_METRICS_AUTH", file: "metricsAuth" },
  "loopback-forward": { env: "NARAD_LOOPBACK_FORWARD", file: "loopbackForward" },
  "login-free-attempts": { env: "NARAD_LOGIN_FREE_ATTEMPTS", file: "loginFreeAttempts" },
  "login-interval-ms": { env: "NARAD_LOGIN_INTERVAL_MS", file: "loginIntervalMs" },
  "hash-concurrency": { env: "NARAD_HASH_CONCURRENCY", file: "hashConcurrency" },
  "hash-max-queued": { env: "NARAD_HASH_MAX_QUEUED", file: "hashMaxQueued" },
  "max-named-producers": { env: "NARAD_MAX_NAMED_PRODUCERS", file: "maxNamedProducers" },
  replication: { env: "NARAD_REPLICATION", file: "replication" },
} as const satisfies Record<string, SettingSpec>;
type SettingName = keyof typeof settings;

export const usage = `Usage: narad serve [--dev] [options]

Options (each also settable as the NARAD_* variable shown, or in --config JSON):
  --addr HOST:PORT            HTTP API address           NARAD_HTTP_ADDR     (default :${k.httpPortDefault}; --dev 127.0.0.1:${k.httpPortDefault})
  --cluster-addr HOST:PORT    cluster RPC address        NARAD_CLUSTER_ADDR  (default :${k.clusterPortDefault})
  --data-dir DIR              data directory             NARAD_DATA_DIR      (default /var/lib/narad; --dev ./data)
  --node-id ID                this node's id             NARAD_NODE_ID       (default: hostname)
  --log-level LEVEL           trace|debug|info|warn|error NARAD_LOG_LEVEL    (default info)
  --metastore file|kubernetes where topics live          NARAD_METASTORE     (default file)
  --cluster-name NAME         NaradCluster (kubernetes)  NARAD_CLUSTER_NAME  (required with kubernetes)
  --cluster-uid UID           its metadata.uid (volume-id) NARAD_CLUSTER_UID   (set by the operator)
  --namespace NS              its namespace (kubernetes) NARAD_NAMESPACE     (default $POD_NAMESPACE, the pod's namespace, or default)
  --config FILE               JSON file with any of the settings in camelCase   NARAD_CONFIG
  --drain-timeout-ms N        SIGTERM drain bound        NARAD_DRAIN_TIMEOUT_MS (default ${k.drainTimeoutMs})
  --acks-all-timeout-ms N     acks=all wait for the owner's commit, then 503
                                                         NARAD_ACKS_ALL_TIMEOUT_MS (default ${k.acksAllTimeoutMs})
  --default-acks auto|wal|all acks of a produce that names none (answered 202 as Narad does);
                              auto: all on a replicated topic, wal otherwise
                                                         NARAD_DEFAULT_ACKS  (default ${k.defaultAcks})
  --producer-fence-lease-ms N cluster mode: a producer-registry read is trusted this long for
                              producer epoch decisions; a re-init waits at most ~N for brokers
                              that do not confirm it (1-${k.producerFenceLeaseMaxMs})
                                                         NARAD_PRODUCER_FENCE_LEASE_MS (default ${k.producerFenceLeaseMs})
  --users-max-staleness-ms N  kubernetes metastore: API users are decided on a read of their
                              Secret at most N ms old, else 503 (${k.usersMaxStalenessMinMs}-${k.usersMaxStalenessMaxMs})
                                                         NARAD_USERS_MAX_STALENESS_MS (default ${k.usersMaxStalenessMs})
  --unknown-query-params typos|refuse|ignore  a query parameter the route does not know:
                              ignored as Narad v1 does, but 400 when it is a near miss of a
                              known one (typos); 400 always (refuse); never (ignore)
                                                         NARAD_UNKNOWN_QUERY_PARAMS (default typos)
  --max-body-bytes N          single produce and every other JSON body (not batch, users)
                                                         NARAD_MAX_BODY_BYTES (default ${k.produceMaxBodyBytes})
  --produce-memory-budget N   bytes of produce bodies in memory before produces wait
                                                         NARAD_PRODUCE_MEMORY_BUDGET (default ${k.admissionBudgetBytes})
  --admission-timeout-ms N    wait for budget, then 429  NARAD_ADMISSION_TIMEOUT_MS (default ${k.admissionWaitMs})
  --topic-rate-limit N        messages/s per topic       NARAD_TOPIC_RATE_LIMIT (default 0 = off)
  --topic-rate-burst N        bucket size per topic      NARAD_TOPIC_RATE_BURST (default: the rate)
  --client-rate-limit N       messages/s per client (principal, else IP)
                                                         NARAD_CLIENT_RATE_LIMIT (default 0 = off)
  --client-rate-burst N       bucket size per client     NARAD_CLIENT_RATE_BURST (default: the rate)
Topic defaults (for a create that leaves the field out or 0), as Narad's NARAD_TOPIC_DEFAULT_* also set them:
  --topic-partitions N        partitions of a new topic  NARAD_TOPIC_PARTITIONS (default ${k.topicPartitionsDefault})
  --topic-max-partitions N    most partitions one topic may have NARAD_TOPIC_MAX_PARTITIONS (default ${k.topicPartitionsMax})
  --topic-retention-ms N      retention (0 = keep)       NARAD_TOPIC_RETENTION_MS (default ${k.topicRetentionMsDefault})
  --topic-visibility-timeout-ms N  lease length          NARAD_TOPIC_VISIBILITY_TIMEOUT_MS (default ${k.topicVisibilityTimeoutMsDefault})
  --topic-max-in-flight N     leases per partition       NARAD_TOPIC_MAX_IN_FLIGHT (default ${k.topicMaxInFlightDefault})
  --topic-max-acked-ahead N   acks parked past the frontier NARAD_TOPIC_MAX_ACKED_AHEAD (default ${k.topicMaxAckedAheadDefault})
  --max-consume-wait DURATION longest consume long-poll  NARAD_MAX_CONSUME_WAIT (default ${k.consumeMaxWaitMs / 1000}s)
  --wal-segment-bytes N, --wal-sync-backstop-ms N, --log-segment-bytes N,
  --dispatch-idle-poll-ms N, --dispatch-commit-timeout-ms N, --dispatch-in-doubt-hold-ms N,
  --dispatch-max-pass-bytes N (WAL bytes one dispatch pass holds in memory; default ${k.dispatchMaxBatchBytes * k.dispatchCommitFanout}),
  --dispatch-window-records N (base records per dispatch pass; default ${k.dispatchWindowRecords}),
  --dispatch-lookahead-windows N (windows a pass may read past a stuck record; default ${k.dispatchLookaheadWindows}),
  --retention-check-interval-ms N
  --auth on|off               HTTP authentication + RBAC NARAD_AUTH          (default off)
  --auth-file PATH            users file (JSON), reloaded on change          NARAD_AUTH_FILE
                              (single node, auth on, none given: <data-dir>/auth.json is created)
  --cluster-secret-file PATH  shared secret of the cluster RPC               NARAD_CLUSTER_SECRET_FILE
  --tls-dir DIR               serve HTTPS with DIR/tls.crt + DIR/tls.key     NARAD_TLS_DIR
  --cluster-tls-dir DIR       mutual TLS on the cluster RPC (ca.crt, tls.crt, tls.key) NARAD_CLUSTER_TLS_DIR
  --metrics-auth on|off       /metrics needs authentication (it names topics and groups)
                                                         NARAD_METRICS_AUTH  (default: the --auth setting)
  --loopback-forward on|off   also accept on 127.0.0.1:<HTTP port> when --addr is another IP
                              (kubectl port-forward into a pod)  NARAD_LOOPBACK_FORWARD (default off)
  --replication on|off        topics with more than one copy (replication_factor > 1);
                              off: every new topic has one copy  NARAD_REPLICATION (default ${k.replicationDefault})
  --replica-lag-ms N          a follower not caught up for this long leaves the ISR
                                                         NARAD_REPLICA_LAG_MS (default ${k.replicaLagMs})
  --replica-commit-timeout-ms N  acks=all wait for min_insync_replicas copies, then 503
                                                         NARAD_REPLICA_COMMIT_TIMEOUT_MS (default ${k.replicaCommitTimeoutMs})
Limits against hostile clients (docs/security.md; a refusal counts in narad_limit_refusals_total):
  --batch-max-records N       records per produce-batch  NARAD_BATCH_MAX_RECORDS (default ${k.batchMaxRecords})
  --max-topics N              topics in the cluster      NARAD_MAX_TOPICS    (default ${k.maxTopics})
  --max-partitions N          partitions over all topics NARAD_MAX_PARTITIONS (default ${k.maxPartitions})
  --max-open-logs N           partition logs open at once (2+ fds each) NARAD_MAX_OPEN_LOGS (default ${k.maxOpenLogs})
  --max-segment-fds N         sealed-segment read handles open at once (LRU) NARAD_MAX_SEGMENT_FDS (default ${k.maxSegmentFds})
  --headers-timeout-ms N      time to send request headers NARAD_HEADERS_TIMEOUT_MS (default ${k.headersTimeoutMs})
  --request-timeout-ms N      time to send a whole request NARAD_REQUEST_TIMEOUT_MS (default ${k.requestTimeoutMs})
  --idle-timeout-ms N         close a silent connection  NARAD_IDLE_TIMEOUT_MS (default ${k.idleTimeoutMs})
  --body-min-rate N           bytes/s a body must average after the grace NARAD_BODY_MIN_RATE (default ${k.bodyMinBytesPerSecond})
  --body-grace-ms N           before the body rate counts NARAD_BODY_GRACE_MS (default ${k.bodyGraceMs})
  --login-free-attempts N     failed logins per (user, address) before the throttle NARAD_LOGIN_FREE_ATTEMPTS (default ${k.loginFreeAttempts})
  --login-interval-ms N       then one attempt per N ms NARAD_LOGIN_INTERVAL_MS (default ${k.loginIntervalMs})
  --hash-concurrency N        scrypt checks at once      NARAD_HASH_CONCURRENCY (default ${k.hashConcurrency})
  --hash-max-queued N         queued checks before 503   NARAD_HASH_MAX_QUEUED (default ${k.hashMaxQueued})
  --max-named-producers N     named producers in the registry NARAD_MAX_NAMED_PRODUCERS (default ${k.maxNamedProducers})
  --dev                       single node on 127.0.0.1 with data under ./data
`;

/**
 * Every `narad serve` flag and whether it takes a value: loadConfig parses
 * exactly these, and the CLI's help and shell completion list them.
 */
export const serveFlags: ReadonlyArray<{ name: string; type: "string" | "boolean" }> = [
  { name: "dev", type: "boolean" },
  { name: "config", type: "string" },
  ...Object.keys(settings).map((name) => ({ name, type: "string" as const })),
];

function parseHostPort(value: string, what: string): { host: string; port: number } {
  const i = value.lastIndexOf(":");
  if (i < 0) throw new ConfigError(`${what} must be HOST:PORT or :PORT, got "${value}"`);
  const host = value.slice(0, i) || "0.0.0.0";
  const port = Number(value.slice(i + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError(`${what} has an invalid port: "${value}"`);
  return { host: host.replace(/^\[(.*)\]$/, "$1"), port };
}

function parseCount(value: string | undefined, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0)
    throw new ConfigError(`${what} must be a non-negative integer, got "${value}"`);
  return n;
}

/**
 * A rate in messages/s (fractions allowed: 0.5 is one every 2 s); 0 or unset
 * turns the limit off. The burst defaults to one second's worth, at least 1.
 */
function bucketLimit(
  rateText: string | undefined,
  burst: string | undefined,
  what: string,
): { rate: number; burst: number } | undefined {
  const rate = rateText === undefined ? 0 : Number(rateText);
  if (!Number.isFinite(rate) || rate < 0) {
    throw new ConfigError(`${what}-limit must be a non-negative number of messages/s, got "${rateText}"`);
  }
  if (rate === 0) return undefined;
  const b = parseCount(burst, Math.max(1, Math.ceil(rate)), `${what}-burst`);
  if (b < 1) throw new ConfigError(`${what}-burst must be at least 1`);
  return { rate, burst: b };
}

/** A Go duration ("10s", "500ms") or a bare number of milliseconds. */
function durationSetting(value: string | undefined, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  const ms = /^\d+$/.test(value) ? Number(value) : parseGoDurationMs(value);
  if (ms === undefined || !Number.isSafeInteger(ms) || ms < 0)
    throw new ConfigError(`${what} must be a duration like 10s or 500ms, got "${value}"`);
  return ms;
}

export function loadConfig(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  hostname: string,
  namespaceFile: string = SERVICE_ACCOUNT_NAMESPACE_FILE,
): Config {
  const options = Object.fromEntries(serveFlags.map((f) => [f.name, { type: f.type }]));
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: false, strict: true });
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const flags = parsed.values as Record<string, string | boolean | undefined>;
  const dev = flags.dev === true;
  const configPath = (flags.config as string | undefined) ?? env.NARAD_CONFIG;
  let file: Record<string, unknown> = {};
  if (configPath) {
    try {
      file = JSON.parse(readFileSync(configPath, "utf8")) as Record<string, unknown>;
    } catch (err) {
      throw new ConfigError(`cannot read config file ${configPath}: ${(err as Error).message}`);
    }
    const known = new Set<string>(Object.values(settings).map((s) => s.file));
    for (const key of Object.keys(file)) {
      if (!known.has(key)) throw new ConfigError(`config file ${configPath}: unknown setting "${key}"`);
    }
  }
  const get = (name: SettingName): string | undefined => {
    const flag = flags[name];
    if (typeof flag === "string") return flag;
    const s: SettingSpec = settings[name];
    for (const variable of [s.env, s.narad]) {
      const fromEnv = variable === undefined ? undefined : env[variable];
      if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
    }
    const fromFile = file[s.file];
    return fromFile === undefined ? undefined : String(fromFile);
  };
  const count = (name: SettingName, fallback: number) => parseCount(get(name), fallback, `--${name}`);
  // A read needs one handle: 0 would wait forever.
  const positiveCount = (name: SettingName, fallback: number) => {
    const n = count(name, fallback);
    if (n === 0) throw new ConfigError(`--${name} must be at least 1`);
    return n;
  };

  const logLevel = get("log-level") ?? "info";
  if (!["trace", "debug", "info", "warn", "error", "fatal", "silent"].includes(logLevel)) {
    throw new ConfigError(`--log-level must be one of trace, debug, info, warn, error, got "${logLevel}"`);
  }
  const maxBody = count("max-body-bytes", k.produceMaxBodyBytes);
  const metastore = get("metastore") ?? "file";
  if (metastore !== "file" && metastore !== "kubernetes") {
    throw new ConfigError(`--metastore must be file or kubernetes, got "${metastore}"`);
  }
  const auth = get("auth") ?? defaultAuthMode(metastore);
  if (auth !== "on" && auth !== "off") throw new ConfigError(`--auth must be on or off, got "${auth}"`);
  const unknownQueryParams = get("unknown-query-params") ?? "typos";
  if (unknownQueryParams !== "typos" && unknownQueryParams !== "refuse" && unknownQueryParams !== "ignore")
    throw new ConfigError(
      `--unknown-query-params must be typos, refuse or ignore, got "${unknownQueryParams}"`,
    );
  const loopbackForward = get("loopback-forward") ?? "off";
  if (loopbackForward !== "on" && loopbackForward !== "off")
    throw new ConfigError(`--loopback-forward must be on or off, got "${loopbackForward}"`);
  const defaultAcks = get("default-acks") ?? k.defaultAcks;
  if (defaultAcks !== "auto" && defaultAcks !== "wal" && defaultAcks !== "all")
    throw new ConfigError(`--default-acks must be auto, wal or all, got "${defaultAcks}"`);
  const replication = get("replication") ?? k.replicationDefault;
  if (replication !== "on" && replication !== "off")
    throw new ConfigError(`--replication must be on or off, got "${replication}"`);
  const metricsAuth = get("metrics-auth") ?? auth;
  if (metricsAuth !== "on" && metricsAuth !== "off")
    throw new ConfigError(`--metrics-auth must be on or off, got "${metricsAuth}"`);
  const config: Config = {
    dev,
    http: parseHostPort(
      get("addr") ?? (dev ? `127.0.0.1:${k.httpPortDefault}` : `:${k.httpPortDefault}`),
      "--addr",
    ),
    loopbackForward: loopbackForward === "on",
    cluster: parseHostPort(
      get("cluster-addr") ?? (dev ? `127.0.0.1:${k.clusterPortDefault}` : `:${k.clusterPortDefault}`),
      "--cluster-addr",
    ),
    dataDir: get("data-dir") ?? (dev ? "./data" : "/var/lib/narad"),
    nodeId: get("node-id") ?? hostname,
    logLevel,
    metastore,
    clusterName: get("cluster-name") ?? "",
    clusterUid: get("cluster-uid") ?? "",
    namespace: get("namespace") ?? defaultNamespace(env, namespaceFile),
    drainTimeoutMs: count("drain-timeout-ms", k.drainTimeoutMs),
    acksAllTimeoutMs: positiveCount("acks-all-timeout-ms", k.acksAllTimeoutMs),
    defaultAcks,
    producerFenceLeaseMs: positiveCount("producer-fence-lease-ms", k.producerFenceLeaseMs),
    usersMaxStalenessMs: positiveCount("users-max-staleness-ms", k.usersMaxStalenessMs),
    usersPollMs: k.usersPollMs,
    usersRequestTimeoutMs: k.usersRequestTimeoutMs,
    unknownQueryParams,
    produceMaxBodyBytes: maxBody,
    batchMaxBodyBytes: Math.max(k.batchProduceMaxBodyBytes, maxBody),
    admission: {
      budgetBytes: count("produce-memory-budget", k.admissionBudgetBytes),
      timeoutMs: count("admission-timeout-ms", k.admissionWaitMs),
    },
    rateLimits: {
      topic: bucketLimit(get("topic-rate-limit"), get("topic-rate-burst"), "--topic-rate"),
      client: bucketLimit(get("client-rate-limit"), get("client-rate-burst"), "--client-rate"),
    },
    wal: {
      segmentBytes: count("wal-segment-bytes", k.walSegmentBytes),
      rotateDispatchedBytes: k.walRotateDispatchedBytes,
      maxRecordBytes: k.walMaxRecordBytes,
      maxGroupBytes: k.walMaxGroupBytes,
      syncBackstopMs: count("wal-sync-backstop-ms", k.walSyncBackstopMs),
    },
    log: {
      segmentBytes: count("log-segment-bytes", k.logSegmentBytes),
      indexIntervalBytes: k.logIndexIntervalBytes,
      maxFrameBytes: k.logMaxFrameBytes,
      retentionCheckIntervalMs: count("retention-check-interval-ms", k.retentionCheckIntervalMs),
    },
    dispatch: {
      idlePollMs: count("dispatch-idle-poll-ms", k.dispatchIdlePollMs),
      windowRecords: count("dispatch-window-records", k.dispatchWindowRecords),
      windowCapRecords: k.dispatchWindowCapRecords,
      targetPerPartition: k.dispatchTargetPerPartition,
      lookaheadWindows: count("dispatch-lookahead-windows", k.dispatchLookaheadWindows),
      rerouteAfterPasses: k.dispatchRerouteAfterPasses,
      commitTimeoutMs: count("dispatch-commit-timeout-ms", k.dispatchCommitTimeoutMs),
      inDoubtHoldMs: count("dispatch-in-doubt-hold-ms", k.dispatchInDoubtHoldMs),
      errorBackoffMs: k.dispatchErrorBackoffMs,
      commitFanout: k.dispatchCommitFanout,
      maxBatchBytes: k.dispatchMaxBatchBytes,
      maxPassBytes: count("dispatch-max-pass-bytes", k.dispatchMaxBatchBytes * k.dispatchCommitFanout),
    },
    replica: {
      lagMs: count("replica-lag-ms", k.replicaLagMs),
      commitTimeoutMs: count("replica-commit-timeout-ms", k.replicaCommitTimeoutMs),
      isrCheckIntervalMs: k.replicaIsrCheckIntervalMs,
      isrRetryMs: k.replicaIsrRetryMs,
      fetchMaxBytes: k.replicaFetchMaxBytes,
      fetchMaxWaitMs: k.replicaFetchMaxWaitMs,
      retryBackoffMs: k.replicaRetryBackoffMs,
      frontierRefreshMs: k.replicaFrontierRefreshMs,
      checkpointIntervalMs: k.replicaCheckpointIntervalMs,
    },
    topicDefaults: {
      partitions: count("topic-partitions", k.topicPartitionsDefault),
      partitionsMin: k.topicPartitionsMin,
      partitionsMax: count("topic-max-partitions", k.topicPartitionsMax),
      retentionMs: count("topic-retention-ms", k.topicRetentionMsDefault),
      visibilityTimeoutMs: count("topic-visibility-timeout-ms", k.topicVisibilityTimeoutMsDefault),
      maxInFlight: count("topic-max-in-flight", k.topicMaxInFlightDefault),
      maxAckedAhead: count("topic-max-acked-ahead", k.topicMaxAckedAheadDefault),
      namePattern: topicNamePattern,
      groupNamePattern,
    },
    consume: {
      maxWaitMs: durationSetting(get("max-consume-wait"), k.consumeMaxWaitMs, "--max-consume-wait"),
    },
    read: { maxRecords: k.readMaxRecords, maxBytes: k.readMaxBytes },
    security: {
      auth,
      authFile: get("auth-file") || undefined,
      clusterSecretFile: get("cluster-secret-file") || undefined,
      tlsDir: get("tls-dir") || undefined,
      clusterTlsDir: get("cluster-tls-dir") || undefined,
      metricsAuth: metricsAuth === "on",
    },
    limits: {
      batchMaxRecords: count("batch-max-records", k.batchMaxRecords),
      maxTopics: count("max-topics", k.maxTopics),
      maxPartitions: count("max-partitions", k.maxPartitions),
      maxOpenLogs: count("max-open-logs", k.maxOpenLogs),
      maxSegmentFds: positiveCount("max-segment-fds", k.maxSegmentFds),
      headersTimeoutMs: count("headers-timeout-ms", k.headersTimeoutMs),
      requestTimeoutMs: count("request-timeout-ms", k.requestTimeoutMs),
      idleTimeoutMs: count("idle-timeout-ms", k.idleTimeoutMs),
      bodyMinBytesPerSecond: count("body-min-rate", k.bodyMinBytesPerSecond),
      bodyGraceMs: count("body-grace-ms", k.bodyGraceMs),
      loginFreeAttempts: count("login-free-attempts", k.loginFreeAttempts),
      loginIntervalMs: count("login-interval-ms", k.loginIntervalMs),
      hashConcurrency: count("hash-concurrency", k.hashConcurrency),
      hashMaxQueued: count("hash-max-queued", k.hashMaxQueued),
      maxNamedProducers: count("max-named-producers", k.maxNamedProducers),
    },
    replication,
  };
  if (config.producerFenceLeaseMs > k.producerFenceLeaseMaxMs)
    throw new ConfigError(
      `--producer-fence-lease-ms must be at most ${k.producerFenceLeaseMaxMs} (a re-init waits about that long for a broker that does not answer)`,
    );
  if (
    config.usersMaxStalenessMs < k.usersMaxStalenessMinMs ||
    config.usersMaxStalenessMs > k.usersMaxStalenessMaxMs
  )
    throw new ConfigError(
      `--users-max-staleness-ms must be ${k.usersMaxStalenessMinMs}-${k.usersMaxStalenessMaxMs} (the Secret is read every ${k.usersPollMs} ms)`,
    );
  if (config.limits.headersTimeoutMs > config.limits.requestTimeoutMs)
    throw new ConfigError("--headers-timeout-ms must not exceed --request-timeout-ms");
  for (const [name, v] of Object.entries(config.limits)) {
    if (
      !["bodyMinBytesPerSecond", "bodyGraceMs", "loginFreeAttempts", "hashMaxQueued"].includes(name) &&
      v < 1
    )
      throw new ConfigError(`limit ${name} must be at least 1`);
  }
  if (config.nodeId === "") throw new ConfigError("--node-id must not be empty");
  if (config.metastore === "kubernetes" && config.clusterName === "") {
    throw new ConfigError("--metastore kubernetes needs --cluster-name (NARAD_CLUSTER_NAME)");
  }
  if (auth === "on" && config.metastore === "kubernetes" && config.security.authFile === undefined) {
    throw new ConfigError(
      "--auth on with --metastore kubernetes needs --auth-file (NARAD_AUTH_FILE): the users Secret",
    );
  }
  if (config.admission.budgetBytes < 1) throw new ConfigError("--produce-memory-budget must be at least 1");
  if ((config.dispatch.maxPassBytes ?? 1) < 1)
    throw new ConfigError("--dispatch-max-pass-bytes must be at least 1");
  if (config.dispatch.windowRecords < 1 || config.dispatch.windowRecords > config.dispatch.windowCapRecords)
    throw new ConfigError(
      `--dispatch-window-records must be between 1 and ${config.dispatch.windowCapRecords}`,
    );
  if (config.admission.timeoutMs < 1) throw new ConfigError("--admission-timeout-ms must be at least 1");
  if (maxBody < 1 || maxBody > k.walMaxRecordBytes) {
    throw new ConfigError(`--max-body-bytes must be between 1 and ${k.walMaxRecordBytes}`);
  }
  const td = config.topicDefaults;
  if (td.partitionsMax < k.topicPartitionsMin || td.partitionsMax > k.topicPartitionsCeiling) {
    throw new ConfigError(
      `--topic-max-partitions must be between ${k.topicPartitionsMin} and ${k.topicPartitionsCeiling}`,
    );
  }
  if (td.partitions < k.topicPartitionsMin || td.partitions > td.partitionsMax) {
    throw new ConfigError(
      `--topic-partitions must be between ${k.topicPartitionsMin} and ${td.partitionsMax} (--topic-max-partitions)`,
    );
  }
  for (const [flag, v] of [
    ["--topic-visibility-timeout-ms", td.visibilityTimeoutMs],
    ["--topic-max-in-flight", td.maxInFlight],
    ["--topic-max-acked-ahead", td.maxAckedAhead],
  ] as const) {
    if (v < 1) throw new ConfigError(`${flag} must be at least 1`);
  }
  // A long-poll must end before the idle timeout closes its socket.
  if (config.consume.maxWaitMs >= config.limits.idleTimeoutMs) {
    throw new ConfigError("--max-consume-wait must be below --idle-timeout-ms");
  }
  return Object.freeze(config);
}
