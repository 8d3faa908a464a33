// Composes one broker node from its parts (broker/src/node/): metastore,
// ingress WAL, partition logs, dispatcher, cluster RPC and HTTP API. This file
// is the construction order only. It owns the startup order (recover storage
// before listening: the WAL, then what depends on it, then moves, then the
// servers); the shutdown order (stop produce, drain the WAL into the logs,
// close everything) lives in node/shutdown.ts.

import { mkdir } from "node:fs/promises";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { openSecurity } from "./auth/setup.ts";
import type { Config } from "./config.ts";
import * as k from "./constants.ts";
import type { ClusterDestinationHooks } from "./dispatch/cluster-destinations.ts";
import { CommitWaiters } from "./dispatch/commit-waiters.ts";
import { FanoutEngine } from "./fanout/engine.ts";
import { buildApp } from "./http/app.ts";
import { needsLoopbackForward, startLoopbackForward } from "./http/loopback-forward.ts";
import type { Metastore } from "./meta/types.ts";
import { createBrokerMetrics } from "./metrics.ts";
import { adminStatusOf } from "./node/admin-status.ts";
import { startNodeClusterServer } from "./node/cluster-server.ts";
import { clusterServices } from "./node/cluster-services.ts";
import { createLocalConsumers } from "./node/consumers.ts";
import { nodeDecommissions } from "./node/decommission.ts";
import { createNodeDispatcher, openDispatchStores } from "./node/dispatch.ts";
import { createNodeLifecycle } from "./node/lifecycle.ts";
import { openNodeMetastore } from "./node/metastore.ts";
import { type MoveTimingOverride, openNodeMoves } from "./node/moves.ts";
import { peerIngestHandler } from "./node/peer-ingest.ts";
import { openPeerPool } from "./node/peers.ts";
import { openNodeProducerRegistry } from "./node/producer-registry.ts";
import { openNodeReplication } from "./node/replication.ts";
import { startRetentionTimer } from "./node/retention.ts";
import { nodeStop } from "./node/shutdown.ts";
import { openNodeLogs, openNodeWal } from "./node/storage.ts";
import type { RegistryStore } from "./producers/registry.ts";
import type { ReplicaManager } from "./replication-io/replica-manager.ts";
import { ensureVolumeId } from "./replication-io/volume-id-file.ts";
import { createRpcMetrics } from "./rpc/metrics.ts";
import { createPartitionAccess } from "./rpc/partition-access.ts";
import type { ClusterServer, ClusterServerHooks } from "./rpc/server.ts";
import type { BrokerServices } from "./services.ts";
import { acquireDataDirLock } from "./storage/data-dir-lock.ts";
import type { FileIo } from "./storage/file-io.ts";

export interface RunningBroker {
  /** host:port the API listens on ("" when started with listen: false). */
  httpAddress: string;
  /** The fastify app, for inject() in tests. */
  app: FastifyInstance;
  /** Stops produce, drains the WAL (bounded), closes storage. Resolves whether the WAL fully drained. */
  shutdown(): Promise<boolean>;
  /** The cluster RPC server (cluster mode: a metastore other than the file one), else undefined. */
  cluster: ClusterServer | undefined;
  /**
   * Test only: stops at once without draining (in-flight commits abandoned,
   * the WAL checkpoint left where it is), as a crash would, minus the kill.
   */
  crash(): Promise<void>;
}

export interface StartBrokerOptions {
  listen?: boolean;
  /** Use this metastore instead of the file one (in-process cluster tests). */
  metastore?: Metastore;
  /** Test-only fault injection in the cluster data path. */
  testHooks?: { server?: ClusterServerHooks; destinations?: ClusterDestinationHooks };
  /** Use this producer-registry store instead of the data dir's file (in-process cluster tests share one). */
  producerRegistryStore?: RegistryStore;
  /** Test-only: wraps the ingress WAL's file I/O (broker/test/harness/faulty-serve.ts injects EIO, ENOSPC, slow fsyncs). */
  walIo?: (io: FileIo) => FileIo;
  /** Test-only: shorter partition-move timings (freeze ttl, renewal, retry, source delete delay). */
  moveTiming?: MoveTimingOverride;
}

