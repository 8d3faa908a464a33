// OpenAPI v3 (structural) schemas for narad.dev/v1alpha1, the source of the
// CRDs in crds/. Every property carries a description so `kubectl explain`
// helps; defaults come from defaults.ts so the API server and the controller
// agree. Core Kubernetes types (affinity, tolerations, ...) are
// preserve-unknown-fields objects: inlining the whole core schema would bloat
// the CRD and pin it to one Kubernetes version; the API server validates them
// again when the operator copies them into the StatefulSet.

import {
  clusterDefaults,
  TOPIC_FANOUT_DELAY_MAX_MS,
  TOPIC_NAME_PATTERN,
  TOPIC_PARTITIONS_MAX,
  TOPIC_PARTITIONS_MIN,
  TOPIC_SUBSCRIPTIONS_MAX,
  topicDefaults,
  USER_GRANT_PATTERN,
  USER_GRANTS_MAX,
  USER_NAME_PATTERN,
  USER_PASSWORD_KEY,
} from "./defaults.ts";
import { MAX_REPLICATION_FACTOR, MIN_REPLICATION_FACTOR } from "./replication.ts";

/** A CEL validation rule (x-kubernetes-validations entry). */
export interface ValidationRule {
  rule: string;
  message: string;
  reason?: "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";
  fieldPath?: string;
}

/** The subset of apiextensions.k8s.io/v1 JSONSchemaProps these CRDs use. */
export interface JSONSchemaProps {
  type?: "object" | "array" | "string" | "integer" | "boolean" | "number";
  format?: "int32" | "int64" | "date-time";
  description?: string;
  properties?: Record<string, JSONSchemaProps>;
  required?: string[];
  items?: JSONSchemaProps;
  additionalProperties?: JSONSchemaProps;
  anyOf?: JSONSchemaProps[];
  enum?: (string | number | boolean)[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-map-type"?: "atomic" | "granular";
  "x-kubernetes-validations"?: ValidationRule[];
  nullable?: boolean;
}

type Extra = Omit<JSONSchemaProps, "type" | "description" | "properties">;

const str = (description: string, extra: Extra = {}): JSONSchemaProps => ({
  type: "string",
  description,
  ...extra,
});
const int = (description: string, extra: Extra = {}): JSONSchemaProps => ({
  type: "integer",
  format: "int32",
  description,
  ...extra,
});
const int64 = (description: string, extra: Extra = {}): JSONSchemaProps => ({
  type: "integer",
  format: "int64",
  description,
  ...extra,
});
const bool = (description: string, extra: Extra = {}): JSONSchemaProps => ({
  type: "boolean",
  description,
  ...extra,
});
const obj = (
  description: string,
  properties: Record<string, JSONSchemaProps>,
  extra: Extra = {},
): JSONSchemaProps => ({ type: "object", description, properties, ...extra });
const arr = (description: string, items: JSONSchemaProps, extra: Extra = {}): JSONSchemaProps => ({
  type: "array",
  description,
  items,
  ...extra,
});
const stringMap = (description: string): JSONSchemaProps => ({
  type: "object",
  description,
  additionalProperties: { type: "string" },
});
/** A core Kubernetes object kept opaque here (validated by the API server when copied into a pod). */
const coreObject = (description: string): JSONSchemaProps => ({
  type: "object",
  description,
  "x-kubernetes-preserve-unknown-fields": true,
});
const timestamp = (description: string): JSONSchemaProps => ({
  type: "string",
  format: "date-time",
  description,
});

/** Kubernetes resource.Quantity syntax (same pattern the core API publishes). */
export const QUANTITY_PATTERN =
  "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$";

const quantity = (description: string): JSONSchemaProps => ({
  description,
  anyOf: [{ type: "integer" }, { type: "string" }],
  pattern: QUANTITY_PATTERN,
  "x-kubernetes-int-or-string": true,
});

/** A Secret name in the NaradCluster's namespace (a DNS subdomain). */
const secretName = (description: string): JSONSchemaProps =>
  str(description, {
    minLength: 1,
    maxLength: 253,
    pattern: "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
  });

/** metav1.Condition. */
const conditions = (types: string): JSONSchemaProps =>
  arr(
    `Latest observations of the object's state (metav1.Condition). Types: ${types}.`,
    obj(
      "A condition, as metav1.Condition.",
      {
        type: str(`Condition type: ${types}.`, { maxLength: 316 }),
        status: str("True, False or Unknown.", { enum: ["True", "False", "Unknown"] }),
        observedGeneration: int64("metadata.generation the condition was computed from.", { minimum: 0 }),
        lastTransitionTime: timestamp("When the condition last changed status."),
        reason: str("CamelCase machine-readable reason for the last transition.", { maxLength: 1024 }),
        message: str("Human-readable detail about the last transition.", { maxLength: 32768 }),
      },
      { required: ["type", "status", "lastTransitionTime", "reason", "message"] },
    ),
    { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] },
  );

