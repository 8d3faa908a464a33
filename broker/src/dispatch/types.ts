// Contracts of the dispatcher: what it needs from the node (destinations,
// logging, metrics) and what it offers. Single node today; the cluster adds
// remote owners by implementing Destinations.commit over gRPC.

import type { Destination, RerouteReason } from "../core/dispatch-plan.ts";
import type { CommitRecord } from "../core/records.ts";
import type { CommitResult } from "../log/types.ts";

export type { Destination, MemberState } from "../core/dispatch-plan.ts";

/**
 * Where records go. resolve/partitionCount read the node's local replica of
 * assignments and membership (synchronous, cheap); commit and
 * confirmTopicDeleted do I/O.
 */
export interface Destinations {
  /** This node's member id: partitions it owns are committed locally whatever membership says. */
  readonly localNodeId: string;
  /**
   * Where the partition lives. With `topicUid` (the record's incarnation),
   * topic-missing also when the topic of that name now has another uid: the
   * record's incarnation was deleted and must not reach the namesake.
   */
  resolve(topic: string, partition: number, topicUid?: string): Destination;
  /** Partition count of an existing topic (siblings are 0..n-1); 0 if the topic is missing. */
  partitionCount(topic: string): number;
  /**
   * Commits records to the partition's log on `nodeId` (the local
   * PartitionLog.commitDurable, or a CommitBatch RPC to a peer). Must be
   * idempotent by (incarnation, seq): the dispatcher re-sends after a timeout.
   * Records carry the topic uid their lane resolved to; the owner refuses
   * (without appending) when its own view of the topic has another uid.
   * `deadlineMs` (same clock as the dispatcher's nowMs) lets an RPC carry the
   * deadline; the dispatcher enforces it anyway.
   */
  commit(
    nodeId: string,
    topic: string,
    partition: number,
    records: readonly CommitRecord[],
    deadlineMs: number,
  ): Promise<CommitResult>;
  /**
   * The stale-replica defense: true only if the topic is authoritatively gone
   * (local replica absent, watch caught up, a quorum read says 404). Records
   * are discarded only on true; false or a throw keeps them for the next pass.
   */
  confirmTopicDeleted(topic: string, topicUid?: string): Promise<boolean>;
  /**
   * What a failed commit() means, which only the transport can tell: whether
   * the records may have reached the owner's log (in doubt) and whether a
   * partition move's freeze caused it.
   */
  describeFailure(err: unknown): CommitFailure;
}

/** How a failed commit stands (Destinations.describeFailure). */
export interface CommitFailure {
  /**
   * "no": nothing can have reached the owner's log (a refusal it answered,
   * no connection, a move's freeze); "maybe": a timeout, a dropped
   * connection, an internal error or a partial success: it may have.
   */
  applied: "no" | "maybe";
  /** A partition move holds the partition: a brief expected hold, not a failing owner. */
  moving: boolean;
}

/** The pino methods the dispatcher uses (a pino Logger satisfies it). */
export interface DispatchLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export type DispatchErrorKind =
  | "read"
  | "plan"
  | "commit"
  | "timeout"
  | "reroute"
  | "confirm"
  | "checkpoint"
  | "park"
  | "done-set";

/** A lane that made no progress in the last pass (status and metrics). */
export interface StalledLaneStatus {
  topic: string;
  partition: number;
  nodeId: string;
  /** maintenance | no-live-sibling | in-doubt | idempotent | commit-failing | moving */
  reason: string;
  records: number;
  /** Age of its oldest record. */
  oldestAgeMs: number;
}
export type BatchOutcome = "ok" | "error" | "timeout" | "aborted";

/** Callbacks for metrics; metrics.ts maps them onto prom-client. */
export interface DispatchMetricsSink {
  /** A pass finished: its duration and how many undone records it looked at. */
  pass(seconds: number, records: number): void;
  /** One commit batch finished (histograms of size and latency, by outcome). */
  commitBatch(records: number, seconds: number, outcome: BatchOutcome): void;
  /** Records newly appended at their owner, and re-sends the owner recognised as duplicates. */
  committed(appended: number, duplicates: number): void;
  /** Records the owner dropped because their producer epoch was fenced. */
  fenced?(records: number): void;
  rerouted(records: number, reason: RerouteReason): void;
  /** In-doubt records rerouted because their hold expired (each may now be stored twice). */
  inDoubtExpired?(records: number): void;
  /** Records of a confirmed-deleted topic that were discarded. */
  discarded(records: number): void;
  /** Gauge: records held (Maintenance owner, no live sibling, in doubt) in the last pass. */
  held(records: number): void;
  /** Gauge: age of the oldest undone record seen in the last pass (0 when caught up). */
  lagSeconds(seconds: number): void;
  /** Gauges: the lanes the last pass left undone, and the records in the parked store. */
  stalled?(lanes: readonly StalledLaneStatus[], parkedRecords: number): void;
  error(kind: DispatchErrorKind): void;
}

export const noopDispatchMetrics: DispatchMetricsSink = {
  pass() {},
  commitBatch() {},
  committed() {},
  rerouted() {},
  discarded() {},
  held() {},
  lagSeconds() {},
  error() {},
};

/** Values come from config.ts (defaults: constants.ts dispatch*). */
export interface DispatcherOptions {
  idlePollMs: number;
  windowRecords: number;
  windowCapRecords: number;
  targetPerPartition: number;
  lookaheadWindows: number;
  rerouteAfterPasses: number;
  commitTimeoutMs: number;
  errorBackoffMs: number;
  commitFanout: number;
  maxBatchBytes: number;
  /**
   * How long a record whose commit failed without an answer is kept for its
   * owner when membership says reroute (dispatch-plan.ts I4); after that it is
   * rerouted and may be stored twice. Unset: held until the owner answers.
   */
  inDoubtHoldMs?: number;
  /** WAL bytes one pass reads and holds (with their encoded copies): the dispatcher's memory bound. Default maxBatchBytes × commitFanout. */
  maxPassBytes?: number;
  /**
   * At most one done-set save (done-set-store.ts) per this many ms, in the
   * background: a crash re-dispatches at most what was done since. Default 250.
   */
  doneSetSaveIntervalMs?: number;
  /** Ranges a done-set save keeps (the lowest; the rest stay memory). Default 50,000. */
  doneSetMaxRanges?: number;
}

export interface DispatcherStats {
  passes: number;
  /** Records newly appended at owners (duplicates excluded), since start. */
  committedRecords: number;
  /** Records still to dispatch: the WAL's pending count (nextSeq - checkpoint) plus parked records. */
  pendingRecords: number;
  /** Duration of the last pass. */
  lastPassMs: number;
  /** Records held in the last pass. */
  heldRecords: number;
  /** Records rerouted to siblings since start. */
  reroutedRecords: number;
  /** Failed passes, commits, reroutes, confirmations and checkpoint writes since start. */
  errors: number;
  checkpoint: number;
  /** Done seqs above the checkpoint (bounded by the lookahead). */
  skipSetRecords: number;
  /** Records in the parked store (counted in pendingRecords too). */
  parkedRecords: number;
}

export interface Dispatcher {
  start(): void;
  /** Stops the loop; in-flight commits are abandoned (not awaited past the pass); no timers remain. */
  stop(): Promise<void>;
  /** Resolves true once the WAL has nothing pending, false after timeoutMs (or on stop). */
  drain(timeoutMs: number): Promise<boolean>;
  stats(): DispatcherStats;
  /** The lanes the last pass left undone, with why and how old their oldest record is. */
  stalledLanes(): StalledLaneStatus[];
}
