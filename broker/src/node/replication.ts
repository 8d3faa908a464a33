// Partition replication on a cluster node (ADR 0007, docs/replication.md):
// the replica manager that leads or follows each replicated partition this
// node holds, and its metrics. A single node (file metastore) replicates
// nothing: every topic there has one copy.

import type { Logger } from "pino";
import { Counter, Gauge } from "prom-client";
import type { Config } from "../config.ts";
import type { ConsumerManager } from "../consumer/manager.ts";
import type { LogStore } from "../log/log-store.ts";
import type { Metastore } from "../meta/types.ts";
import type { BrokerMetrics } from "../metrics.ts";
import { ReplicaManager } from "../replication-io/replica-manager.ts";
import type { PeerPool } from "../rpc/client.ts";

export function openNodeReplication(d: {
  config: Config;
  metastore: Metastore;
  logs: LogStore;
  peers: PeerPool;
  consumers: ConsumerManager;
  volumeId: string;
  metrics: BrokerMetrics;
  logger: Logger;
  nowMs: () => number;
}): ReplicaManager {
  const { config } = d;
  const registers = [d.metrics.registry];
  const isrChanges = new Counter({
    name: "narad_replica_isr_changes_total",
    help: "ISR changes this node recorded as a partition leader, by kind (shrink, expand)",
    labelNames: ["topic", "kind"],
    registers,
  });
  const followerLag = new Gauge({
    name: "narad_replica_follower_lag_records",
    help: "Records between the leader's durable end and this follower's copy, as of its last fetch",
    labelNames: ["topic", "partition"],
    registers,
  });
  const manager = new ReplicaManager({
    nodeId: config.nodeId,
    volumeId: d.volumeId,
    metastore: d.metastore,
    logs: d.logs,
    peers: d.peers,
    consumers: d.consumers,
    options: {
      replicaLagMs: config.replica.lagMs,
      replicationTimeoutMs: config.replica.commitTimeoutMs,
      isrCheckIntervalMs: config.replica.isrCheckIntervalMs,
      isrRetryMs: config.replica.isrRetryMs,
      fetchMaxBytes: config.replica.fetchMaxBytes,
      fetchMaxWaitMs: config.replica.fetchMaxWaitMs,
      segmentBytes: config.log.segmentBytes,
      maxFrameBytes: config.log.maxFrameBytes,
      retryBackoffMs: config.replica.retryBackoffMs,
      frontierRefreshMs: config.replica.frontierRefreshMs,
      checkpointIntervalMs: config.replica.checkpointIntervalMs,
    },
    nowMs: d.nowMs,
    logger: d.logger.child({ component: "replication" }),
    events: {
      isrChanged: (topic, _partition, kind) => isrChanges.inc({ topic, kind }),
      followerProgress: (topic, partition, lag) =>
        followerLag.set({ topic, partition: String(partition) }, lag),
    },
  });
  new Gauge({
    name: "narad_replica_partitions",
    help: "Replicated partitions this node holds, by role (lead, follow, idle)",
    labelNames: ["role"],
    registers,
    collect() {
      const counts = { lead: 0, follow: 0, idle: 0 };
      for (const r of manager.roles()) counts[r.role]++;
      for (const [role, n] of Object.entries(counts)) this.set({ role }, n);
    },
  });
  return manager;
}
