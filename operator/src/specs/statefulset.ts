import type { NaradCluster, ResolvedNaradClusterSpec } from "../../../packages/api/src/v1alpha1/types.ts";
import {
  ANNOTATION_CONFIG_HASH,
  ANNOTATION_RESTARTED_AT,
  BROKER_CLUSTER_PORT,
  BROKER_CLUSTER_PORT_NAME,
  BROKER_CONFIG_DIR,
  BROKER_CONFIG_FILE,
  BROKER_CONFIG_VOLUME,
  BROKER_CONTAINER_NAME,
  BROKER_DATA_DIR,
  BROKER_DATA_MOUNT,
  BROKER_DATA_VOLUME,
  BROKER_HTTP_PORT,
  BROKER_HTTP_PORT_NAME,
  BROKER_LIVENESS_PROBE_PERIOD_SECONDS,
  BROKER_READINESS_PROBE_PERIOD_SECONDS,
  BROKER_STARTUP_PROBE_FAILURE_THRESHOLD,
  BROKER_STARTUP_PROBE_PERIOD_SECONDS,
  BROKER_USER_ID,
  TERMINATION_GRACE_EXTRA_SECONDS,
} from "../constants.ts";
import type {
  V1Container,
  V1EnvVar,
  V1PersistentVolumeClaim,
  V1PodSpec,
  V1PodTemplateSpec,
  V1StatefulSet,
} from "../kube/models.ts";
import { commonLabels, resourceNames, selectorLabels } from "./labels.ts";
import { ownedMeta } from "./owner.ts";
import { brokerServiceAccountName } from "./rbac.ts";
import { brokerScheme, securityEnv, securityVolumeMounts, securityVolumes } from "./secrets.ts";

export interface StatefulSetInputs {
  cluster: NaradCluster;
  spec: ResolvedNaradClusterSpec;
  /** configHash() of the ConfigMap data the pods will mount. */
  configHash: string;
}

/**
 * The brokers' StatefulSet. updateStrategy OnDelete: the StatefulSet
 * controller never replaces a pod on a template change; the operator decides
 * when (one at a time, after the broker drained). podManagementPolicy
 * Parallel: pods start together (brokers do not need ordered bootstrap).
 */
export function statefulSetSpec(inputs: StatefulSetInputs): V1StatefulSet {
  const { cluster, spec } = inputs;
  const name = cluster.metadata.name ?? "";
  const names = resourceNames(name);
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: ownedMeta(cluster, names.statefulSet),
    spec: {
      replicas: spec.replicas,
      serviceName: names.headlessService,
      selector: { matchLabels: selectorLabels(name) },
      podManagementPolicy: "Parallel",
      updateStrategy: { type: "OnDelete" },
      persistentVolumeClaimRetentionPolicy: {
        whenDeleted: spec.storage.reclaimPolicy.whenDeleted,
        whenScaled: spec.storage.reclaimPolicy.whenScaled,
      },
      template: podTemplate(inputs),
      volumeClaimTemplates: [dataClaimTemplate(cluster, spec)],
    },
  };
}

/** One PVC per broker for WAL and partition logs. */
export function dataClaimTemplate(
  cluster: NaradCluster,
  spec: ResolvedNaradClusterSpec,
): V1PersistentVolumeClaim {
  const claim: V1PersistentVolumeClaim = {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: { name: BROKER_DATA_VOLUME, labels: selectorLabels(cluster.metadata.name ?? "") },
    spec: {
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: spec.storage.size } },
    },
  };
  if (spec.storage.storageClassName !== undefined && claim.spec !== undefined) {
    claim.spec.storageClassName = spec.storage.storageClassName;
  }
  return claim;
}

function podTemplate({ cluster, spec, configHash }: StatefulSetInputs): V1PodTemplateSpec {
  const name = cluster.metadata.name ?? "";
  const pod = spec.pod;
  const podSpec: V1PodSpec = {
    serviceAccountName: brokerServiceAccountName(cluster),
    // Brokers use the API as their metastore.
    automountServiceAccountToken: true,
    terminationGracePeriodSeconds: spec.rollout.drainTimeoutSeconds + TERMINATION_GRACE_EXTRA_SECONDS,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: BROKER_USER_ID,
      runAsGroup: BROKER_USER_ID,
      fsGroup: BROKER_USER_ID,
      seccompProfile: { type: "RuntimeDefault" },
    },
    containers: [brokerContainer(cluster, spec)],
    // No /tmp volume: the broker writes only under its data dir. (A /tmp
    // mount would also hide the local platform's volume sources, which live
    // under /tmp, from the pod's mount namespace.)
    volumes: [
      { name: BROKER_CONFIG_VOLUME, configMap: { name: resourceNames(name).configMap } },
      ...securityVolumes(name, spec),
    ],
  };
  if (spec.imagePullSecrets.length > 0) podSpec.imagePullSecrets = spec.imagePullSecrets;
  if (pod.affinity !== undefined) podSpec.affinity = pod.affinity;
  if (pod.tolerations !== undefined) podSpec.tolerations = pod.tolerations;
  if (pod.nodeSelector !== undefined) podSpec.nodeSelector = pod.nodeSelector;
  if (pod.topologySpreadConstraints !== undefined)
    podSpec.topologySpreadConstraints = pod.topologySpreadConstraints;
  if (pod.priorityClassName !== undefined) podSpec.priorityClassName = pod.priorityClassName;
  const annotations: Record<string, string> = { ...pod.annotations, [ANNOTATION_CONFIG_HASH]: configHash };
  // A manual restart: a new value changes the template, hence the revision, hence a roll.
  const restartedAt = cluster.metadata.annotations?.[ANNOTATION_RESTARTED_AT];
  if (restartedAt !== undefined && restartedAt !== "") annotations[ANNOTATION_RESTARTED_AT] = restartedAt;
  return {
    metadata: {
      // User labels first: they may add, never override the selector labels.
      labels: { ...pod.labels, ...commonLabels(name) },
      annotations,
    },
    spec: podSpec,
  };
}

