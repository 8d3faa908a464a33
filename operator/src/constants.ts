// Every default, limit and well-known name the operator uses, units last in
// the name. Relations between values are asserted at the bottom, at load.

// --- API identity ---------------------------------------------------------
export const API_GROUP = "narad.dev";
export const API_VERSION = "v1alpha1";
export const API_GROUP_VERSION = `${API_GROUP}/${API_VERSION}`;
export const CLUSTER_KIND = "NaradCluster";
export const CLUSTER_PLURAL = "naradclusters";
export const TOPIC_KIND = "NaradTopic";
export const TOPIC_PLURAL = "naradtopics";
export const USER_KIND = "NaradUser";
export const USER_PLURAL = "naradusers";

/** fieldManager for every server-side apply and status write by the operator. */
export const FIELD_MANAGER = "narad-operator";
/** Events' source.component and reportingController. */
export const EVENT_COMPONENT = "narad-operator";

// --- Labels, annotations, finalizers --------------------------------------
export const LABEL_NAME = "app.kubernetes.io/name";
export const LABEL_INSTANCE = "app.kubernetes.io/instance";
export const LABEL_MANAGED_BY = "app.kubernetes.io/managed-by";
export const LABEL_COMPONENT = "app.kubernetes.io/component";
/** Maps owned pods/StatefulSets back to their NaradCluster without an ownerReference walk. */
export const LABEL_CLUSTER = "narad.dev/cluster";
/** On Services: "client" or "headless", so a ServiceMonitor can pick the client one only. */
export const LABEL_SERVICE_ROLE = "narad.dev/service";
export const APP_NAME = "narad";
export const MANAGED_BY = "narad-operator";
export const COMPONENT_BROKER = "broker";
/** Hash of the ConfigMap data, on the pod template: a config change changes the template. */
export const ANNOTATION_CONFIG_HASH = "narad.dev/config-hash";
/**
 * On every owned object: hash of the desired object last applied. A reconcile
 * skips the write when it matches and the live object shows no drift; a
 * removed field changes the hash, which a field-by-field check cannot see.
 */
export const ANNOTATION_APPLIED_HASH = "narad.dev/applied-hash";
/**
 * On a NaradCluster: any new value (e.g. `kubectl annotate naradcluster x
 * narad.dev/restartedAt=$(date -u +%FT%TZ) --overwrite`) is copied onto the
 * pod template, which changes the revision and so rolls every pod.
 */
export const ANNOTATION_RESTARTED_AT = "narad.dev/restartedAt";
/**
 * On a NaradCluster: any new value (e.g. a timestamp) asks for one
 * rebalance of existing partitions over the Active members, even when
 * spec.rebalance is false. status.scale.rebalanceHandled records it.
 */
export const ANNOTATION_REBALANCE = "narad.dev/rebalance";
/** Set on a NaradTopic until every member confirmed its local data is gone. */
export const FINALIZER_TOPIC_DATA = "narad.dev/topic-data";
/**
 * On a NaradTopic being deleted: "true" releases its finalizer without the
 * confirmation of members that cannot answer (Down, no pod, unreachable).
 * Their local files of the topic stay on their volumes (see
 * docs/failure-handling.md before reusing the topic name).
 */
export const ANNOTATION_FORCE_DELETE = "narad.dev/force-delete";
/** Set on a NaradUser the operator wrote into the API users Secret, until its entry is removed. */
export const FINALIZER_USER = "narad.dev/user";
/** On a NaradUser: "api" marks a mirror of a user created through the Users API (docs/users.md). */
export const ANNOTATION_USER_MANAGED_BY = "narad.dev/managed-by";
/** On a mirrored NaradUser: the grants last synced both ways (canonical JSON), the base of the 3-way merge. */
export const ANNOTATION_SYNCED_GRANTS = "narad.dev/synced-grants";
/** How often the API users Secret of each cluster is read for users to mirror as NaradUsers. */
export const USER_MIRROR_INTERVAL_MS = 5_000;
/** Attempts of one users-Secret write against the brokers' writes (409 on resourceVersion). */
export const USER_WRITE_ATTEMPTS = 10;
/** A topic deletion still waiting on members after this long reports Degraded (DeletionBlocked). */
export const TOPIC_DELETE_BLOCKED_AFTER_MS = 10 * 60_000;

