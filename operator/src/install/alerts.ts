// Prometheus alerting rules for Narad brokers. scripts/gen-crds.ts writes
// them as a rule file, charts/narad-operator/files/narad-alerts.yaml, which
// the chart wraps in a PrometheusRule (metrics.prometheusRule.enabled) and
// which plain Prometheus loads as it is. Each alert has a runbook section in
// docs/monitoring.md, under the alert's name as a heading.
//
// The series come from the brokers' /metrics as the operator's
// ServiceMonitor scrapes them (the Prometheus Operator adds namespace,
// service and pod labels); the rules group by (namespace, service), which is
// one NaradCluster. The replication alerts read the operator's own gauges,
// which carry namespace, cluster and topic labels.

export interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  severity: "critical" | "warning";
  summary: string;
  description: string;
}

export const RUNBOOK_BASE = "https://github.com/narad/narad/blob/main/docs/monitoring.md";

const cluster = "namespace, service";

export const alertRules: AlertRule[] = [
  {
    alert: "NaradNoReadyBrokers",
    expr: `max by (${cluster}) (narad_ready) == 0`,
    for: "2m",
    severity: "critical",
    summary: "No broker of a Narad cluster is ready",
    description:
      "No broker behind {{ $labels.namespace }}/{{ $labels.service }} has been ready for 2 minutes: produce and consume fail.",
  },
  {
    alert: "NaradBrokerNotReady",
    expr: "narad_ready == 0",
    for: "10m",
    severity: "warning",
    summary: "A Narad broker stays not ready",
    description: "Broker {{ $labels.pod }} in {{ $labels.namespace }} has not been ready for 10 minutes.",
  },
  {
    alert: "NaradMemberDown",
    expr: `max by (${cluster}) (narad_cluster_members{state="Down"}) > 0`,
    for: "1m",
    severity: "critical",
    summary: "A Narad cluster has a member marked Down",
    description:
      "{{ $value }} member(s) of {{ $labels.namespace }}/{{ $labels.service }} are Down: their partitions are rerouted and records for them may be held.",
  },
  {
    alert: "NaradConsumerLagGrowing",
    expr: `(sum by (${cluster}, topic, group) (narad_consumer_lag_messages) > 1000) and (sum by (${cluster}, topic, group) (deriv(narad_consumer_lag_messages[15m])) > 0)`,
    for: "15m",
    severity: "warning",
    summary: "A consumer group falls behind",
    description:
      "Group {{ $labels.group }} on topic {{ $labels.topic }} ({{ $labels.namespace }}/{{ $labels.service }}) lags {{ $value }} messages and the lag has grown for 15 minutes.",
  },
  {
    alert: "NaradWalPendingGrowing",
    expr: "(narad_wal_pending_records > 10000) and (deriv(narad_wal_pending_records[10m]) > 0)",
    for: "10m",
    severity: "warning",
    summary: "A broker's ingress WAL is not draining",
    description:
      "Broker {{ $labels.pod }} holds {{ $value }} records in its ingress WAL that are not committed to their partitions, and the number grows.",
  },
  {
    alert: "NaradDispatchStalled",
    expr: "narad_dispatch_oldest_stalled_seconds > 60",
    for: "5m",
    severity: "critical",
    summary: "A broker's dispatcher is stalled",
    description:
      "Broker {{ $labels.pod }} has records its dispatcher could not commit for {{ $value }} seconds.",
  },
  {
    alert: "NaradHighErrorRate",
    expr: `sum by (${cluster}) (rate(narad_http_requests_total{status=~"5.."}[5m])) / sum by (${cluster}) (rate(narad_http_requests_total[5m])) > 0.05`,
    for: "10m",
    severity: "warning",
    summary: "Many Narad requests fail with 5xx",
    description:
      "{{ $value | humanizePercentage }} of requests to {{ $labels.namespace }}/{{ $labels.service }} answer 5xx.",
  },
  {
    alert: "NaradHighThrottleRate",
    expr: `sum by (${cluster}) (rate(narad_http_requests_total{status="429"}[5m])) / sum by (${cluster}) (rate(narad_http_requests_total[5m])) > 0.1`,
    for: "15m",
    severity: "warning",
    summary: "Many Narad requests are refused with 429",
    description:
      "{{ $value | humanizePercentage }} of requests to {{ $labels.namespace }}/{{ $labels.service }} are rate limited or over the admission budget.",
  },
  {
    alert: "NaradDiskNearlyFull",
    expr: "narad_disk_available_bytes / narad_disk_capacity_bytes < 0.1",
    for: "5m",
    severity: "critical",
    summary: "A broker's data volume is nearly full",
    description:
      "Broker {{ $labels.pod }} has {{ $value | humanizePercentage }} of its data volume left; at 0 it refuses produce.",
  },
  {
    alert: "NaradAdmissionSaturated",
    expr: "narad_admission_used_bytes / narad_admission_budget_bytes > 0.9",
    for: "5m",
    severity: "warning",
    summary: "A broker's produce memory budget is nearly used up",
    description:
      "Broker {{ $labels.pod }} has used {{ $value | humanizePercentage }} of its admission budget for 5 minutes; producers wait or get 429.",
  },
  // From the operator's /metrics (only the replica holding the lease exports them).
  {
    alert: "NaradPartitionsOffline",
    expr: "max by (namespace, cluster, topic) (narad_operator_offline_partitions) > 0",
    for: "1m",
    severity: "critical",
    summary: "Partitions of a replicated Narad topic have no leader",
    description:
      "{{ $value }} partition(s) of topic {{ $labels.topic }} (cluster {{ $labels.cluster }}) have no live in-sync replica: they are neither written nor read until one comes back on its volume.",
  },
  {
    alert: "NaradUnderReplicatedPartitions",
    expr: "max by (namespace, cluster, topic) (narad_operator_under_replicated_partitions) > 0",
    for: "15m",
    severity: "warning",
    summary: "A replicated Narad topic stays under-replicated",
    description:
      "{{ $value }} partition(s) of topic {{ $labels.topic }} (cluster {{ $labels.cluster }}) have had fewer live in-sync replicas than their replication factor for 15 minutes: one more lost broker may take them offline.",
  },
  {
    alert: "NaradWalCorruptFrames",
    expr: "narad_wal_corrupt_frames > 0",
    for: "0m",
    severity: "critical",
    summary: "A broker found corrupt frames in its ingress WAL",
    description:
      "Broker {{ $labels.pod }} found {{ $value }} corrupt WAL frame(s); they are never served, but the disk may be failing.",
  },
];

/** The docs anchor of an alert's runbook (its heading in docs/monitoring.md). */
export function runbookAnchor(alert: string): string {
  return alert.toLowerCase();
}

/** The rule file: `groups:` as Prometheus loads it, and as the PrometheusRule's spec. */
export function alertRuleGroups(): Record<string, unknown> {
  return {
    groups: [
      {
        name: "narad",
        rules: alertRules.map((a) => ({
          alert: a.alert,
          expr: a.expr,
          for: a.for,
          labels: { severity: a.severity },
          annotations: {
            summary: a.summary,
            description: a.description,
            runbook_url: `${RUNBOOK_BASE}#${runbookAnchor(a.alert)}`,
          },
        })),
      },
    ],
  };
}