function brokerContainer(cluster: NaradCluster, spec: ResolvedNaradClusterSpec): V1Container {
  const clusterName = cluster.metadata.name ?? "";
  const scheme = brokerScheme(spec);
  const container: V1Container = {
    name: BROKER_CONTAINER_NAME,
    image: spec.image,
    imagePullPolicy: spec.imagePullPolicy,
    // No command: the image's entrypoint is the narad binary.
    args: [
      "serve",
      `--addr=$(POD_IP):${BROKER_HTTP_PORT}`,
      `--cluster-addr=$(POD_IP):${BROKER_CLUSTER_PORT}`,
      "--node-id=$(POD_NAME)",
      // Topics, assignments and membership come from the Kubernetes API
      // (NARAD_CLUSTER_NAME and POD_NAMESPACE name the cluster, NARAD_CLUSTER_UID its uid).
      "--metastore=kubernetes",
      `--data-dir=${BROKER_DATA_DIR}`,
      `--config=${BROKER_CONFIG_DIR}/${BROKER_CONFIG_FILE}`,
    ],
    env: [...brokerEnv(clusterName, cluster.metadata.uid ?? ""), ...securityEnv(spec)],
    ports: [
      { name: BROKER_HTTP_PORT_NAME, containerPort: BROKER_HTTP_PORT, protocol: "TCP" },
      { name: BROKER_CLUSTER_PORT_NAME, containerPort: BROKER_CLUSTER_PORT, protocol: "TCP" },
    ],
    startupProbe: {
      httpGet: { path: "/healthz", port: BROKER_HTTP_PORT, scheme },
      failureThreshold: BROKER_STARTUP_PROBE_FAILURE_THRESHOLD,
      periodSeconds: BROKER_STARTUP_PROBE_PERIOD_SECONDS,
    },
    livenessProbe: {
      httpGet: { path: "/healthz", port: BROKER_HTTP_PORT, scheme },
      periodSeconds: BROKER_LIVENESS_PROBE_PERIOD_SECONDS,
    },
    readinessProbe: {
      httpGet: { path: "/readyz", port: BROKER_HTTP_PORT, scheme },
      periodSeconds: BROKER_READINESS_PROBE_PERIOD_SECONDS,
    },
    // Backstop for the operator's own drain: the broker drains its WAL
    // (bounded by drainTimeoutMs) before SIGTERM.
    // It carries no credentials (httpHeaders would put the secret in the
    // template): with auth on the broker answers 401, the kubelet logs
    // FailedPreStopHook and sends SIGTERM, whose handler drains the same way.
    lifecycle: { preStop: { httpGet: { path: "/admin/v1/prestop", port: BROKER_HTTP_PORT, scheme } } },
    securityContext: {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    },
    volumeMounts: [
      { name: BROKER_DATA_VOLUME, mountPath: BROKER_DATA_MOUNT },
      { name: BROKER_CONFIG_VOLUME, mountPath: BROKER_CONFIG_DIR, readOnly: true },
      ...securityVolumeMounts(spec),
    ],
  };
  if (Object.keys(spec.resources).length > 0) container.resources = spec.resources;
  return container;
}

function brokerEnv(clusterName: string, clusterUid: string): V1EnvVar[] {
  return [
    { name: "POD_NAME", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } } },
    { name: "POD_IP", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "status.podIP" } } },
    { name: "POD_NAMESPACE", valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } } },
    { name: "NARAD_CLUSTER_NAME", value: clusterName },
    // Written into each volume's volume-id marker: a volume moved to another
    // cluster (another uid) is foreign there and never served as a replica.
    { name: "NARAD_CLUSTER_UID", value: clusterUid },
    // The kubelet's port-forward dials localhost in the pod, and --addr is the
    // pod IP: accept on 127.0.0.1 too. An environment variable, not a flag, so
    // a cluster pinned to an older image that lacks the setting still starts.
    { name: "NARAD_LOOPBACK_FORWARD", value: "on" },
  ];
}
