// Composes one broker node from its parts: metastore, ingress WAL, partition
// logs, dispatcher and HTTP API. Owns the startup order (recover storage
// before listening) and the shutdown order (stop produce, drain the WAL into
// the logs, close everything).

import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Config } from "./config.ts";
import * as k from "./constants.ts";
import { ConsumerManager } from "./consumer/manager.ts";
import { createDispatcher } from "./dispatch/dispatcher.ts";
import { dispatchMetricsSink } from "./dispatch/metrics-sink.ts";
import type { Destinations } from "./dispatch/types.ts";
import { buildApp } from "./http/app.ts";
import type { BrokerServices } from "./http/services.ts";
import { type LogStore, openLogStore } from "./log/log-store.ts";
import { openFileMetastore } from "./meta/file-metastore.ts";
import type { Metastore } from "./meta/types.ts";
import { type BrokerMetrics, createBrokerMetrics } from "./metrics.ts";
import { acquireDataDirLock } from "./storage/data-dir-lock.ts";
import { nodeFileIo } from "./storage/file-io.ts";
import { meteredIo } from "./storage/metered-io.ts";
import { openIngressWal } from "./wal/ingress-wal.ts";

export interface RunningBroker {
  /** host:port the API listens on ("" when started with listen: false). */
  httpAddress: string;
  /** The fastify app, for inject() in tests. */
  app: FastifyInstance;
  /** Stops produce, drains the WAL (bounded), closes storage. Resolves whether the WAL fully drained. */
  shutdown(): Promise<boolean>;
}

/** Single node: every partition is local, membership is this node. */
function localDestinations(
  nodeId: string,
  metastore: Metastore,
  logs: LogStore,
  metrics: BrokerMetrics,
  onCommitted: (topic: string, partition: number) => void,
): Destinations {
  return {
    localNodeId: nodeId,
    resolve(topic, partition) {
      const t = metastore.getTopic(topic);
      if (t === undefined || partition >= t.partitions) return { kind: "topic-missing" };
      return { kind: "owner", nodeId: metastore.ownerOf(topic, partition), state: "Active" };
    },
    partitionCount: (topic) => metastore.getTopic(topic)?.partitions ?? 0,
    commit: async (_nodeId, topic, partition, records) => {
      const result = await (await logs.get(topic, partition)).commitDurable(records);
      if (result.appended > 0) onCommitted(topic, partition);
      return result;
    },
    confirmTopicDeleted: (topic) => metastore.confirmTopicDeleted(topic),
  };
}