export async function startBroker(
  config: Config,
  logger: Logger,
  opts: StartBrokerOptions = {},
): Promise<RunningBroker> {
  const nowMs = () => Date.now();
  // Leases, visibility timeouts and long-poll deadlines run on a monotonic
  // clock (epoch-like ms: wall time at process start + monotonic elapsed), so
  // a wall-clock step (NTP, an operator setting the date) neither expires
  // every lease at once nor keeps one for an hour. Record timestamps and
  // retention stay on the wall clock.
  const monoMs = () => performance.timeOrigin + performance.now();
  await mkdir(config.dataDir, { recursive: true });
  const lock = await acquireDataDirLock(config.dataDir);
  // Replication's volume identity (ADR 0007): written on a volume's first
  // start, reported in /admin/v1/status. The cluster uid comes from the
  // operator (NARAD_CLUSTER_UID; "" when not known).
  const volume = await ensureVolumeId(config.dataDir, {
    clusterUid: config.clusterUid,
    memberId: config.nodeId,
  });
  if (volume.kind === "foreign")
    logger.warn({ reason: volume.reason }, "data dir holds a foreign volume-id marker");
  const metrics = createBrokerMetrics({ defaultMetrics: true, dataDir: config.dataDir });
  const metastore = await openNodeMetastore(config, logger, opts.metastore);
  // Cluster mode: peers own partitions. The file metastore is one node, so it
  // needs no RPC server (and several single nodes can share a machine).
  const clustered = metastore.kind !== "file";
  const wal = await openNodeWal({ config, logger, metrics, wrapIo: opts.walIo });
  const producerRegistry = await openNodeProducerRegistry({
    config,
    logger,
    metrics,
    metastore,
    clustered,
    storeOverride: opts.producerRegistryStore,
    // The pool opens below; the barrier asks peers only once the node serves.
    peer: (address) => peers.peer(address),
    nowMs,
    monoMs,
  });
  const commitWaiters = new CommitWaiters();
  // Replicated partitions open only on their leader (bound once the manager exists below).
  let replication: ReplicaManager | undefined;
  const logs = await openNodeLogs({
    config,
    logger,
    metrics,
    producerRegistry,
    topicExists: (topic) => metastore.getTopic(topic) !== undefined,
    replicaMode: (topic, partition) => replication?.openMode(topic, partition) ?? { kind: "single" },
    beforeDeleteTopic: async (topic) => replication?.releaseTopic(topic),
    nowMs,
  });
  const consumers = createLocalConsumers({ config, logs, metastore, metrics, logger, monoMs });
  const rpcMetrics = createRpcMetrics(metrics.registry);
  const security = await openSecurity(config, logger, nowMs, clustered);
  const peers = openPeerPool({ security, rpcMetrics, metastore });
  // Cluster mode: lead or follow every replicated partition this node holds.
  replication = clustered
    ? openNodeReplication({
        config,
        metastore,
        logs,
        peers,
        consumers,
        volumeId: volume.kind === "foreign" ? "" : volume.identity.uuid,
        metrics,
        logger,
        nowMs,
      })
    : undefined;
  const dispatchStores = await openDispatchStores({ config, wal, logger });
  // Fan-out cursors of the parent partitions this node owns (fanout/engine.ts).
  const fanout = new FanoutEngine({
    nodeId: config.nodeId,
    metastore,
    logs,
    wal,
    registry: metrics.registry,
    logger: logger.child({ component: "fanout" }),
    nowMs,
  });
  const onCommitted = (topic: string, partition: number) => {
    consumers.notifyCommitted(topic, partition);
    fanout.notifyCommitted(topic, partition);
  };
  const dispatcher = createNodeDispatcher({
    config,
    stores: dispatchStores,
    wal,
    metastore,
    logs,
    peers,
    commitWaiters,
    onLocalCommitted: onCommitted,
    hooks: opts.testHooks?.destinations,
    metrics,
    logger,
    nowMs,
  });
  const partitions = createPartitionAccess({
    nodeId: config.nodeId,
    metastore,
    logs,
    peers,
    retryAfterSeconds: k.retryAfterSeconds,
  });
  // Recovers interrupted moves before anything serves.
  const moves = await openNodeMoves({
    clustered,
    config,
    metastore,
    logs,
    consumers,
    peers,
    logger,
    timing: opts.moveTiming,
  });
  const state = createNodeLifecycle({
    nodeId: config.nodeId,
    metastore,
    logger,
    walPending: () => wal.stats().pendingRecords,
    waitDrained: (timeoutMs) => dispatcher.drain(timeoutMs),
  });
  const services: BrokerServices = {
    config,
    nodeId: config.nodeId,
    metastore,
    ingress: wal,
    logs,
    partitions,
    // Cluster mode: consume/ack of a peer's partition go to its owner, and
    // produce this node refuses is forwarded (these replace `consumers`).
    consumers,
    ...(clustered
      ? clusterServices({ nodeId: config.nodeId, metastore, local: consumers, peers, logger, monoMs })
      : {}),
    ...(moves !== undefined ? { moves: moves.service } : {}),
    lifecycle: state.lifecycle,
    volume,
    ...(replication !== undefined ? { replicas: replication } : {}),
    dispatch: dispatcher,
    metrics,
    nowMs,
    ...(producerRegistry !== undefined ? { producerRegistry } : {}),
    commitWaiters,
    fanout,
    ...nodeDecommissions(config, metastore, logger),
  };
  const app = buildApp(services, logger, security.appOptions(metrics.registry));
  replication?.start();
  dispatcher.start();
  consumers.start();
  const stopRetention = startRetentionTimer({
    metastore,
    logs,
    intervalMs: config.log.retentionCheckIntervalMs,
    logger,
  });

  const cluster = clustered
    ? await startNodeClusterServer({
        config,
        metastore,
        logs,
        consumers,
        onCommitted,
        moveSource: moves?.source,
        replication,
        producerRegistry,
        ingest: peerIngestHandler({
          nodeId: config.nodeId,
          metastore,
          wal,
          refusing: () => state.lifecycle.draining() || !state.isReady(),
          metrics,
          logger,
        }),
        adminStatus: adminStatusOf({
          nodeId: config.nodeId,
          metastore,
          wal,
          parkedRecords: () => dispatchStores.parked.size,
          ready: () => state.lifecycle.ready(),
          draining: () => state.isDraining(),
        }),
        security,
        rpcMetrics,
        hooks: opts.testHooks?.server,
        logger,
      })
    : undefined;

  await app.listen({ host: config.http.host, port: config.http.port });
  const addr = app.server.address();
  const httpAddress =
    typeof addr === "object" && addr !== null ? `${addr.address}:${addr.port}` : String(addr);
  const loopback =
    config.loopbackForward && typeof addr === "object" && addr !== null && needsLoopbackForward(addr.address)
      ? await startLoopbackForward({ host: addr.address, port: addr.port }, logger)
      : undefined;
  security.startTlsReload();
  state.markReady();
  fanout.start();

  const stop = nodeStop({
    lifecycle: state.lifecycle,
    stopRetention,
    fanout,
    dispatcher,
    moves,
    cluster,
    replication,
    consumers,
    app,
    loopback,
    peers,
    logs,
    wal,
    producerRegistry,
    metastore,
    security,
    lock,
    drainTimeoutMs: config.drainTimeoutMs,
    logger,
  });
  return { httpAddress, app, shutdown: stop.shutdown, cluster, crash: stop.crash };
}
