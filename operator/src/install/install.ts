// How the operator itself is installed: RBAC rules, the Helm chart's default
// values, and the single-file bundle (deploy/narad-operator.yaml) rendered from
// those same values. The chart's values.yaml and clusterrole.yaml are checked
// (or generated) against this module by scripts/gen-crds.ts, so the chart and
// the bundle cannot drift apart.

import { DEFAULT_BROKER_IMAGE } from "../../../packages/api/src/v1alpha1/defaults.ts";
import { GROUP } from "../../../packages/api/src/v1alpha1/types.ts";

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/**
 * Owned objects are written with server-side apply (patch; create when the
 * object is new) and read from label-filtered informers (list, watch); the
 * operator never uses PUT on them, hence no "update".
 */
const OWNED = ["get", "list", "watch", "create", "patch", "delete"];

/**
 * Rules of the Role the operator creates for each cluster's brokers. Brokers
 * read topics and membership, create/delete NaradTopics for POST/DELETE
 * /v1/topics, and patch a NaradTopic's status for one thing only: the ISR of
 * a partition they lead. The operator must itself hold all of these (RBAC
 * escalation check).
 */
export const BROKER_ROLE_RULES: PolicyRule[] = [
  // patch: PATCH /v1/topics/{t} on a broker updates the NaradTopic spec.
  {
    apiGroups: [GROUP],
    resources: ["naradtopics"],
    verbs: ["get", "list", "watch", "create", "patch", "delete"],
  },
  // patch: the ISR of a replicated partition the broker leads, a compare-and-swap
  // on resourceVersion (docs/adr/0007-replication.md); nothing else of status.
  { apiGroups: [GROUP], resources: ["naradtopics/status"], verbs: ["get", "patch"] },
  { apiGroups: [GROUP], resources: ["naradclusters"], verbs: ["get", "list", "watch"] },
  { apiGroups: [GROUP], resources: ["naradclusters/status"], verbs: ["get"] },
];

/**
 * The brokers' producer-id registry (one ConfigMap per cluster, written with
 * a resourceVersion-checked patch): create, because a broker creates it on
 * first use (a create cannot be limited to a name), and read/watch/patch of
 * that one ConfigMap only, so brokers cannot read or change the cluster's
 * other ConfigMaps (the operator's broker config among them). Also the API
 * users Secret: get and patch of that name only.
 */
export function brokerRegistryRules(configMapName: string, apiUsersSecretName: string): PolicyRule[] {
  return [
    { apiGroups: [""], resources: ["configmaps"], verbs: ["create"] },
    {
      apiGroups: [""],
      resources: ["configmaps"],
      verbs: ["get", "list", "watch", "patch"],
      resourceNames: [configMapName],
    },
    // The Users API's store (broker/src/auth/kube-users-store.ts): a quorum
    // GET and a resourceVersion-checked merge patch of that one Secret,
    // which the operator creates; no create, list or watch, and no other
    // Secret (the users file and the cluster secret reach pods as volumes).
    {
      apiGroups: [""],
      resources: ["secrets"],
      verbs: ["get", "patch"],
      resourceNames: [apiUsersSecretName],
    },
  ];
}

/**
 * A decommission request (POST/DELETE /v1/cluster/members/{id}/decommission)
 * becomes a conditional write of the cluster's spec.replicas through its
 * scale subresource: patch on that one NaradCluster's scale, nothing else
 * (no spec patch, no other cluster). The broker reads the cluster with the
 * get it already has on naradclusters.
 */
export function brokerScaleRules(clusterName: string): PolicyRule[] {
  return [
    {
      apiGroups: [GROUP],
      resources: ["naradclusters/scale"],
      verbs: ["patch"],
      resourceNames: [clusterName],
    },
  ];
}