export async function startBroker(
  config: Config,
  logger: Logger,
  opts: { listen?: boolean } = {},
): Promise<RunningBroker> {
  const nowMs = () => Date.now();
  await mkdir(config.dataDir, { recursive: true });
  const lock = await acquireDataDirLock(config.dataDir);
  const metrics = createBrokerMetrics({ defaultMetrics: true });
  const metastore = await openFileMetastore({
    dataDir: config.dataDir,
    nodeId: config.nodeId,
    address: `${config.http.host}:${config.http.port}`,
  });
  const wal = await openIngressWal({
    dir: join(config.dataDir, "ingress", "produce"),
    ...config.wal,
    io: meteredIo(nodeFileIo, {
      write: (bytes) => metrics.walGroupBytes.observe(bytes),
      sync: (seconds) => metrics.walFsyncSeconds.observe(seconds),
    }),
    logger: logger.child({ component: "wal" }),
  });
  const walStats = wal.stats();
  logger.info(
    {
      pending: walStats.pendingRecords,
      checkpoint: walStats.checkpoint,
      corruptFrames: walStats.corruptFrames,
    },
    "ingress WAL recovered",
  );
  const logs = await openLogStore({
    dataDir: config.dataDir,
    segmentBytes: config.log.segmentBytes,
    indexIntervalBytes: config.log.indexIntervalBytes,
    maxFrameBytes: config.log.maxFrameBytes,
    frameTargetBytes: config.dispatch.maxBatchBytes,
    hwmPersistIntervalMs: k.logHwmPersistIntervalMs,
    nowMs,
    logger: logger.child({ component: "log" }),
  });
  const consumers = new ConsumerManager({
    dataDir: config.dataDir,
    logs,
    metastore,
    nowMs,
    logger: logger.child({ component: "consumer" }),
    metrics,
    groupPattern: k.topicNamePattern,
    persistIntervalMs: k.consumerFrontierPersistIntervalMs,
    purgeIntervalMs: k.consumerPurgeIntervalMs,
    maxWaiters: k.consumerMaxWaiters,
    maxGroupsPerTopic: k.consumerMaxGroupsPerTopic,
    maxSkipsPerTake: k.consumerMaxSkipsPerTake,
    readMaxBytes: k.readMaxBytes,
  });
  const dispatcher = createDispatcher({
    wal,
    destinations: localDestinations(config.nodeId, metastore, logs, metrics, (topic, partition) =>
      consumers.notifyCommitted(topic, partition),
    ),
    incarnation: wal.incarnation,
    options: config.dispatch,
    logger: logger.child({ component: "dispatch" }),
    metrics: dispatchMetricsSink(metrics),
    nowMs,
  });

  let ready = false;
  let draining = false;
  const services: BrokerServices = {
    config,
    nodeId: config.nodeId,
    metastore,
    ingress: wal,
    logs,
    consumers,
    lifecycle: {
      ready: () => ready && !draining,
      draining: () => draining,
      startDrain: (reason) => {
        if (!draining)
          logger.info({ reason, pending: wal.stats().pendingRecords }, "draining: produce refused");
        draining = true;
      },
      cancelDrain: () => {
        if (draining) logger.info("drain cancelled: produce accepted again");
        draining = false;
      },
      waitDrained: (timeoutMs) => dispatcher.drain(timeoutMs),
    },
    metrics,
    nowMs,
  };
  const app = buildApp(services, logger);
  dispatcher.start();
  consumers.start();

  const retentionPass = async () => {
    const policies = new Map(
      metastore
        .listTopics()
        .map((t) => [t.name, { retentionMs: t.retention_ms, maxBytes: t.retention_bytes }]),
    );
    const deleted = await logs.retentionPass(policies);
    if (deleted > 0) logger.info({ segments: deleted }, "retention removed sealed segments");
  };
  const retentionTimer = setInterval(() => {
    retentionPass().catch((err: unknown) => logger.error({ err }, "retention pass failed"));
  }, config.log.retentionCheckIntervalMs);
  retentionTimer.unref();

  await app.listen({ host: config.http.host, port: config.http.port });
  const addr = app.server.address();
  const httpAddress =
    typeof addr === "object" && addr !== null ? `${addr.address}:${addr.port}` : String(addr);
  ready = true;

  let shuttingDown: Promise<boolean> | undefined;
  const shutdown = async (): Promise<boolean> => {
    // Order matters: refuse new produce first, then move what the WAL holds
    // into the partition logs, then stop serving and close storage.
    services.lifecycle.startDrain("shutdown");
    clearInterval(retentionTimer);
    const drained = await services.lifecycle.waitDrained(config.drainTimeoutMs);
    if (!drained)
      logger.warn({ pending: wal.stats().pendingRecords }, "drain timed out; the WAL keeps the rest");
    await dispatcher.stop();
    // Long-polls answer 204 now so app.close() does not wait for them; the
    // final frontier flush runs once no request can settle a lease any more.
    consumers.beginClose();
    await app.close();
    await consumers.close();
    await logs.closeAll();
    await wal.close();
    await metastore.close();
    await lock.release();
    return drained;
  };
  return {
    httpAddress,
    app,
    shutdown: () => {
      shuttingDown ??= shutdown();
      return shuttingDown;
    },
  };
}
