// The broker's Prometheus metrics, on a registry owned by one broker (no
// global registry, so tests can run several brokers in one process).

import { type StatsFs, statfsSync } from "node:fs";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

import { NARAD_VERSION } from "./version.ts";

export { NARAD_VERSION };

export interface BrokerMetrics {
  registry: Registry;
  producedMessages: Counter<"topic" | "partition">;
  producedBytes: Counter<"topic" | "partition">;
  produceRejected: Counter<"reason">;
  produceForwarded: Counter;
  ingestedForPeers: Counter;
  /** A hostile-client limit refused a request (docs/security.md), by limit name. */
  limitRefusals: Counter<"limit">;
  consumedMessages: Counter<"topic" | "partition">;
  httpRequests: Counter<"route" | "method" | "status">;
  httpDuration: Histogram<"route" | "method">;
  walGroupBytes: Histogram;
  walFsyncSeconds: Histogram;
  walPendingRecords: Gauge;
  walDiskBytes: Gauge;
  walCorruptFrames: Gauge;
  dispatchLagSeconds: Gauge;
  dispatchCommittedRecords: Counter;
  producerFencedRecords: Counter;
  /** Re-init barriers (docs/adr/0008-producer-fence-lease.md), by how they ended: every member confirmed, or the lease ran out. */
  producerFenceBarriers: Counter<"outcome">;
  /** Re-init barrier time, from the bump's write to the answer. */
  producerFenceBarrierSeconds: Histogram<"outcome">;
  /** Reads of the producer registry for a decision (cluster mode), by reason (lease, miss) and result (ok, error). */
  producerRegistryReads: Counter<"reason" | "result">;
  dispatchBatchRecords: Histogram;
  dispatchCommitSeconds: Histogram;
  dispatchErrors: Counter;
  dispatchPassErrors: Counter<"kind">;
  dispatchRerouted: Counter<"reason">;
  dispatchInDoubtExpired: Counter;
  dispatchDiscarded: Counter;
  dispatchHeld: Gauge;
  dispatchStalledLaneRecords: Gauge;
  dispatchOldestStalledSeconds: Gauge;
  dispatchParkedRecords: Gauge;
  logCommitSeconds: Histogram;
  consumerLag: Gauge<"topic" | "partition" | "group">;
  consumerInflight: Gauge<"topic" | "partition" | "group">;
  consumerAckedAhead: Gauge<"topic" | "partition" | "group">;
  consumerRedelivered: Counter<"topic" | "group">;
  /** Sets the function that refreshes the consumer gauges on each scrape. */
  /** Called on every scrape of the consumer gauges; the scrape waits for it. */
  onConsumerScrape(refresh: () => Promise<void>): void;
  admissionBudgetBytes: Gauge;
  admissionUsedBytes: Gauge;
  admissionWaiters: Gauge;
  admissionWaitSeconds: Histogram;
  admissionRejected: Counter<"reason">;
  rateLimited: Counter<"scope">;
  /** Drops every series labelled with this topic (the topic was deleted; its data is gone). */
  forgetTopic(topic: string): Promise<void>;
  /** Drops the series of one consumer group of a topic (the group was deleted). */
  forgetGroup(topic: string, group: string): Promise<void>;
  /** 1 while /readyz answers ready (set at scrape). */
  ready: Gauge;
  /** Members of the cluster by state, in this broker's view (set at scrape). */
  clusterMembers: Gauge<"state">;
}

/** Every member state, so a state with no member reads 0 rather than vanishing. */
export const memberStates = [
  "Joining",
  "Active",
  "Maintenance",
  "Down",
  "Decommissioning",
  "Removed",
] as const;

