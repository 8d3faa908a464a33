// The dispatcher and its on-disk state: parked records (stalled lanes) and
// the done set (seqs above the checkpoint already in their partition logs).

import { join } from "node:path";
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import * as k from "../constants.ts";
import { type ClusterDestinationHooks, clusterDestinations } from "../dispatch/cluster-destinations.ts";
import { type CommitWaiters, commitOutcomeMetrics, withCommitWaiters } from "../dispatch/commit-waiters.ts";
import { createDispatcher } from "../dispatch/dispatcher.ts";
import { type DoneSetStore, openDoneSetStore } from "../dispatch/done-set-store.ts";
import { dispatchMetricsSink } from "../dispatch/metrics-sink.ts";
import { defaultParkedMaxBytes, openParkedStore, type ParkedStore } from "../dispatch/parked-store.ts";
import type { Dispatcher } from "../dispatch/types.ts";
import type { LogStore } from "../log/log-store.ts";
import type { Metastore } from "../meta/types.ts";
import type { BrokerMetrics } from "../metrics.ts";
import type { PeerPool } from "../rpc/client.ts";
import type { IngressWal } from "../wal/types.ts";

export interface DispatchStores {
  parked: ParkedStore;
  doneSet: DoneSetStore;
}

/** Opens the parked store and the done set against the recovered WAL (read both before dispatching). */
export async function openDispatchStores(d: {
  config: Config;
  wal: IngressWal;
  logger: Logger;
}): Promise<DispatchStores> {
  const { config, wal, logger } = d;
  // Stalled lanes' records leave the WAL for here so the rest keeps flowing (dispatch/parked-store.ts).
  // Parked records are "still in the WAL" only from the first seq the WAL holds at or above
  // its checkpoint: a checkpoint reset to 1 (malformed file) sits below deleted segments.
  const walCheckpoint = wal.stats().checkpoint;
  const walHeld = await wal.read(walCheckpoint, 1, Number.MAX_SAFE_INTEGER);
  const parked = await openParkedStore({
    dir: join(config.dataDir, "parked"),
    incarnation: wal.incarnation,
    walCheckpoint: walHeld[0]?.seq ?? Math.max(walCheckpoint, wal.stats().nextSeq),
    maxBytes: defaultParkedMaxBytes,
    logger: logger.child({ component: "parked" }),
  });
  // The done seqs above the checkpoint, so a restart does not dispatch them again (dispatch/done-set-store.ts).
  const doneSet = await openDoneSetStore({
    dir: join(config.dataDir, "dispatch"),
    incarnation: wal.incarnation,
    checkpoint: walCheckpoint,
    nextSeq: wal.stats().nextSeq,
    logger: logger.child({ component: "dispatch" }),
  });
  return { parked, doneSet };
}

/** The dispatcher (not started): WAL records to their owners, local log or CommitBatch to a peer. */
export function createNodeDispatcher(d: {
  config: Config;
  stores: DispatchStores;
  wal: IngressWal;
  metastore: Metastore;
  logs: LogStore;
  peers: PeerPool;
  commitWaiters: CommitWaiters;
  /** Records landed in a local partition: wake what waits on it (queue consumers, fan-out). */
  onLocalCommitted: (topic: string, partition: number) => void;
  hooks: ClusterDestinationHooks | undefined;
  metrics: BrokerMetrics;
  logger: Logger;
  nowMs: () => number;
}): Dispatcher {
  const { config, wal, metrics } = d;
  return createDispatcher({
    parked: d.stores.parked,
    doneSet: d.stores.doneSet,
    wal,
    destinations: withCommitWaiters(
      clusterDestinations({
        nodeId: config.nodeId,
        metastore: d.metastore,
        logs: d.logs,
        peers: d.peers,
        onLocalCommitted: d.onLocalCommitted,
        retryAfterSeconds: k.retryAfterSeconds,
        ...(d.hooks ? { hooks: d.hooks } : {}),
      }),
      d.commitWaiters,
      commitOutcomeMetrics(metrics.registry),
    ),
    incarnation: wal.incarnation,
    options: config.dispatch,
    logger: d.logger.child({ component: "dispatch" }),
    metrics: dispatchMetricsSink(metrics),
    nowMs: d.nowMs,
  });
}