/** The operator's ClusterRole: least privilege, plus everything in BROKER_ROLE_RULES. */
export const OPERATOR_CLUSTER_ROLE_RULES: PolicyRule[] = [
  // NaradClusters: read, and metadata patches (finalizers); users create them.
  { apiGroups: [GROUP], resources: ["naradclusters"], verbs: ["get", "list", "watch", "patch"] },
  {
    apiGroups: [GROUP],
    resources: ["naradtopics"],
    // create/delete only because the broker Role grants them on naradtopics.
    verbs: ["get", "list", "watch", "create", "patch", "delete"],
  },
  {
    apiGroups: [GROUP],
    resources: ["naradclusters/status", "naradtopics/status", "naradusers/status"],
    verbs: ["get", "update", "patch"],
  },
  // NaradUsers: read and finalizers; create/patch/delete for the mirrors of
  // users created through the Users API (controller/user/mirror.ts).
  {
    apiGroups: [GROUP],
    resources: ["naradusers"],
    verbs: ["get", "list", "watch", "create", "patch", "delete"],
  },
  // Only because the broker Role grants it (brokerScaleRules); the operator never scales.
  { apiGroups: [GROUP], resources: ["naradclusters/scale"], verbs: ["patch"] },
  {
    apiGroups: [GROUP],
    resources: ["naradclusters/finalizers", "naradtopics/finalizers", "naradusers/finalizers"],
    verbs: ["update"],
  },
  { apiGroups: ["apps"], resources: ["statefulsets"], verbs: OWNED },
  { apiGroups: [""], resources: ["services", "configmaps", "serviceaccounts"], verbs: OWNED },
  { apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles", "rolebindings"], verbs: OWNED },
  { apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: OWNED },
  // Secrets: only a GET by name (the cluster secret for admin calls, "does
  // it exist?", a NaradUser's password) and a create of the generated ones.
  // No list/watch: the operator never caches Secret contents cluster-wide;
  // no update/delete: users own them once created (the garbage collector
  // deletes them). patch: the API users Secret, where NaradUsers are written
  // (a merge patch guarded by resourceVersion, as the brokers write it).
  { apiGroups: [""], resources: ["secrets"], verbs: ["get", "create", "patch"] },
  // The optional per-cluster NetworkPolicy (applied, deleted when disabled).
  {
    apiGroups: ["networking.k8s.io"],
    resources: ["networkpolicies"],
    verbs: ["get", "create", "patch", "delete"],
  },
  // Pods: read only. A planned restart (StatefulSet updateStrategy OnDelete)
  // is an Eviction, so the API server checks the PodDisruptionBudget; the
  // operator cannot delete a pod past it.
  { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] },
  { apiGroups: [""], resources: ["pods/eviction"], verbs: ["create"] },
  // PVCs: update/patch to expand, delete for reclaimPolicy Delete; the StatefulSet creates them.
  {
    apiGroups: [""],
    resources: ["persistentvolumeclaims"],
    verbs: ["get", "list", "watch", "update", "patch", "delete"],
  },
  { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
  { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
  // StorageClasses: to check allowVolumeExpansion before resizing.
  { apiGroups: ["storage.k8s.io"], resources: ["storageclasses"], verbs: ["get", "list", "watch"] },
  // Nodes: a GET of the node a broker runs on, for its topology.kubernetes.io/zone
  // label (replicas of a partition spread across zones first).
  { apiGroups: [""], resources: ["nodes"], verbs: ["get"] },
  {
    apiGroups: ["monitoring.coreos.com"],
    resources: ["servicemonitors", "podmonitors"],
    verbs: ["get", "create", "patch", "delete"],
  },
];

/** The cluster-scoped part of OPERATOR_CLUSTER_ROLE_RULES: what a namespaced Role cannot grant. */
const CLUSTER_SCOPED_RESOURCES: readonly string[] = ["storageclasses", "nodes"];

export const OPERATOR_CLUSTER_SCOPED_RULES: PolicyRule[] = OPERATOR_CLUSTER_ROLE_RULES.filter((r) =>
  r.resources.some((x) => CLUSTER_SCOPED_RESOURCES.includes(x)),
);

/**
 * The rest: what the operator needs inside each namespace it watches. With
 * watchNamespaces set, the chart grants these through one Role per watched
 * namespace instead of cluster-wide.
 */
export const OPERATOR_NAMESPACED_RULES: PolicyRule[] = OPERATOR_CLUSTER_ROLE_RULES.filter(
  (r) => !r.resources.some((x) => CLUSTER_SCOPED_RESOURCES.includes(x)),
);

/** Namespaced Role (operator namespace only) for leader election. */
export const LEADER_ELECTION_ROLE_RULES: PolicyRule[] = [
  { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] },
];

/** True if `rules` grant `verb` on `apiGroup`/`resource` (no resourceNames restriction). */
export function grants(rules: PolicyRule[], apiGroup: string, resource: string, verb: string): boolean {
  return rules.some(
    (r) =>
      r.resourceNames === undefined &&
      (r.apiGroups.includes(apiGroup) || r.apiGroups.includes("*")) &&
      (r.resources.includes(resource) || r.resources.includes("*")) &&
      (r.verbs.includes(verb) || r.verbs.includes("*")),
  );
}

// ---------------------------------------------------------------- chart values

export const OPERATOR_VERSION = "0.1.0";
export const OPERATOR_NAME = "narad-operator";
export const OPERATOR_NAMESPACE = "narad-system";
export const OPERATOR_PORT = 8080;
export const OPERATOR_USER_ID = 10001;

/**
 * Defaults of the chart's values. scripts/gen-crds.ts renders
 * charts/narad-operator/values.yaml, values.schema.json and the README's
 * values table from these and their docs (chart-values.ts).
 */
export const chartValues = {
  image: { repository: "ghcr.io/narad/narad-operator", tag: "", pullPolicy: "IfNotPresent" },
  imagePullSecrets: [] as { name: string }[],
  nameOverride: "",
  fullnameOverride: "",
  replicas: 2,
  resources: {
    requests: { cpu: "100m", memory: "128Mi" },
    limits: { memory: "512Mi" },
  },
  leaderElection: { enabled: true },
  logLevel: "info",
  watchNamespaces: [] as string[],
  brokerImage: DEFAULT_BROKER_IMAGE,
  serviceAccount: { create: true, name: "", annotations: {} as Record<string, string> },
  rbac: { create: true },
  podDisruptionBudget: { enabled: true, maxUnavailable: 1 as number | string },
  podAnnotations: {} as Record<string, string>,
  podLabels: {} as Record<string, string>,
  podSecurityContext: {
    runAsNonRoot: true,
    runAsUser: OPERATOR_USER_ID,
    runAsGroup: OPERATOR_USER_ID,
    fsGroup: OPERATOR_USER_ID,
    seccompProfile: { type: "RuntimeDefault" },
  },
  securityContext: {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    runAsUser: OPERATOR_USER_ID,
    capabilities: { drop: ["ALL"] },
  },
  extraEnv: [] as Record<string, unknown>[],
  extraArgs: [] as string[],
  extraVolumes: [] as Record<string, unknown>[],
  extraVolumeMounts: [] as Record<string, unknown>[],
  nodeSelector: {} as Record<string, string>,
  tolerations: [] as Record<string, unknown>[],
  affinity: {} as Record<string, unknown>,
  priorityClassName: "",
  metrics: {
    serviceMonitor: { enabled: false, interval: "30s", labels: {} as Record<string, string> },
    prometheusRule: { enabled: false, labels: {} as Record<string, string> },
    grafanaDashboard: { enabled: false, labels: { grafana_dashboard: "1" } as Record<string, string> },
  },
};

export type ChartValues = typeof chartValues;

// ---------------------------------------------------------------- bundle

type Obj = Record<string, unknown>;

/** Labels the chart puts on everything (minus helm.sh/chart and managed-by: Helm). */
function labels(): Record<string, string> {
  return {
    "app.kubernetes.io/name": OPERATOR_NAME,
    "app.kubernetes.io/instance": OPERATOR_NAME,
    "app.kubernetes.io/version": OPERATOR_VERSION,
    "app.kubernetes.io/part-of": "narad",
  };
}

function selectorLabels(): Record<string, string> {
  return { "app.kubernetes.io/name": OPERATOR_NAME, "app.kubernetes.io/instance": OPERATOR_NAME };
}

/** Container env, shared by the bundle; the chart's deployment.yaml renders the same names. */
export function operatorEnv(v: ChartValues): Obj[] {
  const field = (name: string, fieldPath: string): Obj => ({ name, valueFrom: { fieldRef: { fieldPath } } });
  return [
    field("POD_NAMESPACE", "metadata.namespace"),
    field("POD_NAME", "metadata.name"),
    field("POD_IP", "status.podIP"),
    { name: "NARAD_OPERATOR_ADDR", value: `$(POD_IP):${OPERATOR_PORT}` },
    { name: "NARAD_OPERATOR_LOG_LEVEL", value: v.logLevel },
    { name: "NARAD_OPERATOR_LEADER_ELECT", value: String(v.leaderElection.enabled) },
    { name: "NARAD_OPERATOR_WATCH_NAMESPACES", value: v.watchNamespaces.join(",") },
    { name: "NARAD_OPERATOR_BROKER_IMAGE", value: v.brokerImage },
  ];
}

function deployment(v: ChartValues, ns: string): Obj {
  const probe = (path: string, periodSeconds: number): Obj => ({
    httpGet: { path, port: "http-metrics" },
    periodSeconds,
    timeoutSeconds: 2,
    failureThreshold: 3,
  });
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: OPERATOR_NAME, namespace: ns, labels: labels() },
    spec: {
      replicas: v.replicas,
      selector: { matchLabels: selectorLabels() },
      template: {
        metadata: { labels: { ...labels() } },
        spec: {
          serviceAccountName: OPERATOR_NAME,
          securityContext: v.podSecurityContext,
          containers: [
            {
              name: "operator",
              image: `${v.image.repository}:${v.image.tag || OPERATOR_VERSION}`,
              imagePullPolicy: v.image.pullPolicy,
              env: operatorEnv(v),
              ports: [{ name: "http-metrics", containerPort: OPERATOR_PORT, protocol: "TCP" }],
              // Loading the operator's modules took 10-25 s on a busy kind node,
              // close to what liveness alone allows (3 x 10 s): liveness starts
              // once the server answered, for up to 3 min.
              startupProbe: { ...probe("/healthz", 2), failureThreshold: 90 },
              livenessProbe: probe("/healthz", 10),
              readinessProbe: probe("/readyz", 5),
              resources: v.resources,
              securityContext: v.securityContext,
            },
          ],
        },
      },
    },
  };
}

