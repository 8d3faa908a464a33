// The broker's services as narrow interfaces: what the HTTP routes and the
// cluster RPC handlers need from the rest of the broker. Both layers import
// them from here, neither from the other, and neither depends on concrete
// modules.

import type { Config } from "./config.ts";
import type { ConsumerManager } from "./consumer/manager.ts";
import type { DecommissionControl } from "./core/decommission.ts";
import type { StoredRecord, WalRecordInput } from "./core/records.ts";
import type { CommitWaiters } from "./dispatch/commit-waiters.ts";
import type { StalledLaneStatus } from "./dispatch/types.ts";
import type { ChildLag } from "./fanout/engine.ts";
import type { PartitionLog, PartitionStats } from "./log/types.ts";
import type { Metastore } from "./meta/types.ts";
import type { BrokerMetrics } from "./metrics.ts";
import type { MoveStatus } from "./moves/destination.ts";
import type { ProducerRegistry } from "./producers/registry.ts";
import type { VolumeAtStart } from "./replication-io/volume-id-file.ts";
import type { WalStats } from "./wal/types.ts";

export interface Ingress {
  append(records: readonly WalRecordInput[]): Promise<unknown>;
  stats(): WalStats;
}

export interface Logs {
  get(topic: string, partition: number): Promise<PartitionLog>;
  deleteTopic(topic: string): Promise<void>;
}

/** What one read at a partition's owner returned. */
export interface PartitionRead {
  /** Records from the requested offset, below the HWM; empty at or above it. */
  records: StoredRecord[];
  highWatermark: number;
  oldestOffset: number;
}

/**
 * Reads and stats of a partition at its owner, wherever it is: this node's
 * log or a peer over the cluster RPC (rpc/partition-access.ts). Throws
 * NaradError: OFFSET_EXPIRED below the oldest offset, UNAVAILABLE (503 +
 * Retry-After) when the owner is down or unreachable.
 */
export interface Partitions {
  read(
    topic: string,
    partition: number,
    offset: number,
    maxRecords: number,
    maxBytes: number,
  ): Promise<PartitionRead>;
  stats(topic: string, partition: number): Promise<PartitionStats>;
}

export interface Lifecycle {
  /** True once startup recovery finished and until draining starts. */
  ready(): boolean;
  draining(): boolean;
  /** Stop accepting produce (503 + Retry-After) so the WAL can empty. */
  startDrain(reason: string): void;
  /** Accept produce again (a cancelled roll). */
  cancelDrain(): void;
  /** Resolves true once every WAL record is in its partition log, false after timeoutMs. */
  waitDrained(timeoutMs: number): Promise<boolean>;
}

/** Queue consumption with receipt handles and consumer groups (consumer/manager.ts). */
export type Consumers = Pick<
  ConsumerManager,
  "consume" | "listGroups" | "deleteGroup" | "validGroup" | "seek" | "partitionGroups"
> & {
  /** Synchronous on the owner; a Promise when forwarded to a peer (rpc/queue-access.ts). */
  settle(...args: Parameters<ConsumerManager["settle"]>): void | Promise<void>;
};

/** The outcome of forwarding produce to a peer's WAL (http/produce-forward.ts). */
export type ForwardOutcome =
  | { kind: "stored"; via: string }
  /** Every peer refused or could not be reached: nothing stored, retry elsewhere. */
  | { kind: "refused"; reason: string }
  /** A peer may have stored them (timeout, dropped call): the client must not assume either way. */
  | { kind: "inDoubt"; via: string; reason: string };

/** What the replica manager tells about this node's replicas (replication-io/replica-manager.ts). */
export interface ReplicaRoles {
  roles(): Array<{ topic: string; partition: number; role: "lead" | "follow" | "idle"; hwm?: number }>;
}

export interface BrokerServices {
  config: Config;
  nodeId: string;
  metastore: Metastore;
  ingress: Ingress;
  logs: Logs;
  /** Owner-routed reads (local log or peer RPC); produce stays local (WAL-first on any node). */
  partitions: Partitions;
  lifecycle: Lifecycle;
  /** The data dir's volume-id marker as found (or written) at start; reported in /admin/v1/status. */
  volume?: VolumeAtStart;
  /** Cluster mode: the replicated partitions this node holds and its role in each (admin status). */
  replicas?: ReplicaRoles;
  /**
   * Cluster mode: where produce goes while this node drains or is
   * decommissioned (http/produce-forward.ts): a healthy peer's WAL. Absent
   * (single node), such produce is refused with 503.
   */
  forwardProduce?: (records: readonly WalRecordInput[]) => Promise<ForwardOutcome>;
  consumers: Consumers;
  /** Partition moves into this node (cluster mode only). */
  moves?: MoveService;
  /** The dispatcher's stalled lanes and parked records (/admin/v1/status). */
  dispatch?: {
    stats(): { parkedRecords: number };
    stalledLanes(): StalledLaneStatus[];
  };
  metrics: BrokerMetrics;
  nowMs: () => number;
  /** Issues idempotent-producer identities (POST /v1/producers) and answers their current epoch. */
  producerRegistry?: ProducerRegistry;
  /** acks=all: waits for the owner's commit of WAL seqs. */
  commitWaiters?: CommitWaiters;
  /** Kubernetes: decommission requests carried out as scale changes of the NaradCluster (node/decommission.ts). */
  decommissions?: DecommissionControl;
  /** Fan-out cursors on this node: each child's lag (GET /v1/topics/{parent}/children). */
  fanout?: { lag(parent: string, child: string): ChildLag };
}

/** What the routes need from the move manager. */
export interface MoveService {
  start(topic: string, partition: number, from: string): Promise<MoveStatus>;
  get(topic: string, partition: number): MoveStatus | undefined;
  list(): MoveStatus[];
  cancel(topic: string, partition: number): Promise<MoveStatus>;
  /** Partitions moved away from this node whose local copy is kept until the new owner serves them. */
  heldCopies(): number;
}
