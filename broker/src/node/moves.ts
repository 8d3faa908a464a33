// Partition moves (cluster mode): the source side serves copies and
// freezes; the destination side runs moves the operator asks for. Both
// recover what a restart interrupted before the node serves.

import type { Logger } from "pino";
import type { Config } from "../config.ts";
import * as k from "../constants.ts";
import type { ConsumerManager } from "../consumer/manager.ts";
import { clusterAddressOf } from "../core/routing.ts";
import type { LogStore } from "../log/log-store.ts";
import type { Metastore } from "../meta/types.ts";
import { MoveManager, type MoveTiming } from "../moves/destination.ts";
import { MoveSource } from "../moves/source.ts";
import type { PeerPool } from "../rpc/client.ts";
import type { MoveService } from "../services.ts";

export type MoveTimingOverride = Partial<MoveTiming> & { sourceDeleteDelayMs?: number };

export interface NodeMoves {
  source: MoveSource;
  destination: MoveManager;
  /** The port the HTTP routes see (services.moves). */
  service: MoveService;
}

/** Undefined on a single node (file metastore): nothing moves. */
export async function openNodeMoves(d: {
  clustered: boolean;
  config: Config;
  metastore: Metastore;
  logs: LogStore;
  consumers: ConsumerManager;
  peers: PeerPool;
  logger: Logger;
  /** Test-only: shorter timings (StartBrokerOptions.moveTiming). */
  timing: MoveTimingOverride | undefined;
}): Promise<NodeMoves | undefined> {
  if (!d.clustered) return undefined;
  const { config, metastore, logs, consumers, peers, logger } = d;
  const moveTiming: MoveTiming = {
    chunkBytes: k.moveChunkBytes,
    catchUp: {
      closeEnoughBytes: k.moveCloseEnoughBytes,
      maxRounds: k.moveMaxCatchUpRounds,
      maxStalledRounds: k.moveMaxStalledRounds,
    },
    freezeTtlMs: k.moveFreezeTtlMs,
    renewIntervalMs: k.moveRenewIntervalMs,
    retryMs: k.moveRetryMs,
    ...d.timing,
  };
  const source = new MoveSource({
    nodeId: config.nodeId,
    metastore,
    logs,
    consumers,
    ownerVerify: (topic, partition, segments) => {
      const owner = metastore.members().find((m) => m.id === metastore.ownerOf(topic, partition));
      const address = owner === undefined ? undefined : clusterAddressOf(owner);
      if (address === undefined)
        return Promise.reject(new Error(`the owner of ${topic}/${partition} has no cluster address`));
      return peers.peer(address).moveVerify({ topic, partition, segments });
    },
    maxFreezeTtlMs: Math.max(k.moveFreezeTtlMs, moveTiming.freezeTtlMs),
    maxFetchBytes: k.moveChunkBytes,
    deleteDelayMs: d.timing?.sourceDeleteDelayMs ?? k.moveSourceDeleteDelayMs,
    logger: logger.child({ component: "move-source" }),
  });
  const destination = new MoveManager({
    nodeId: config.nodeId,
    dataDir: config.dataDir,
    metastore,
    logs,
    consumers,
    peers,
    onInstalled: (topic, partition) => source.forget(topic, partition),
    log: {
      segmentBytes: config.log.segmentBytes,
      indexIntervalBytes: config.log.indexIntervalBytes,
      maxFrameBytes: config.log.maxFrameBytes,
    },
    timing: moveTiming,
    logger: logger.child({ component: "moves" }),
  });
  await destination.recover();
  await source.resume();
  return {
    source,
    destination,
    service: {
      start: (t, p, from) => destination.start(t, p, from),
      get: (t, p) => destination.get(t, p),
      list: () => destination.list(),
      cancel: (t, p) => destination.cancel(t, p),
      heldCopies: () => source.heldCopies(),
    },
  };
}
