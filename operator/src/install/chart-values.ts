// The documentation of the Helm chart's values, beside their defaults
// (chartValues in install.ts). scripts/gen-crds.ts renders from the two:
// charts/narad-operator/values.yaml (defaults with these descriptions as
// comments), values.schema.json (types, defaults, descriptions) and the
// values table of charts/narad-operator/README.md. A test fails when a value
// has no entry here, or an entry names no value.

/** A JSON Schema fragment (draft 7, what Helm validates values with). */
export type JsonSchema = Record<string, unknown>;

export interface ValueDoc {
  description: string;
  /**
   * The value's schema, when its default does not say enough: free-form
   * objects (a Kubernetes type passed through), enums, bounds. Otherwise the
   * type comes from the default (string, integer, boolean, array of strings,
   * object of the documented keys).
   */
  schema?: JsonSchema;
}

const stringMap: JsonSchema = { type: "object", additionalProperties: { type: "string" } };
const kubeObject = (kind: string): JsonSchema => ({
  type: "object",
  description: `a Kubernetes ${kind}`,
  additionalProperties: true,
});
const kubeList = (kind: string): JsonSchema => ({
  type: "array",
  items: { type: "object", description: `a Kubernetes ${kind}`, additionalProperties: true },
});

/** Keyed by the value's dotted path. An object value without an entry of its own is a group of documented keys. */
export const chartValueDocs: Record<string, ValueDoc> = {
  "image.repository": { description: "The operator image." },
  "image.tag": { description: "The operator image tag; empty means the chart's appVersion." },
  "image.pullPolicy": {
    description: "Image pull policy of the operator container.",
    schema: { type: "string", enum: ["Always", "IfNotPresent", "Never"] },
  },
  imagePullSecrets: {
    description: "Secrets for pulling the operator image, as `[{name: ...}]`.",
    schema: {
      type: "array",
      items: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    },
  },
  nameOverride: { description: "Replaces the chart name in object names." },
  fullnameOverride: { description: "Replaces the full object name (release name and chart name)." },
  replicas: {
    description:
      "Operator pods. Only the leader reconciles; the others stand by (leader election on a Lease in the release namespace).",
    schema: { type: "integer", minimum: 0 },
  },
  resources: {
    description: "Resources of the operator container.",
    schema: kubeObject("ResourceRequirements"),
  },
  "leaderElection.enabled": {
    description:
      "Leader election. Keep it on with more than one replica: two active operators would fight over pods.",
  },
  logLevel: {
    description: "Operator log level.",
    schema: { type: "string", enum: ["trace", "debug", "info", "warn", "error"] },
  },
  watchNamespaces: {
    description:
      "Namespaces whose NaradClusters and NaradTopics are reconciled; empty means all. Set, the operator gets a Role in each instead of a ClusterRole.",
  },
  brokerImage: {
    description:
      "Broker image of NaradClusters that do not set spec.image. Clusters without spec.image move to a new default when the operator is upgraded; spec.image pins one.",
  },
  "serviceAccount.create": { description: "Create the operator's ServiceAccount." },
  "serviceAccount.name": {
    description:
      "The ServiceAccount to run as; empty means the full name when create is true, `default` when it is false.",
  },
  "serviceAccount.annotations": {
    description: "Annotations of the created ServiceAccount (for example a cloud IAM role).",
    schema: stringMap,
  },
  "rbac.create": {
    description:
      "Create the operator's ClusterRole (or per-namespace Roles), the leader-election Role and their bindings. Off, grant the same rules yourself (see deploy/narad-operator.yaml).",
  },
  "podDisruptionBudget.enabled": {
    description:
      "A PodDisruptionBudget for the operator pods, so a node drain never evicts all of them at once.",
  },
  "podDisruptionBudget.maxUnavailable": {
    description: "Operator pods a voluntary disruption may take down at once (a number or a percentage).",
    schema: {
      anyOf: [
        { type: "integer", minimum: 0 },
        { type: "string", pattern: "^[0-9]+%$" },
      ],
    },
  },
  podAnnotations: { description: "Annotations of the operator pods.", schema: stringMap },
  podLabels: { description: "Extra labels of the operator pods.", schema: stringMap },
  podSecurityContext: { description: "Pod security context.", schema: kubeObject("PodSecurityContext") },
  securityContext: {
    description: "Security context of the operator container.",
    schema: kubeObject("SecurityContext"),
  },
  extraEnv: {
    description:
      "Extra environment variables of the operator container (Kubernetes EnvVar objects). The operator reads its settings from the environment: this is also how to pass one the chart has no value for.",
    schema: kubeList("EnvVar"),
  },
  extraArgs: {
    description:
      "Extra command-line arguments of the operator container, e.g. `--log-level=debug`. Each flag (`--addr`, `--log-level`, `--leader-elect`, `--watch-namespaces`, `--broker-image`, `--kubeconfig`) sets what its environment variable sets and wins over it; an unknown flag stops the operator with an error naming it.",
    schema: { type: "array", items: { type: "string" } },
  },
  extraVolumes: { description: "Extra volumes of the operator pods.", schema: kubeList("Volume") },
  extraVolumeMounts: {
    description: "Extra volume mounts of the operator container.",
    schema: kubeList("VolumeMount"),
  },
  nodeSelector: { description: "Node selector of the operator pods.", schema: stringMap },
  tolerations: { description: "Tolerations of the operator pods.", schema: kubeList("Toleration") },
  affinity: { description: "Affinity of the operator pods.", schema: kubeObject("Affinity") },
  priorityClassName: { description: "Priority class of the operator pods." },
  "metrics.serviceMonitor.enabled": {
    description:
      "A ServiceMonitor for the operator's /metrics (port 8080, always served by the <fullname>-metrics Service). Needs the Prometheus Operator's CRDs.",
  },
  "metrics.serviceMonitor.interval": {
    description: "Scrape interval.",
    schema: { type: "string", pattern: "^[0-9]+(ms|s|m|h)$" },
  },
  "metrics.serviceMonitor.labels": {
    description: "Extra labels of the ServiceMonitor (for a Prometheus serviceMonitorSelector).",
    schema: stringMap,
  },
  "metrics.prometheusRule.enabled": {
    description:
      "A PrometheusRule with Narad's alerts (files/narad-alerts.yaml; each has a runbook in docs/monitoring.md). Needs the Prometheus Operator's CRDs.",
  },
  "metrics.prometheusRule.labels": {
    description: "Extra labels of the PrometheusRule (for a Prometheus ruleSelector).",
    schema: stringMap,
  },
  "metrics.grafanaDashboard.enabled": {
    description:
      "A ConfigMap holding the Narad Grafana dashboard, for the Grafana sidecar that loads labelled ConfigMaps.",
  },
  "metrics.grafanaDashboard.labels": {
    description:
      "Labels of the dashboard ConfigMap; the sidecar's label (grafana_dashboard by default) must be among them.",
    schema: stringMap,
  },
};

