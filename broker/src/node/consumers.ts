// This node's queue consumption: per-(partition, group) queues of the
// partitions it owns (consumer/manager.ts), with the limits from constants.

import type { Logger } from "pino";
import { groupNamePattern } from "../api-contract.ts";
import type { Config } from "../config.ts";
import * as k from "../constants.ts";
import { ConsumerManager } from "../consumer/manager.ts";
import type { LogStore } from "../log/log-store.ts";
import type { Metastore } from "../meta/types.ts";
import type { BrokerMetrics } from "../metrics.ts";

export function createLocalConsumers(d: {
  config: Config;
  logs: LogStore;
  metastore: Metastore;
  metrics: BrokerMetrics;
  logger: Logger;
  /** Leases and long-polls run on the monotonic clock. */
  monoMs: () => number;
}): ConsumerManager {
  return new ConsumerManager({
    dataDir: d.config.dataDir,
    logs: d.logs,
    metastore: d.metastore,
    nowMs: d.monoMs,
    logger: d.logger.child({ component: "consumer" }),
    metrics: d.metrics,
    groupPattern: groupNamePattern,
    persistIntervalMs: k.consumerFrontierPersistIntervalMs,
    purgeIntervalMs: k.consumerPurgeIntervalMs,
    maxWaiters: k.consumerMaxWaiters,
    maxGroupsPerTopic: k.consumerMaxGroupsPerTopic,
    maxSkipsPerTake: k.consumerMaxSkipsPerTake,
    readMaxBytes: d.config.read.maxBytes,
  });
}