// --- Broker pod contract ---------------------------------------------------
export const BROKER_CONTAINER_NAME = "narad";
export const BROKER_HTTP_PORT = 7942;
export const BROKER_CLUSTER_PORT = 7943;
export const BROKER_HTTP_PORT_NAME = "http";
export const BROKER_CLUSTER_PORT_NAME = "cluster";
export const BROKER_CONFIG_DIR = "/etc/narad";
export const BROKER_CONFIG_FILE = "narad.json";
export const BROKER_DATA_MOUNT = "/var/lib/narad";
export const BROKER_DATA_DIR = "/var/lib/narad/data";
export const BROKER_DATA_VOLUME = "data";
export const BROKER_CONFIG_VOLUME = "config";
export const BROKER_USER_ID = 10001;
// Security Secrets, mounted read-only outside /etc/narad (the config mount is
// read-only, so nothing can be created under it).
export const BROKER_USERS_VOLUME = "users";
export const BROKER_USERS_DIR = "/var/run/secrets/narad/users";
export const BROKER_USERS_KEY = "users.json";
export const BROKER_CLUSTER_SECRET_VOLUME = "cluster-secret";
export const BROKER_CLUSTER_SECRET_DIR = "/var/run/secrets/narad/cluster";
export const BROKER_CLUSTER_SECRET_KEY = "secret";
export const BROKER_TLS_VOLUME = "tls";
export const BROKER_TLS_DIR = "/var/run/secrets/narad/tls";
/** The root user of an operator-created users Secret. */
export const USERS_ADMIN_NAME = "admin";
/** Random bytes behind generated passwords and the cluster secret. */
export const GENERATED_SECRET_BYTES = 32;
/** How long the operator reuses a cluster secret it read, before reading it again. */
export const CLUSTER_SECRET_CACHE_MS = 30_000;
/** How often a reconcile re-checks (GET) that a cluster's Secrets still exist. */
export const SECRET_RECHECK_MS = 60_000;
export const BROKER_STARTUP_PROBE_FAILURE_THRESHOLD = 30;
export const BROKER_STARTUP_PROBE_PERIOD_SECONDS = 2;
export const BROKER_LIVENESS_PROBE_PERIOD_SECONDS = 10;
export const BROKER_READINESS_PROBE_PERIOD_SECONDS = 2;
/** Grace beyond the broker's own drain timeout before the kubelet SIGKILLs. */
export const TERMINATION_GRACE_EXTRA_SECONDS = 15;
export const PDB_MAX_UNAVAILABLE = 1;

// --- Broker admin client ---------------------------------------------------
export const BROKER_ADMIN_TIMEOUT_MS = 5_000;

// --- Drained rolling restart ----------------------------------------------------
/** Reconcile this often while a roll waits (brokers see member changes within ~2 s). */
export const ROLL_REQUEUE_MS = 2_000;
/** Sooner after a roll action, to take the next step promptly. */
export const ROLL_ACTION_REQUEUE_MS = 500;
/** How long one drain request waits on the broker for its WAL to empty (a reconcile holds a worker meanwhile). */
export const ROLL_DRAIN_WAIT_MS = 2_000;
/**
 * How long a planned restart waits, from status.roll.startedAt, for the
 * leadership of the replicated partitions its pod leads to move to another
 * in-sync replica (the topic reconciles do it once the member is in
 * Maintenance, within a second when the API server is healthy); past it the
 * drain goes on and the partitions left stay led by the restarting broker.
 */
export const ROLL_HANDOFF_TIMEOUT_MS = 30_000;
/** Bound on the admin status call for the pod in flight. */
export const ROLL_STATUS_TIMEOUT_MS = 2_000;
/**
 * Bound on the admin status call the status step makes to every member: the
 * WAL count for Ready ones, and the broker-side evidence a Down needs for
 * the others (plan/members.ts).
 */
export const STATUS_WAL_TIMEOUT_MS = 1_500;
/**
 * After an informer recovers from watch errors (an API outage, a brownout),
 * pod readiness in the cache is not believed for Down decisions for this
 * long: the node lifecycle controller may have flipped pods to not Ready for
 * missed heartbeats, and kubelets restore them only on their next status
 * sync (plan/observation.ts).
 */
