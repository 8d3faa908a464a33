// The order a node stops in. A graceful shutdown refuses new produce, moves
// what the WAL holds into the partition logs, then stops serving and closes
// storage; a crash (tests) skips the drain, as a kill would.

import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Security } from "../auth/setup.ts";
import type { ConsumerManager } from "../consumer/manager.ts";
import type { Dispatcher } from "../dispatch/types.ts";
import type { FanoutEngine } from "../fanout/engine.ts";
import { closeHttp } from "../http/close.ts";
import type { LoopbackForward } from "../http/loopback-forward.ts";
import type { LogStore } from "../log/log-store.ts";
import type { Metastore } from "../meta/types.ts";
import type { ProducerRegistry } from "../producers/registry.ts";
import type { ReplicaManager } from "../replication-io/replica-manager.ts";
import type { PeerPool } from "../rpc/client.ts";
import type { ClusterServer } from "../rpc/server.ts";
import type { Lifecycle } from "../services.ts";
import type { IngressWal } from "../wal/types.ts";
import type { NodeMoves } from "./moves.ts";

export interface NodeParts {
  lifecycle: Lifecycle;
  stopRetention: () => void;
  fanout: FanoutEngine;
  dispatcher: Dispatcher;
  moves: NodeMoves | undefined;
  cluster: ClusterServer | undefined;
  replication: ReplicaManager | undefined;
  consumers: ConsumerManager;
  app: FastifyInstance;
  /** The 127.0.0.1 forward to the HTTP listener (--loopback-forward), if it runs. */
  loopback: LoopbackForward | undefined;
  peers: PeerPool;
  logs: LogStore;
  wal: IngressWal;
  producerRegistry: ProducerRegistry | undefined;
  metastore: Metastore;
  security: Security;
  lock: { release(): Promise<void> };
  drainTimeoutMs: number;
  logger: Logger;
}

export interface NodeStop {
  /** Resolves whether the WAL fully drained; a second call returns the first's promise. */
  shutdown(): Promise<boolean>;
  crash(): Promise<void>;
}

export function nodeStop(p: NodeParts): NodeStop {
  const shutdown = async (): Promise<boolean> => {
    // Order matters: refuse new produce first, then move what the WAL holds
    // into the partition logs, then stop serving and close storage.
    p.lifecycle.startDrain("shutdown");
    p.stopRetention();
    // Before the drain: a cursor's last batch lands in the WAL the drain then empties.
    await p.fanout.close();
    const drained = await p.lifecycle.waitDrained(p.drainTimeoutMs);
    if (!drained)
      p.logger.warn({ pending: p.wal.stats().pendingRecords }, "drain timed out; the WAL keeps the rest");
    await p.dispatcher.stop();
    await closeRest();
    return drained;
  };
  const closeRest = async (): Promise<void> => {
    // Peers' commits to our partitions are served until here (our logs are
    // still open); in-flight ones finish within the RPC grace.
    await p.moves?.destination.close();
    p.moves?.source.close();
    await p.cluster?.close();
    // Leaders stop (commits still waiting for replicas fail NOT_LEADER and
    // stay in their senders' WALs), followers stop fetching.
    await p.replication?.close();
    // Long-polls answer 204 now so app.close() does not wait for them; the
    // final frontier flush runs once no request can settle a lease any more.
    p.consumers.beginClose();
    await closeHttp(p.app);
    // After the HTTP close: forwarded requests in flight were answered there.
    await p.loopback?.close();
    // Only now: produce still arriving while the HTTP server closed was
    // forwarded to a peer over these channels.
    p.peers.close();
    await p.consumers.close();
    await p.logs.closeAll();
    await p.wal.close();
    await p.producerRegistry?.close();
    await p.metastore.close();
    p.security.close();
    await p.lock.release();
  };
  const crash = async (): Promise<void> => {
    p.stopRetention();
    p.cluster?.kill();
    await p.fanout.close();
    await p.dispatcher.stop();
    await closeRest();
  };
  let shuttingDown: Promise<boolean> | undefined;
  return {
    shutdown: () => {
      shuttingDown ??= shutdown();
      return shuttingDown;
    },
    crash: async () => {
      shuttingDown ??= crash().then(() => false);
      await shuttingDown;
    },
  };
}
