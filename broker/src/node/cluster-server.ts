// The cluster RPC server of a node (cluster mode): peers' commits to the
// partitions it owns, reads and queue calls routed to it, the move source,
// forwarded produce, the re-init barrier and AdminStatus.

import type { Logger } from "pino";
import type { Security } from "../auth/setup.ts";
import type { Config } from "../config.ts";
import * as k from "../constants.ts";
import type { ConsumerManager } from "../consumer/manager.ts";
import type { LogStore } from "../log/log-store.ts";
import type { Metastore } from "../meta/types.ts";
import type { MoveSource } from "../moves/source.ts";
import type { ProducerRegistry } from "../producers/registry.ts";
import { leaderSource } from "../replication-io/leader-source.ts";
import type { ReplicaManager } from "../replication-io/replica-manager.ts";
import type { RpcMetrics } from "../rpc/metrics.ts";
import type { PbAdminStatusResponse, PbIngestRequest } from "../rpc/proto.ts";
import { type ClusterServer, type ClusterServerHooks, startClusterServer } from "../rpc/server.ts";
import { confirmProducerEpochHandler } from "./producer-registry.ts";

export async function startNodeClusterServer(d: {
  config: Config;
  metastore: Metastore;
  logs: LogStore;
  consumers: ConsumerManager;
  /** A peer's records landed in one of our partitions: wake what waits on it. */
  onCommitted: (topic: string, partition: number) => void;
  moveSource: MoveSource | undefined;
  /** The replicated partitions this node leads (ReplicaFetch's leader side). */
  replication: ReplicaManager | undefined;
  producerRegistry: ProducerRegistry | undefined;
  ingest: (records: PbIngestRequest["records"], from: string) => Promise<number>;
  adminStatus: () => PbAdminStatusResponse;
  security: Security;
  rpcMetrics: RpcMetrics;
  hooks: ClusterServerHooks | undefined;
  logger: Logger;
}): Promise<ClusterServer> {
  const { config, metastore, security, producerRegistry, logger } = d;
  const cluster = await startClusterServer(
    {
      nodeId: config.nodeId,
      metastore,
      logs: d.logs,
      onCommitted: d.onCommitted,
      consumers: d.consumers,
      consumeMaxWaitMs: config.consume.maxWaitMs,
      ...(d.moveSource !== undefined ? { moves: d.moveSource } : {}),
      // Replication's leader side (ReplicaFetch, OffsetForLeaderEpoch).
      replicas: leaderSource({
        partitionDir: (topic, partition) => d.logs.partitionDir(topic, partition),
        ...(d.replication !== undefined
          ? {
              ledPartition: (topic: string, partition: number) =>
                d.replication?.ledPartition(topic, partition),
              positionsFor: (topic: string, partition: number, replica: string, volumeId: string) =>
                d.replication?.positionsFor(topic, partition, replica, volumeId) ??
                Promise.resolve({ frontiers: [], fanout_cursors: [] }),
            }
          : {}),
        maxFetchBytes: Math.min(config.replica.fetchMaxBytes, Math.floor(k.rpcMaxMessageBytes / 2)),
        maxWaitMs: config.consume.maxWaitMs,
      }),
      ...(producerRegistry !== undefined
        ? { confirmProducerEpoch: confirmProducerEpochHandler({ producerRegistry, metastore, logger }) }
        : {}),
      // A draining peer's produce: into our WAL unless we refuse produce ourselves.
      ingest: d.ingest,
      adminStatus: d.adminStatus,
      readMaxRecords: config.read.maxRecords,
      readMaxBytes: config.read.maxBytes,
      metrics: d.rpcMetrics,
      logger: logger.child({ component: "rpc" }),
      ...(d.hooks ? { hooks: d.hooks } : {}),
    },
    {
      host: config.cluster.host,
      port: config.cluster.port,
      maxMessageBytes: k.rpcMaxMessageBytes,
      keepaliveTimeMs: k.rpcKeepaliveTimeMs,
      keepaliveTimeoutMs: k.rpcKeepaliveTimeoutMs,
      shutdownGraceMs: k.rpcShutdownGraceMs,
      interceptors: security.rpcServerInterceptors,
      ...(security.rpcTls ? { credentials: security.rpcTls.server } : {}),
    },
  );
  logger.info({ address: cluster.address }, "cluster RPC listening");
  return cluster;
}