export const OBSERVATION_SETTLE_MS = 60_000;
/** Partition moves in flight at once per cluster (each one copies a partition). */
export const SCALE_MAX_MOVES = 2;
/** Cap on the doubled backoff before an aborted move's partition is moved again. */
export const MOVE_RETRY_BACKOFF_MAX_MS = 10 * 60_000;
/** Requeue while a decommission or rebalance runs. */
export const SCALE_REQUEUE_MS = 1_000;
/** Bound on one move/status call to a broker during scaling. */
export const SCALE_BROKER_TIMEOUT_MS = 2_000;

// --- Work queue ------------------------------------------------------------
export const QUEUE_BACKOFF_BASE_MS = 100;
export const QUEUE_BACKOFF_MAX_MS = 60_000;
/** Bound on distinct keys waiting; beyond it adds are dropped (and logged) — a resync re-adds them. */
export const QUEUE_MAX_KEYS = 10_000;
export const QUEUE_WORKERS = 2;
/** Full resync: every cached cluster and topic is requeued this often. */
export const RESYNC_INTERVAL_MS = 60_000;

// --- Requeue delays used by reconcile steps --------------------------------
/** While pods start or a member is not yet Active. */
export const REQUEUE_PROGRESSING_MS = 5_000;
/** While a topic's data deletion waits on members. */
export const REQUEUE_TOPIC_DELETE_MS = 5_000;
/** After a status write lost a resourceVersion race with our own previous write. */
export const STATUS_CONFLICT_REQUEUE_MS = 250;
/** While the informer caches have not listed yet (just after start or a leadership change). */
export const UNSYNCED_REQUEUE_MS = 1_000;
/** While waiting for something external (cluster missing, no Active member). */
export const REQUEUE_WAITING_MS = 15_000;
/**
 * A replicated topic with an offline or under-replicated partition, or a
 * reassignment in flight, is reconciled again this often (besides every
 * membership change and every change of the topic, ISR writes included).
 */
export const REPLICATION_RECHECK_MS = 5_000;
/** Preferred-leader balance: at most this many leadership moves per topic per reconcile. */
export const PREFERRED_LEADER_MAX_PER_PASS = 4;
/**
 * Preferred-leader balance: the preferred replica must have been able to
 * lead (Active, in the ISR on its volume) for this long, as this operator
 * observed it, before leadership returns to it, so a broker that just came
 * back, or flaps, does not pull leadership back and forth.
 */
export const PREFERRED_LEADER_SETTLE_MS = 10_000;
/** A replicated topic waiting for brokers (fewer eligible than its factor, volume ids not known yet). */
export const REPLICATION_WAITING_MS = 2_000;
/** Compare-and-swap attempts of a topic status write within one reconcile (re-read live on each conflict). */
export const TOPIC_STATUS_CAS_ATTEMPTS = 3;
/** How long a node's zone label is cached. */
export const NODE_ZONE_CACHE_MS = 5 * 60_000;

// --- Informers -------------------------------------------------------------
export const INFORMER_RESTART_BASE_MS = 500;
export const INFORMER_RESTART_MAX_MS = 30_000;

// --- Leader election ---------------------------------------------------------
export const LEASE_NAME = "narad-operator";
export const LEASE_DURATION_MS = 15_000;
export const LEASE_RENEW_DEADLINE_MS = 10_000;
export const LEASE_RETRY_PERIOD_MS = 2_000;

// --- Events ----------------------------------------------------------------
/** Distinct (object, reason, message) entries remembered for count aggregation. */
export const EVENT_CACHE_MAX_ENTRIES = 4_096;

// --- Runtime ---------------------------------------------------------------
export const DEFAULT_OPERATOR_ADDR = "0.0.0.0:8080";
export const DEFAULT_OPERATOR_NAMESPACE = "narad-system";
export const SHUTDOWN_TIMEOUT_MS = 10_000;

// --- Relations ---------------------------------------------------------------
// A leader must get a renewal through before its lease can be taken, and must
// retry several times inside the renew deadline.
assert(LEASE_RENEW_DEADLINE_MS < LEASE_DURATION_MS, "renew deadline must be shorter than the lease");
assert(LEASE_RETRY_PERIOD_MS * 2 <= LEASE_RENEW_DEADLINE_MS, "at least two retries per renew deadline");
assert(QUEUE_BACKOFF_BASE_MS < QUEUE_BACKOFF_MAX_MS, "queue backoff base below its cap");
assert(INFORMER_RESTART_BASE_MS < INFORMER_RESTART_MAX_MS, "informer backoff base below its cap");

function assert(ok: boolean, what: string): void {
  if (!ok) throw new Error(`operator constants: ${what}`);
}
