import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

export type ReconcileKind = "NaradCluster" | "NaradTopic" | "NaradUser" | "NaradUserMirror";
export type ReconcileOutcome = "success" | "requeue" | "error";

/** The operator's Prometheus metrics, on their own registry (no globals). */
export class OperatorMetrics {
  readonly registry = new Registry();
  readonly reconcileTotal = new Counter({
    name: "narad_operator_reconcile_total",
    help: "Reconciles by kind and result (success, requeue, error).",
    labelNames: ["kind", "result"] as const,
    registers: [this.registry],
  });
  readonly reconcileDuration = new Histogram({
    name: "narad_operator_reconcile_duration_seconds",
    help: "Time spent in one reconcile.",
    labelNames: ["kind"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly reconcileErrors = new Counter({
    name: "narad_operator_reconcile_errors_total",
    help: "Reconciles that failed (retried with backoff).",
    labelNames: ["kind"] as const,
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: "narad_operator_queue_depth",
    help: "Keys waiting in the work queues (ready, not delayed).",
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: "narad_operator_leader",
    help: "1 while this replica holds the leader lease.",
    registers: [this.registry],
  });

  readonly moveAborts = new Counter({
    name: "narad_operator_move_aborts_total",
    help: "Partition moves aborted for making no progress past spec.moves.stallTimeoutSeconds, by cause (unreachable destination, or no progress).",
    labelNames: ["namespace", "cluster", "cause"] as const,
    registers: [this.registry],
  });
  readonly movesStuck = new Gauge({
    name: "narad_operator_moves_stuck",
    help: "Partition moves of a cluster that are stalled: being aborted, stuck past their owner swap, or waiting out a retry backoff.",
    labelNames: ["namespace", "cluster"] as const,
    registers: [this.registry],
  });

  readonly leaderElections = new Counter({
    name: "narad_operator_leader_elections_total",
    help: "New leaders the operator recorded for replicated partitions, by cause (leader_down, leader_volume, leader_not_in_isr, offline: the first live in-sync replica after an offline spell, leaving: moved off a member being removed, handoff: moved off a member before its planned restart, preferred: moved back to the first replica).",
    labelNames: ["namespace", "cluster", "topic", "cause"] as const,
    registers: [this.registry],
  });
  readonly underReplicatedPartitions = new Gauge({
    name: "narad_operator_under_replicated_partitions",
    help: "Partitions of a replicated topic with fewer live in-sync replicas than its replication factor (offline ones included).",
    labelNames: ["namespace", "cluster", "topic"] as const,
    registers: [this.registry],
  });
  readonly offlinePartitions = new Gauge({
    name: "narad_operator_offline_partitions",
    help: "Partitions of a replicated topic without a leader: no in-sync replica is live.",
    labelNames: ["namespace", "cluster", "topic"] as const,
    registers: [this.registry],
  });

  constructor(opts: { processMetrics?: boolean } = {}) {
    // The standard process_* and nodejs_* names, unprefixed.
    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry });
    this.leader.set(0);
    this.queueDepth.set(0);
  }

  observeReconcile(kind: ReconcileKind, seconds: number, outcome: ReconcileOutcome): void {
    this.reconcileTotal.inc({ kind, result: outcome });
    this.reconcileDuration.observe({ kind }, seconds);
    if (outcome === "error") this.reconcileErrors.inc({ kind });
  }
}