export function createBrokerMetrics(opts: {
  defaultMetrics: boolean;
  /** The data directory: its file system's free and total bytes are read at each scrape. */
  dataDir?: string;
}): BrokerMetrics {
  const registry = new Registry();
  // The standard process_* and nodejs_* names, unprefixed, as every Node.js exporter has them.
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  const r = [registry];
  new Gauge({
    name: "narad_build_info",
    help: "Always 1; the labels say which broker build runs",
    labelNames: ["version", "node_version"],
    registers: r,
  }).set({ version: NARAD_VERSION, node_version: process.version }, 1);
  const dataDir = opts.dataDir;
  if (dataDir !== undefined) {
    const disk = (pick: (fs: StatsFs) => number) => () => {
      try {
        return pick(statfsSync(dataDir));
      } catch {
        return Number.NaN; // the volume is gone or unreadable: say so, not 0
      }
    };
    const available = disk((fs) => fs.bavail * fs.bsize);
    const capacity = disk((fs) => fs.blocks * fs.bsize);
    new Gauge({
      name: "narad_disk_available_bytes",
      help: "Bytes available to the broker on the data directory's file system",
      registers: r,
      collect() {
        this.set(available());
      },
    });
    new Gauge({
      name: "narad_disk_capacity_bytes",
      help: "Size in bytes of the data directory's file system",
      registers: r,
      collect() {
        this.set(capacity());
      },
    });
  }
  const fsyncBuckets = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1];
  const countBuckets = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096];
  const consumerScrape: { refresh?: () => Promise<void> } = {};
  /** Removes every series of `metric` whose labels include all of `match`. */
  const forget = async (
    metric: Counter<string> | Gauge<string>,
    match: Record<string, string>,
  ): Promise<void> => {
    for (const v of (await metric.get()).values) {
      const labels = v.labels as Record<string, string | number>;
      if (Object.entries(match).every(([k, want]) => String(labels[k]) === want)) metric.remove(labels);
    }
  };
  const consumerLabels = ["topic", "partition", "group"] as const;
  return {
    registry,
    producedMessages: new Counter({
      name: "narad_messages_produced_total",
      help: "Messages accepted (202) per topic and partition",
      labelNames: ["topic", "partition"],
      registers: r,
    }),
    producedBytes: new Counter({
      name: "narad_bytes_produced_total",
      help: "Payload bytes accepted per topic and partition",
      labelNames: ["topic", "partition"],
      registers: r,
    }),
    limitRefusals: new Counter({
      name: "narad_limit_refusals_total",
      help: "Requests or connections refused by a limit against hostile clients, by limit",
      labelNames: ["limit"],
      registers: r,
    }),
    produceRejected: new Counter({
      name: "narad_produce_rejected_total",
      help: "Produce requests refused, by reason",
      labelNames: ["reason"],
      registers: r,
    }),
    produceForwarded: new Counter({
      name: "narad_produce_forwarded_records_total",
      help: "Records this node took while draining or decommissioning and stored on a peer's WAL (cluster RPC Ingest) before answering",
      registers: r,
    }),
    ingestedForPeers: new Counter({
      name: "narad_produce_ingested_for_peers_records_total",
      help: "Records a draining peer forwarded to this node's WAL",
      registers: r,
    }),
    consumedMessages: new Counter({
      name: "narad_messages_consumed_total",
      help: "Messages returned to readers per topic and partition",
      labelNames: ["topic", "partition"],
      registers: r,
    }),
    httpRequests: new Counter({
      name: "narad_http_requests_total",
      help: "HTTP requests by route, method and status",
      labelNames: ["route", "method", "status"],
      registers: r,
    }),
    httpDuration: new Histogram({
      name: "narad_http_request_duration_seconds",
      help: "HTTP request latency",
      labelNames: ["route", "method"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers: r,
    }),
    walGroupBytes: new Histogram({
      name: "narad_wal_group_commit_bytes",
      help: "Bytes written per WAL group commit",
      buckets: [1024, 16384, 65536, 262144, 1048576, 4194304, 8388608],
      registers: r,
    }),
    walFsyncSeconds: new Histogram({
      name: "narad_wal_fsync_seconds",
      help: "WAL fdatasync latency",
      buckets: fsyncBuckets,
      registers: r,
    }),
    walPendingRecords: new Gauge({
      name: "narad_wal_pending_records",
      help: "Records in the ingress WAL not yet dispatched",
      registers: r,
    }),
    walDiskBytes: new Gauge({
      name: "narad_wal_disk_bytes",
      help: "Bytes of ingress WAL segments on disk",
      registers: r,
    }),
    walCorruptFrames: new Gauge({
      name: "narad_wal_corrupt_frames",
      help: "WAL frames found corrupt at recovery (never served)",
      registers: r,
    }),
    dispatchLagSeconds: new Gauge({
      name: "narad_dispatch_lag_seconds",
      help: "Age of the oldest undispatched WAL record at the last pass",
      registers: r,
    }),
    dispatchCommittedRecords: new Counter({
      name: "narad_dispatch_committed_records_total",
      help: "Records committed to partition owners by the dispatcher",
      registers: r,
    }),
    producerFencedRecords: new Counter({
      name: "narad_producer_fenced_records_total",
      help: "Idempotent-producer records the partition owner dropped because their epoch was fenced by a newer one",
      registers: r,
    }),
    producerFenceBarriers: new Counter({
      name: "narad_producer_fence_barrier_total",
      help: "Idempotent-producer re-inits that bumped an epoch and waited for every broker to fence the old one, by outcome: confirmed (every member answered ConfirmProducerEpoch) or lease (waited out --producer-fence-lease-ms)",
      labelNames: ["outcome"],
      registers: r,
    }),
    producerFenceBarrierSeconds: new Histogram({
      name: "narad_producer_fence_barrier_seconds",
      help: "Time from an epoch bump's registry write to the re-init's answer, by barrier outcome",
      labelNames: ["outcome"],
      buckets: [0.001, 0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: r,
    }),
    producerRegistryReads: new Counter({
      name: "narad_producer_registry_reads_total",
      help: "Reads of the producer registry for a producer epoch decision (cluster mode), by reason (lease: the fence lease ran out or is in its last quarter; miss: an unknown id or a higher epoch; confirm: a ConfirmProducerEpoch above the view's epoch) and result (ok, error)",
      labelNames: ["reason", "result"],
      registers: r,
    }),
    dispatchBatchRecords: new Histogram({
      name: "narad_dispatch_batch_records",
      help: "Records per commit batch",
      buckets: countBuckets,
      registers: r,
    }),
    dispatchCommitSeconds: new Histogram({
      name: "narad_dispatch_commit_seconds",
      help: "Commit batch latency",
      buckets: fsyncBuckets,
      registers: r,
    }),
    dispatchErrors: new Counter({
      name: "narad_dispatch_errors_total",
      help: "Failed commit batches (retried later)",
      registers: r,
    }),
    dispatchPassErrors: new Counter({
      name: "narad_dispatch_pass_errors_total",
      help: "Dispatcher failures by kind (read, commit, timeout, checkpoint, ...)",
      labelNames: ["kind"],
      registers: r,
    }),
    dispatchRerouted: new Counter({
      name: "narad_dispatch_rerouted_records_total",
      help: "Records rerouted to a sibling partition, by reason",
      labelNames: ["reason"],
      registers: r,
    }),
    dispatchInDoubtExpired: new Counter({
      name: "narad_dispatch_in_doubt_expired_records_total",
      help: "Records whose commit failed without an answer, rerouted after their hold for the Down owner expired (each may be stored twice)",
      registers: r,
    }),
    dispatchDiscarded: new Counter({
      name: "narad_dispatch_discarded_records_total",
      help: "Records of confirmed-deleted topics discarded",
      registers: r,
    }),
    dispatchHeld: new Gauge({
      name: "narad_dispatch_held_records",
      help: "Records held in the last pass (Maintenance owner, no live sibling, in doubt for a Down owner)",
      registers: r,
    }),
    dispatchStalledLaneRecords: new Gauge({
      name: "narad_dispatch_stalled_lane_records",
      help: "Records of each lane the last pass left undone, by reason (maintenance, no-live-sibling, in-doubt, idempotent, commit-failing, moving)",
      labelNames: ["topic", "partition", "reason"],
      registers: r,
    }),
    dispatchOldestStalledSeconds: new Gauge({
      name: "narad_dispatch_oldest_stalled_seconds",
      help: "Age of the oldest record of any lane the last pass left undone (0 when none)",
      registers: r,
    }),
    dispatchParkedRecords: new Gauge({
      name: "narad_dispatch_parked_records",
      help: "Records of stalled lanes moved from the WAL into the parked store (still to dispatch)",
      registers: r,
    }),
    logCommitSeconds: new Histogram({
      name: "narad_log_commit_durable_seconds",
      help: "Partition commitDurable latency (append, fsync, read-back)",
      buckets: fsyncBuckets,
      registers: r,
    }),
    consumerLag: new Gauge({
      name: "narad_consumer_lag_messages",
      help: "High-watermark minus the group's committed frontier, per open queue",
      labelNames: consumerLabels,
      registers: r,
      collect: () => consumerScrape.refresh?.(),
    }),
    consumerInflight: new Gauge({
      name: "narad_consumer_inflight_messages",
      help: "Leased (delivered, not yet settled) messages per queue",
      labelNames: consumerLabels,
      registers: r,
      collect: () => consumerScrape.refresh?.(),
    }),
    consumerAckedAhead: new Gauge({
      name: "narad_consumer_acked_ahead_messages",
      help: "Acked-ahead plus corrupt offsets above the frontier per queue (they share the cap)",
      labelNames: consumerLabels,
      registers: r,
      collect: () => consumerScrape.refresh?.(),
    }),
    consumerRedelivered: new Counter({
      name: "narad_consumer_redelivered_total",
      help: "Messages delivered again after a lease expired or was nacked",
      labelNames: ["topic", "group"],
      registers: r,
    }),
    onConsumerScrape: (refresh) => {
      consumerScrape.refresh = refresh;
    },
    async forgetTopic(topic) {
      for (const m of [
        this.producedMessages,
        this.producedBytes,
        this.consumedMessages,
        this.consumerRedelivered,
      ])
        await forget(m, { topic });
    },
    async forgetGroup(topic, group) {
      await forget(this.consumerRedelivered, { topic, group });
    },
    admissionBudgetBytes: new Gauge({
      name: "narad_admission_budget_bytes",
      help: "The produce memory budget: bytes of produce bodies that may be in memory at once",
      registers: r,
    }),
    admissionUsedBytes: new Gauge({
      name: "narad_admission_used_bytes",
      help: "Budget bytes held by produce requests whose bodies are not yet durable",
      registers: r,
    }),
    admissionWaiters: new Gauge({
      name: "narad_admission_waiters",
      help: "Produce requests waiting for their share of the memory budget",
      registers: r,
    }),
    admissionWaitSeconds: new Histogram({
      name: "narad_admission_wait_seconds",
      help: "Time a produce waited for its share of the memory budget (0 when granted at once)",
      buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 15],
      registers: r,
    }),
    admissionRejected: new Counter({
      name: "narad_admission_rejected_total",
      help: "Produce requests refused by admission: timeout (429) or too_large (413, larger than the budget)",
      labelNames: ["reason"],
      registers: r,
    }),
    ready: new Gauge({
      name: "narad_ready",
      help: "1 while the broker is ready (recovered, not draining), as /readyz answers",
      registers: r,
    }),
    clusterMembers: new Gauge({
      name: "narad_cluster_members",
      help: "Members of the cluster by state, as this broker's membership view has them",
      labelNames: ["state"],
      registers: r,
    }),
    rateLimited: new Counter({
      name: "narad_rate_limited_total",
      help: "Produce requests refused with 429 by a rate limit, by scope (topic or client)",
      labelNames: ["scope"],
      registers: r,
    }),
  };
}