/**
 * Every object of `kubectl apply -f deploy/narad-operator.yaml`, in apply
 * order: Namespace, CRDs, RBAC, Service, PodDisruptionBudget, Deployment.
 */
export function renderBundle(crds: Obj[], v: ChartValues = chartValues, ns = OPERATOR_NAMESPACE): Obj[] {
  const meta = (name: string, namespaced: boolean): Obj =>
    namespaced ? { name, namespace: ns, labels: labels() } : { name, labels: labels() };
  const subject = [{ kind: "ServiceAccount", name: OPERATOR_NAME, namespace: ns }];
  const leaderElectionName = `${OPERATOR_NAME}-leader-election`;
  return [
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: ns, labels: { "app.kubernetes.io/part-of": "narad" } },
    },
    ...crds,
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta(OPERATOR_NAME, true) },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: meta(OPERATOR_NAME, false),
      rules: OPERATOR_CLUSTER_ROLE_RULES,
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: meta(OPERATOR_NAME, false),
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: OPERATOR_NAME },
      subjects: subject,
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: meta(leaderElectionName, true),
      rules: LEADER_ELECTION_ROLE_RULES,
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: meta(leaderElectionName, true),
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: leaderElectionName },
      subjects: subject,
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: meta(`${OPERATOR_NAME}-metrics`, true),
      spec: {
        selector: selectorLabels(),
        ports: [{ name: "http-metrics", port: OPERATOR_PORT, targetPort: "http-metrics", protocol: "TCP" }],
      },
    },
    ...(v.podDisruptionBudget.enabled
      ? [
          {
            apiVersion: "policy/v1",
            kind: "PodDisruptionBudget",
            metadata: meta(OPERATOR_NAME, true),
            spec: {
              maxUnavailable: v.podDisruptionBudget.maxUnavailable,
              selector: { matchLabels: selectorLabels() },
            },
          },
        ]
      : []),
    deployment(v, ns),
  ];
}