/** Whether the value at `path` is documented as one value (a leaf), not a group of keys. */
export function isDocumentedValue(path: string): boolean {
  return chartValueDocs[path] !== undefined;
}

/** The JSON Schema of the chart's values: from the defaults' shapes and the docs above. */
export function valuesSchema(defaults: Record<string, unknown>): JsonSchema {
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    title: "narad-operator chart values",
    ...objectSchema(defaults, ""),
  };
}

function objectSchema(obj: Record<string, unknown>, prefix: string): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const [key, value] of Object.entries(obj)) properties[key] = valueSchema(value, prefix + key);
  return { type: "object", properties, additionalProperties: false };
}

function valueSchema(value: unknown, path: string): JsonSchema {
  const doc = chartValueDocs[path];
  if (doc === undefined) {
    if (value === null || typeof value !== "object" || Array.isArray(value))
      throw new Error(`chart value ${path} has no entry in chartValueDocs (chart-values.ts)`);
    return objectSchema(value as Record<string, unknown>, path + ".");
  }
  return { ...(doc.schema ?? inferred(value, path)), description: doc.description, default: value };
}

function inferred(value: unknown, path: string): JsonSchema {
  if (typeof value === "string") return { type: "string" };
  if (typeof value === "boolean") return { type: "boolean" };
  if (typeof value === "number") return Number.isInteger(value) ? { type: "integer" } : { type: "number" };
  if (Array.isArray(value) && value.every((v) => typeof v === "string"))
    return { type: "array", items: { type: "string" } };
  throw new Error(`chart value ${path}: give its schema in chartValueDocs, its default does not say enough`);
}

/** Every documented path, for the check that each names a value. */
export function valuePaths(defaults: Record<string, unknown>, prefix = ""): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(defaults)) {
    const path = prefix + key;
    if (isDocumentedValue(path)) out.push(path);
    else if (value !== null && typeof value === "object" && !Array.isArray(value))
      out.push(...valuePaths(value as Record<string, unknown>, path + "."));
    else out.push(path);
  }
  return out;
}