// ---------------------------------------------------------------- NaradCluster

const d = clusterDefaults;

const clusterSpec: JSONSchemaProps = obj(
  "Desired state of a Narad broker cluster. Every field is optional; `spec: {replicas: 3}` is a complete cluster.",
  {
    replicas: int(
      "Number of brokers. Scale-down decommissions the highest ordinal first (moves its partitions, drains its WAL).",
      {
        default: d.replicas,
        minimum: 1,
      },
    ),
    // No default here: the API server would write it into every object, and
    // the operator's own setting (NARAD_OPERATOR_BROKER_IMAGE, chart value
    // brokerImage) could never apply. The operator resolves it: spec.image,
    // else its setting, else DEFAULT_BROKER_IMAGE.
    image: str(
      "Broker container image. Unset: the operator's brokerImage setting (NARAD_OPERATOR_BROKER_IMAGE), else its built-in default; clusters that leave it unset follow an operator upgrade.",
      { minLength: 1 },
    ),
    imagePullPolicy: str("Image pull policy for the broker container.", {
      enum: ["Always", "IfNotPresent", "Never"],
    }),
    imagePullSecrets: arr(
      "Secrets for pulling the broker image (core LocalObjectReference list).",
      obj(
        "Reference to a Secret in the same namespace.",
        { name: str("Secret name.") },
        { required: ["name"] },
      ),
    ),
    resources: obj("Compute resources of the broker container (core ResourceRequirements).", {
      limits: {
        type: "object",
        description: 'Maximum resources, e.g. cpu: "2", memory: 4Gi.',
        additionalProperties: quantity("A resource quantity."),
      },
      requests: {
        type: "object",
        description: "Requested resources; the scheduler reserves these.",
        additionalProperties: quantity("A resource quantity."),
      },
      claims: arr(
        "Dynamic resource claims used by the container (DynamicResourceAllocation).",
        obj(
          "A resource claim reference.",
          {
            name: str("Name of an entry in the pod's resourceClaims."),
            request: str("Name of the request within the claim."),
          },
          { required: ["name"] },
        ),
        { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
      ),
    }),
    storage: obj(
      "The per-broker PersistentVolumeClaim holding the ingress WAL and partition logs.",
      {
        size: str(
          "Requested PVC size (a resource quantity). Growing it expands PVCs when the StorageClass allows.",
          {
            default: d.storageSize,
            pattern: QUANTITY_PATTERN,
          },
        ),
        storageClassName: str(
          "StorageClass for the PVCs; unset uses the cluster default. Immutable once set.",
          {
            maxLength: 253,
          },
        ),
        reclaimPolicy: obj(
          "What happens to broker PVCs when they are no longer used.",
          {
            whenScaled: str("On scale-down, Retain keeps the removed member's PVC, Delete removes it.", {
              enum: ["Retain", "Delete"],
              default: d.reclaimWhenScaled,
            }),
            whenDeleted: str("On NaradCluster deletion, Retain keeps all PVCs, Delete removes them.", {
              enum: ["Retain", "Delete"],
              default: d.reclaimWhenDeleted,
            }),
          },
          { default: {} },
        ),
      },
      { default: {} },
    ),
    broker: obj(
      "Broker tuning, written to the broker's config file. Unset fields keep the broker's built-in defaults.",
      {
        logLevel: str("Broker log level (config key logLevel).", {
          enum: ["trace", "debug", "info", "warn", "error", "fatal", "silent"],
          default: d.brokerLogLevel,
        }),
        wal: obj("Ingress write-ahead log.", {
          segmentBytes: int64("WAL segment size in bytes (config key walSegmentBytes).", { minimum: 1 }),
          syncBackstopMs: int(
            "Longest a group commit waits before fsync, in milliseconds (config key walSyncBackstopMs).",
            { minimum: 0 },
          ),
        }),
        dispatch: obj("Dispatch of WAL records to partition owners.", {
          idlePollMs: int(
            "Poll interval when the WAL is idle, in milliseconds (config key dispatchIdlePollMs).",
            {
              minimum: 1,
            },
          ),
          commitTimeoutMs: int(
            "Timeout of one commit RPC to a partition owner, in milliseconds (config key dispatchCommitTimeoutMs).",
            { minimum: 1 },
          ),
        }),
        topicDefaults: obj("Defaults for topics created without explicit settings (e.g. POST /v1/topics).", {
          partitions: int("Partition count (config key topicPartitions).", {
            minimum: TOPIC_PARTITIONS_MIN,
            maximum: TOPIC_PARTITIONS_MAX,
          }),
        }),
        maxBodyBytes: int64("Largest accepted produce request body, in bytes (config key maxBodyBytes).", {
          minimum: 1,
        }),
        retentionCheckIntervalMs: int(
          "How often retention is enforced, in milliseconds (config key retentionCheckIntervalMs).",
          { minimum: 1 },
        ),
        replication: str(
          "Partition replication (config key replication): on lets topics created through the HTTP API take a replication factor above 1 (default 3 on a cluster of at least 3 brokers); off gives them one copy. Unset keeps the broker's default. A NaradTopic applied with a replicationFactor is replicated either way.",
          { enum: ["on", "off"] },
        ),
      },
    ),
    pod: obj("Pod-level settings copied into the broker pod template.", {
      labels: stringMap("Extra labels on broker pods (operator-owned labels win on conflict)."),
      annotations: stringMap("Extra annotations on broker pods."),
      affinity: coreObject("Pod affinity / anti-affinity (core Affinity)."),
      tolerations: arr("Tolerations (core Toleration list).", coreObject("A core Toleration.")),
      nodeSelector: stringMap("Node labels the broker pods must match."),
      topologySpreadConstraints: arr(
        "How broker pods spread across topology domains (core TopologySpreadConstraint list).",
        coreObject("A core TopologySpreadConstraint."),
      ),
      priorityClassName: str("PriorityClass of broker pods."),
      serviceAccountName: str(
        "Run brokers as this existing ServiceAccount instead of the one the operator creates. It needs the same Role (NaradTopic/NaradCluster read access).",
      ),
    }),
    rollout: obj(
      "How configuration changes are rolled out: one pod at a time, each drained first.",
      {
        drainTimeoutSeconds: int(
          "How long a broker may take to drain its WAL before a planned restart; also bounds its SIGTERM drain.",
          { default: d.drainTimeoutSeconds, minimum: 1 },
        ),
        paused: bool("Stop starting new pod restarts; a restart already in flight still finishes.", {
          default: d.paused,
        }),
        force: bool(
          "Skip the WAL-drain gate for restarts (day-2 escape hatch for a broker that cannot drain). Records still in its WAL are delivered after it restarts.",
          { default: d.force },
        ),
        downGraceSeconds: int(
          "How long a pod may be missing or unready, with its broker not answering its admin status, before its member is marked Down and its traffic rerouted. Measured on the operator's clock from its own observations.",
          {
            default: d.downGraceSeconds,
            minimum: 0,
          },
        ),
        replacementTimeoutSeconds: int(
          "How long the replacement pod of a planned restart may stay not Ready before the cluster reports Degraded (ReplacementNotReady) with a Warning Event.",
          { default: d.replacementTimeoutSeconds, minimum: 10 },
        ),
        releaseStuckReplacement: bool(
          "Once a replacement pod is stuck past replacementTimeoutSeconds, stop holding its member in Maintenance so the Down rules apply and its records are rerouted.",
          { default: d.releaseStuckReplacement },
        ),
        gateTimeoutSeconds: int(
          "How long the pod in a planned restart waits for every other broker to be Ready and Active; past it the restart is abandoned: its drain is cancelled and status.roll cleared (condition RollAborted, Warning Event).",
          { default: d.gateTimeoutSeconds, minimum: 1 },
        ),
      },
      { default: {} },
    ),
    security: obj(
      "Authentication, cluster RPC secret, TLS and network policy. Secret contents never enter the pod template: brokers re-read the mounted files.",
      {
        auth: obj(
          "Credentials on the brokers' HTTP API (/healthz, /readyz and /metrics stay open).",
          {
            enabled: bool("Require credentials (Basic or Bearer) on /v1 and /admin/v1.", {
              default: d.authEnabled,
            }),
            usersSecret: secretName(
              "Secret with key users.json (users, passwords, tokens, grants). Unset: the operator creates <cluster>-users with an admin user and a random password when missing.",
            ),
          },
          { default: {} },
        ),
        clusterSecret: secretName(
          "Secret with key secret: the shared secret authenticating cluster RPC and the operator's admin calls. Unset: the operator creates <cluster>-cluster-secret (32 random bytes) when missing.",
        ),
        tls: obj(
          "HTTPS on the brokers' API port, certificates reloaded without a restart.",
          {
            secretName: secretName(
              "A kubernetes.io/tls Secret (tls.crt, tls.key; ca.crt, when present, is what the operator trusts).",
            ),
          },
          { required: ["secretName"] },
        ),
        networkPolicy: obj(
          "A networking.k8s.io/v1 NetworkPolicy for the broker pods: the API port from allowFrom peers, the cluster port only from the cluster's own brokers.",
          {
            enabled: bool("Create the NetworkPolicy.", { default: d.networkPolicyEnabled }),
            allowFrom: arr(
              "Peers (NetworkPolicyPeer) allowed on the API port 7942; empty allows any peer. Include the operator's pods.",
              coreObject("A NetworkPolicyPeer (podSelector, namespaceSelector, ipBlock)."),
            ),
          },
          { default: {} },
        ),
      },
      { default: {} },
    ),
    metrics: obj(
      "Prometheus integration.",
      {
        serviceMonitor: obj(
          "A monitoring.coreos.com/v1 ServiceMonitor for the brokers (needs the Prometheus Operator CRDs).",
          {
            enabled: bool("Create the ServiceMonitor.", { default: d.serviceMonitorEnabled }),
            interval: str("Scrape interval, e.g. 30s; unset uses Prometheus' default.", {
              pattern: "^([0-9]+(ms|s|m|h))+$",
            }),
            labels: stringMap(
              "Extra labels on the ServiceMonitor, e.g. to match a Prometheus serviceMonitorSelector.",
            ),
          },
          { default: {} },
        ),
        podMonitor: obj(
          "A monitoring.coreos.com/v1 PodMonitor over the broker pods (needs the Prometheus Operator CRDs), for Prometheus setups that select PodMonitors.",
          {
            enabled: bool("Create the PodMonitor.", { default: d.podMonitorEnabled }),
            interval: str("Scrape interval, e.g. 30s; unset uses Prometheus' default.", {
              pattern: "^([0-9]+(ms|s|m|h))+$",
            }),
            labels: stringMap(
              "Extra labels on the PodMonitor, e.g. to match a Prometheus podMonitorSelector.",
            ),
          },
          { default: {} },
        ),
      },
      { default: {} },
    ),
    rebalance: bool(
      "Move existing partitions onto newly added members after a scale-up (opt-in; new topics always use all members).",
      {
        default: d.rebalance,
      },
    ),
    moves: obj(
      "Partition moves (scale-down, rebalance).",
      {
        stallTimeoutSeconds: int(
          "How long a move may go without progress on its destination before it is aborted (cancelled there, so the source unfreezes; condition Degraded MoveStuck, Warning Event) and retried later. A move past its owner swap is never aborted, only reported.",
          { default: d.moveStallTimeoutSeconds, minimum: 10 },
        ),
        retryBackoffSeconds: int(
          "Wait before an aborted move's partition is moved again; doubles with each abort of it, up to 10 minutes.",
          { default: d.moveRetryBackoffSeconds, minimum: 1 },
        ),
      },
      { default: {} },
    ),
  },
  {
    default: {},
    "x-kubernetes-validations": [
      {
        // On spec, not on storage: storage itself may be dropped from a manifest.
        rule: "!has(oldSelf.storage) || !has(oldSelf.storage.storageClassName) || (has(self.storage) && has(self.storage.storageClassName) && self.storage.storageClassName == oldSelf.storage.storageClassName)",
        message: "storage.storageClassName is immutable once set",
        fieldPath: ".storage.storageClassName",
      },
    ],
  },
);

const memberStatus = obj(
  "One broker as a cluster member.",
  {
    id: str("Member id; equals the pod name."),
    pod: str("Pod name."),
    ordinal: int("StatefulSet ordinal.", { minimum: 0 }),
    address: str("Broker address, podIP:7942 (HTTP/admin port); absent while the pod has no IP."),
    state: str(
      "Joining, Active, Maintenance (planned restart: records held), Down (rerouted), Decommissioning, Removed.",
      {
        enum: ["Joining", "Active", "Maintenance", "Down", "Decommissioning", "Removed"],
      },
    ),
    since: timestamp("When the member entered its current state."),
    walPendingRecords: int64("WAL records not yet dispatched, as last reported by the broker.", {
      minimum: 0,
    }),
    revision: str("Revision (pod-template hash) the member's pod runs."),
    volumeId: str(
      "Identity of the data volume the broker runs on (its volume-id marker). A new value means the member came back on an empty or foreign volume.",
    ),
    failedSince: timestamp(
      "A Decommissioning or Maintenance member (whose state the decommission or the roll holds) whose pod is not Ready and whose broker failed its admin status for the Down grace: it keeps its state, but replicated partitions elect around it as around a Down member.",
    ),
  },
  { required: ["id", "pod", "ordinal", "state", "since"] },
);

const clusterStatus = obj("Observed state, written by the operator.", {
  observedGeneration: int64("metadata.generation this status reflects.", { minimum: 0 }),
  phase: str("Summary: Pending, Creating, Running, Rolling, Scaling, Degraded or Failed.", {
    enum: ["Pending", "Creating", "Running", "Rolling", "Scaling", "Degraded", "Failed"],
  }),
  replicas: int("Broker pods that exist.", { minimum: 0 }),
  readyReplicas: int("Broker pods that are Ready.", { minimum: 0 }),
  conditions: conditions("Ready, Progressing, Degraded, Stable"),
  members: arr("Cluster membership, written only by the operator; brokers route by it.", memberStatus, {
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["id"],
  }),
  membershipEpoch: int64("Bumped on every membership change.", { minimum: 0 }),
  currentRevision: str("Revision most pods run."),
  updateRevision: str("Revision the spec asks for."),
  roll: obj(
    "The planned restart in flight (at most one pod at a time).",
    {
      podInFlight: str("Pod being restarted."),
      startedAt: timestamp("When this restart began."),
      reason: str("Why the pod is being restarted."),
      podReadyAtStart: bool("Whether the pod was Ready when the roll named it."),
      podUid: str("uid of the pod the roll named."),
      gateBlockedSince: timestamp("Since when the other brokers keep this restart from going on."),
      handoffDoneAt: timestamp(
        "When leadership of the replicated partitions the pod led was moved off it (or the wait for that ended); the drain starts after it.",
      ),
      leadersKept: arr(
        "Replicated partitions (topic/partition) still led by the pod when the handoff ended: no other in-sync replica could lead, or the wait timed out.",
        str("topic/partition"),
      ),
    },
    { required: ["podInFlight", "startedAt", "reason"] },
  ),
  selector: str("Label selector of the broker pods, for the scale subresource."),
  scale: obj("Scale-down and rebalance progress (resumed by a restarted operator).", {
    decommissioning: str("Member being decommissioned."),
    moves: arr(
      "Partition moves in flight.",
      obj(
        "One partition being moved; the destination broker runs the copy.",
        {
          topic: str("NaradTopic name."),
          partition: int("Partition.", { minimum: 0 }),
          from: str("Source member id."),
          to: str("Destination member id."),
          startedAt: timestamp("When the move was planned."),
          state: str("Last state the destination reported.", {
            enum: ["pending", "copying", "ready", "done", "failed", "cancelled"],
          }),
          progressAt: timestamp("When the destination last showed progress."),
          progressMark: str("The progress last seen (state and byte counts)."),
          aborting: obj(
            "The move is being aborted; the cancel is repeated until the destination confirms it.",
            {
              reason: str("Why it is aborted."),
              stalled: bool(
                "Aborted for a stall (retried after a backoff), not for a cancelled decommission.",
              ),
              since: timestamp("When the abort began."),
              attempts: int("Cancels sent so far.", { minimum: 0 }),
              lastError: str("Why the destination has not confirmed the cancel yet."),
            },
            { required: ["reason", "stalled", "since", "attempts"] },
          ),
          stuckSince: timestamp(
            "Past the owner swap: since when the destination has not installed the copy.",
          ),
        },
        { required: ["topic", "partition", "from", "to", "startedAt", "state"] },
      ),
    ),
    movesDone: int64("Moves finished since this scale or rebalance began.", { minimum: 0 }),
    refusingProduceSince: timestamp(
      "When the decommissioning member was first seen refusing produce while owning nothing.",
    ),
    rebalanceHandled: str("Value of the narad.dev/rebalance annotation last carried out."),
    moveRetries: arr(
      "Partitions whose move was aborted, waiting out a backoff before they are moved again.",
      obj(
        "One aborted partition move.",
        {
          topic: str("NaradTopic name."),
          partition: int("Partition.", { minimum: 0 }),
          attempts: int("Aborts so far.", { minimum: 1 }),
          notBefore: timestamp("Not moved again before this time."),
          avoid: str("The destination that stalled."),
          reason: str("Why the last move was aborted."),
        },
        { required: ["topic", "partition", "attempts", "notBefore", "avoid", "reason"] },
      ),
    ),
  }),
  drainCancel: obj(
    "An abandoned restart whose drain cancel is not confirmed yet (retried every pass).",
    {
      pod: str("The pod whose drain is being cancelled."),
      since: timestamp("When the restart was abandoned."),
      attempts: int("Cancels sent so far.", { minimum: 0 }),
      lastError: str("The last cancel's failure."),
    },
    { required: ["pod", "since", "attempts"] },
  ),
});

export const naradClusterSchema: JSONSchemaProps = obj(
  "A Narad broker cluster: a StatefulSet of brokers with their Services, RBAC, ConfigMap and PodDisruptionBudget.",
  {
    apiVersion: str("Versioned schema of this object (narad.dev/v1alpha1)."),
    kind: str("NaradCluster."),
    // Only `type` is allowed here: the API server owns the metadata schema.
    metadata: { type: "object" },
    spec: clusterSpec,
    status: clusterStatus,
  },
);

// ---------------------------------------------------------------- NaradTopic

const td = topicDefaults;

const topicSpec: JSONSchemaProps = obj(
  "Desired state of a topic. The topic's name is spec.name if set, else metadata.name.",
  {
    cluster: str("Name of the NaradCluster (same namespace) that serves this topic. Immutable.", {
      minLength: 1,
      maxLength: 253,
      "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "cluster is immutable" }],
    }),
    name: str(
      "Topic name as clients use it, when it must differ from metadata.name (Kubernetes names are lowercase; topic names may use A-Z). Immutable.",
      { pattern: TOPIC_NAME_PATTERN, minLength: 1, maxLength: 255 },
    ),
    partitions: int(`Partition count, ${TOPIC_PARTITIONS_MIN}..${TOPIC_PARTITIONS_MAX}. May only increase.`, {
      default: td.partitions,
      minimum: TOPIC_PARTITIONS_MIN,
      maximum: TOPIC_PARTITIONS_MAX,
      "x-kubernetes-validations": [{ rule: "self >= oldSelf", message: "partitions may only increase" }],
    }),
    retentionMs: int64("How long messages are kept, in milliseconds.", {
      default: td.retentionMs,
      minimum: 1,
    }),
    retentionBytes: int64("Largest size kept per partition, in bytes; 0 means unlimited.", {
      default: td.retentionBytes,
      minimum: 0,
    }),
    visibilityTimeoutMs: int(
      "How long a received message stays invisible before redelivery, in milliseconds. Immutable.",
      {
        default: td.visibilityTimeoutMs,
        minimum: 1,
        "x-kubernetes-validations": [
          { rule: "self == oldSelf", message: "visibilityTimeoutMs is immutable" },
        ],
      },
    ),
    maxInFlightPerPartition: int("Most unacknowledged deliveries per partition.", {
      default: td.maxInFlightPerPartition,
      minimum: 1,
    }),
    maxAckedAheadPerPartition: int("Most acknowledged records ahead of the committed cursor per partition.", {
      default: td.maxAckedAheadPerPartition,
      minimum: 1,
    }),
    replicationFactor: int(
      "Copies of each partition, on distinct brokers (docs/replication.md). Default: 3 on a cluster of at least 3 brokers, else 1 (the operator records the value it chose in status.replicationFactor). Immutable.",
      {
        minimum: MIN_REPLICATION_FACTOR,
        maximum: MAX_REPLICATION_FACTOR,
        "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "replicationFactor is immutable" }],
      },
    ),
    minInsyncReplicas: int(
      "Copies an acks=all record needs before it is answered; at most replicationFactor. Default: min(2, replicationFactor).",
      { minimum: 1, maximum: MAX_REPLICATION_FACTOR },
    ),
    subscriptions: arr(
      "Declared consumer groups (named subscriptions), each with its own frontier, in-flight set and settings over the same data. Unset settings inherit the topic's. Consumers of an undeclared group use the topic's settings.",
      obj(
        "One named subscription.",
        {
          name: str("Group name, as consumers pass it in ?group=.", {
            pattern: TOPIC_NAME_PATTERN,
            minLength: 1,
            maxLength: 255,
          }),
          visibilityTimeoutMs: int(
            "How long a message received by this group stays invisible before redelivery, in milliseconds. Default: the topic's visibilityTimeoutMs.",
            { minimum: 1 },
          ),
          maxInFlightPerPartition: int(
            "Most unacknowledged deliveries per partition for this group. Default: the topic's.",
            { minimum: 1 },
          ),
          maxAckedAheadPerPartition: int(
            "Most acknowledged records ahead of this group's committed cursor per partition. Default: the topic's.",
            { minimum: 1 },
          ),
        },
        { required: ["name"] },
      ),
      {
        maxItems: TOPIC_SUBSCRIPTIONS_MAX,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
      },
    ),
    schema: obj(
      "JSON Schema every produced message must match (POST/PATCH /v1/topics `schema`). Changes are additive only and bump the version; the broker checks that, this schema only keeps the version from going back.",
      {
        version: int64("Schema version, from 1; grows by one per change.", { minimum: 1 }),
        definition: str("The JSON Schema document as JSON text.", { minLength: 2 }),
      },
      {
        required: ["version", "definition"],
        "x-kubernetes-validations": [
          { rule: "self.version >= oldSelf.version", message: "schema.version may not decrease" },
        ],
      },
    ),
    parent: str(
      "Fan-out: the topic (its broker name) whose committed records this topic, a child, receives from the attach on. The broker sets it on attach (POST /v1/topics/{parent}/children) and clears it on detach. Set here, it declares a link the broker admits under the fan-out rules (one level deep, at most 108 children, the parent's schema and retention) with a fresh attach epoch, or refuses with the reason in the narad.dev/link-problem annotation. Changing it is a detach and a fresh attach; removing it detaches.",
      { pattern: TOPIC_NAME_PATTERN, minLength: 1, maxLength: 255 },
    ),
    delayMs: int64(
      "Fan-out, with parent: a delay child receives each record this long after its parent commit, in milliseconds (at most one year). The parent's retentionMs must be at least delayMs + 1 h. Changing it is a fresh attach.",
      { minimum: 0, maximum: TOPIC_FANOUT_DELAY_MAX_MS },
    ),
  },
  {
    required: ["cluster"],
    "x-kubernetes-validations": [
      {
        rule: "!has(self.minInsyncReplicas) || !has(self.replicationFactor) || self.minInsyncReplicas <= self.replicationFactor",
        message: "minInsyncReplicas may not exceed replicationFactor",
        fieldPath: ".minInsyncReplicas",
      },
      {
        rule: "has(self.replicationFactor) == has(oldSelf.replicationFactor)",
        message: "replicationFactor is immutable (it may be neither added nor removed after creation)",
        fieldPath: ".replicationFactor",
      },
      {
        rule: "!has(self.delayMs) || self.delayMs == 0 || has(self.parent)",
        message: "delayMs needs parent",
        fieldPath: ".delayMs",
      },
      {
        rule: "has(self.name) == has(oldSelf.name) && (!has(self.name) || self.name == oldSelf.name)",
        message: "name is immutable (it may be neither added nor removed after creation)",
        fieldPath: ".name",
      },
    ],
  },
);

const topicStatus = obj("Observed state, written by the operator.", {
  observedGeneration: int64("metadata.generation this status reflects.", { minimum: 0 }),
  conditions: conditions("Ready"),
  phase: str("Summary: Pending, Assigning, Ready or Failed.", {
    enum: ["Pending", "Assigning", "Ready", "Failed"],
  }),
  assignments: arr(
    "Partition ownership, written only by the operator.",
    obj(
      "Which member owns a partition.",
      {
        partition: int("Partition index, from 0.", { minimum: 0 }),
        owner: str(
          "Owning member id (pod name). For a replicated partition the leader, empty while it is offline.",
        ),
        leader: {
          ...str("Replicated partitions: the leader; null while no in-sync replica is live."),
          nullable: true,
        },
        replicas: arr(
          "Replicated partitions: every replica (member id), the preferred leader first.",
          str("Member id."),
          // A reassignment lists each leaving replica beside its replacement until that is in sync.
          { maxItems: 2 * MAX_REPLICATION_FACTOR },
        ),
        isr: arr(
          "Replicated partitions: the in-sync replicas, each with the volume it held when it joined. Changed only by compare-and-swap: the leader shrinks and expands it, the operator's election removes a lost leader.",
          obj(
            "One in-sync replica.",
            {
              member: str("Member id."),
              volumeId: str("The member's volume identity when it joined the ISR."),
            },
            { required: ["member", "volumeId"] },
          ),
          { maxItems: 2 * MAX_REPLICATION_FACTOR },
        ),
        leaderEpoch: int64(
          "Replicated partitions: bumped on every leader change; replicas refuse requests of a lower epoch.",
          { minimum: 0 },
        ),
      },
      { required: ["partition", "owner"] },
    ),
    { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["partition"] },
  ),
  assignmentEpoch: int64("Bumped on every assignment change.", { minimum: 0 }),
  replicationFactor: int(
    "The replication factor in effect (spec.replicationFactor, or the default chosen at placement).",
    {
      minimum: MIN_REPLICATION_FACTOR,
      maximum: MAX_REPLICATION_FACTOR,
    },
  ),
  minInsyncReplicas: int("The min_insync_replicas in effect.", {
    minimum: 1,
    maximum: MAX_REPLICATION_FACTOR,
  }),
  underReplicatedPartitions: int("Partitions whose ISR is smaller than their replica list.", { minimum: 0 }),
  offlinePartitions: int("Partitions with no leader (no live in-sync replica).", { minimum: 0 }),
});

export const naradTopicSchema: JSONSchemaProps = obj(
  "A Narad topic, served by one NaradCluster in the same namespace.",
  {
    apiVersion: str("Versioned schema of this object (narad.dev/v1alpha1)."),
    kind: str("NaradTopic."),
    // Only `type` is allowed here: the API server owns the metadata schema.
    metadata: { type: "object" },
    spec: topicSpec,
    status: topicStatus,
  },
  { required: ["spec"] },
);

// ---------------------------------------------------------------- NaradUser

const userGrant = obj(
  "One grant, as the Users API takes it: an action on topics matching a pattern.",
  {
    action: str("produce, consume (also ack), create, or admin (everything on the matching topics).", {
      enum: ["produce", "consume", "create", "admin"],
    }),
    topics: str('An exact topic name, or a prefix ending in "*" ("*" alone: every topic).', {
      pattern: USER_GRANT_PATTERN,
      minLength: 1,
      maxLength: 256,
    }),
    groups: str(
      "Consumer groups this grant covers, same pattern syntax; absent: every group. Only consume requests name a group.",
      { pattern: USER_GRANT_PATTERN, minLength: 1, maxLength: 256 },
    ),
  },
  { required: ["action", "topics"] },
);

const userSpec: JSONSchemaProps = obj(
  "Desired state of a Users API user of one NaradCluster. The user's name is spec.username if set, else metadata.name.",
  {
    cluster: str("Name of the NaradCluster (same namespace) whose Users API holds this user. Immutable.", {
      minLength: 1,
      maxLength: 253,
      "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "cluster is immutable" }],
    }),
    username: str(
      "The user's name in the Users API, when it must differ from metadata.name (Kubernetes names are lowercase). Immutable. admin (root) cannot be declared.",
      {
        pattern: USER_NAME_PATTERN,
        minLength: 1,
        maxLength: 64,
        "x-kubernetes-validations": [
          { rule: "self == oldSelf", message: "username is immutable" },
          { rule: "self != 'admin'", message: "admin is root; it cannot be declared as a NaradUser" },
        ],
      },
    ),
    grants: arr(
      "What the user may do, in the Users API's shape (the same list as POST /v1/users).",
      userGrant,
      {
        maxItems: USER_GRANTS_MAX,
      },
    ),
    passwordSecret: obj(
      "Take the password from this Secret (same namespace) instead of generating one. Changing its value changes the password.",
      {
        name: secretName("Secret name."),
        key: str(`Key holding the password. Default: ${USER_PASSWORD_KEY}.`, {
          minLength: 1,
          maxLength: 253,
          pattern: "^[-._a-zA-Z0-9]+$",
        }),
      },
      { required: ["name"] },
    ),
  },
  {
    required: ["cluster"],
    "x-kubernetes-validations": [
      {
        rule: "has(self.username) == has(oldSelf.username)",
        message: "username is immutable (it may be neither added nor removed after creation)",
        fieldPath: ".username",
      },
    ],
  },
);

const userStatus = obj("Observed state, written by the operator.", {
  observedGeneration: int64("metadata.generation this status reflects.", { minimum: 0 }),
  conditions: conditions("Ready"),
  username: str("The user's name in the Users API."),
  secret: str(
    "The Secret holding the password: the generated one (keys username and password) or spec.passwordSecret.name. Unset for users created through the Users API.",
  ),
  userCreatedAtMs: int64(
    "created_at_ms of the Users API entry this NaradUser created; it marks the entry as this NaradUser's own.",
    { minimum: 0 },
  ),
});

export const naradUserSchema: JSONSchemaProps = obj(
  "A Users API user of a NaradCluster in the same namespace, kept in sync both ways with the API (docs/users.md).",
  {
    apiVersion: str("Versioned schema of this object (narad.dev/v1alpha1)."),
    kind: str("NaradUser."),
    // Only `type` is allowed here: the API server owns the metadata schema.
    metadata: { type: "object" },
    spec: userSpec,
    status: userStatus,
  },
  {
    required: ["spec"],
    "x-kubernetes-validations": [
      {
        rule: "has(self.spec.username) || (self.metadata.name.size() <= 64 && self.metadata.name != 'admin')",
        message: "metadata.name is the username: at most 64 characters and not admin (or set spec.username)",
      },
    ],
  },
);
