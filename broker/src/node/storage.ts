// A node's local storage: the ingress WAL (recovered on open) and the
// partition log store, with the metrics each reports.

import { join } from "node:path";
import type { Logger } from "pino";
import { Gauge } from "prom-client";
import type { Config } from "../config.ts";
import * as k from "../constants.ts";
import { type LogStore, type LogStoreOptions, openLogStore } from "../log/log-store.ts";
import type { BrokerMetrics } from "../metrics.ts";
import type { ProducerRegistry } from "../producers/registry.ts";
import { type FileIo, nodeFileIo } from "../storage/file-io.ts";
import { meteredIo } from "../storage/metered-io.ts";
import { openIngressWal } from "../wal/ingress-wal.ts";
import type { IngressWal } from "../wal/types.ts";

/** Opens (and so recovers) the ingress WAL under <data-dir>/ingress/produce. */
export async function openNodeWal(d: {
  config: Config;
  logger: Logger;
  metrics: BrokerMetrics;
  /** Test-only wrapper of the WAL's file I/O (StartBrokerOptions.walIo). */
  wrapIo: ((io: FileIo) => FileIo) | undefined;
}): Promise<IngressWal> {
  const { config, logger, metrics } = d;
  const wal = await openIngressWal({
    dir: join(config.dataDir, "ingress", "produce"),
    ...config.wal,
    io: meteredIo(d.wrapIo?.(nodeFileIo) ?? nodeFileIo, {
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
  return wal;
}

/** Opens the partition log store (logs open lazily) and registers its fd gauges. */
export async function openNodeLogs(d: {
  config: Config;
  logger: Logger;
  metrics: BrokerMetrics;
  producerRegistry: ProducerRegistry | undefined;
  topicExists: (topic: string) => boolean;
  /** Replication: how a partition may be opened now (LogStoreOptions.replicaMode). */
  replicaMode?: LogStoreOptions["replicaMode"];
  beforeDeleteTopic?: LogStoreOptions["beforeDeleteTopic"];
  nowMs: () => number;
}): Promise<LogStore> {
  const { config, metrics, producerRegistry } = d;
  const logs = await openLogStore({
    producerEpoch: (id) => producerRegistry?.epochOf(id),
    producerFence: () => producerRegistry?.fence(),
    dataDir: config.dataDir,
    segmentBytes: config.log.segmentBytes,
    indexIntervalBytes: config.log.indexIntervalBytes,
    maxFrameBytes: config.log.maxFrameBytes,
    frameTargetBytes: config.dispatch.maxBatchBytes,
    hwmPersistIntervalMs: k.logHwmPersistIntervalMs,
    nowMs: d.nowMs,
    logger: d.logger.child({ component: "log" }),
    topicExists: d.topicExists,
    maxOpenLogs: config.limits.maxOpenLogs,
    maxSegmentFds: config.limits.maxSegmentFds,
    onOpenRefused: () => metrics.limitRefusals.inc({ limit: "open_logs" }),
    ...(d.replicaMode !== undefined ? { replicaMode: d.replicaMode } : {}),
    ...(d.beforeDeleteTopic !== undefined ? { beforeDeleteTopic: d.beforeDeleteTopic } : {}),
  });
  // Read at scrape time: the sealed-segment handle cache (log/segment-handles.ts).
  new Gauge({
    name: "narad_segment_read_handles",
    help: "Sealed-segment read handles holding an fd (open, opening or closing); at most --max-segment-fds",
    registers: [metrics.registry],
    collect() {
      this.set(logs.segmentFds().open);
    },
  });
  new Gauge({
    name: "narad_segment_read_handle_waiters",
    help: "Reads waiting for a sealed-segment read handle (every handle is held by a read in flight)",
    registers: [metrics.registry],
    collect() {
      this.set(logs.segmentFds().waiting);
    },
  });
  return logs;
}
