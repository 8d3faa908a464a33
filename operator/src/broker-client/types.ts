// The operator's view of a broker's admin HTTP API (broker/src/http/routes/admin.ts).
// Behind an interface so controller tests use a fake instead of sockets.

export interface BrokerWalStatus {
  pendingRecords: number;
  checkpoint: number;
  nextSeq: number;
}

export interface BrokerStatus {
  nodeId: string;
  ready: boolean;
  draining: boolean;
  wal: BrokerWalStatus;
  /** Partitions this broker still owns (reported by brokers with partition moves). */
  ownedPartitions?: number;
  /**
   * Moved-away partitions this broker still keeps because their new owner
   * does not serve them with its HWM yet (brokers with partition moves).
   */
  movedAwayCopies?: number;
  /**
   * The data volume's identity (its `volume-id` marker; replication, ADR
   * 0007). Absent from brokers that do not report one.
   */
  volume?: BrokerVolume;
}

/**
 * What a broker found in its data dir: `created` (no marker: a new or wiped
 * volume, a fresh uuid written) or `own` (its marker), or `foreign` (another
 * member's or cluster's marker, or one that does not parse: never served).
 */
export type BrokerVolume =
  | { state: "created" | "own"; uuid: string; memberId: string }
  | { state: "foreign"; reason: string; uuid: string | null };

/** A partition move as the DESTINATION broker reports it (GET /admin/v1/moves/{topic}/{partition}). */
export interface BrokerMove {
  state: "copying" | "ready" | "done" | "failed" | "cancelled";
  copiedBytes?: number;
  sourceHwm?: number;
  destHwm?: number;
  error?: string;
}

/** Where a broker's admin API answers: its pod IP (brokers bind POD_IP, never 0.0.0.0). */
export interface BrokerEndpoint {
  podIP: string;
  /** The member id (pod name), for errors and logs. */
  id: string;
}

export type TopicDataDeletion =
  | { done: true }
  /** The broker refused for now (e.g. it still sees the topic); retry later. */
  | { done: false; reason: string };

export interface BrokerClient {
  status(ep: BrokerEndpoint, signal?: AbortSignal): Promise<BrokerStatus>;
  /**
   * POST /admin/v1/drain?wait_ms=N: the broker refuses produce (503 +
   * Retry-After) and dispatches its WAL; waits up to waitMs for it to empty.
   * Returns the status after the wait (wal.pendingRecords 0 = drained).
   */
  drain(ep: BrokerEndpoint, waitMs: number, signal?: AbortSignal): Promise<BrokerStatus>;
  /** DELETE /admin/v1/drain: accept produce again. */
  cancelDrain(ep: BrokerEndpoint, signal?: AbortSignal): Promise<BrokerStatus>;
  /** DELETE /admin/v1/topics/{topic}/data: done once the node's local files are gone (idempotent). */
  deleteTopicData(ep: BrokerEndpoint, topic: string, signal?: AbortSignal): Promise<TopicDataDeletion>;
  /**
   * PUT /admin/v1/moves/{topic}/{partition} {"from"} on the destination:
   * start copying the partition from member `from` (idempotent).
   */
  startMove(
    ep: BrokerEndpoint,
    topic: string,
    partition: number,
    from: string,
    signal?: AbortSignal,
  ): Promise<BrokerMove>;
  /** GET /admin/v1/moves/{topic}/{partition}; undefined when the broker knows no such move (404). */
  getMove(
    ep: BrokerEndpoint,
    topic: string,
    partition: number,
    signal?: AbortSignal,
  ): Promise<BrokerMove | undefined>;
  /** DELETE /admin/v1/moves/{topic}/{partition}: cancel (ends the source's freeze). Idempotent: 404/409 are fine. */
  cancelMove(ep: BrokerEndpoint, topic: string, partition: number, signal?: AbortSignal): Promise<void>;
}

/** A transport failure or unexpected answer from a broker. */
export class BrokerClientError extends Error {
  readonly memberId: string;
  readonly statusCode: number | undefined;
  constructor(memberId: string, message: string, statusCode?: number, options?: ErrorOptions) {
    super(`broker ${memberId}: ${message}`, options);
    this.name = "BrokerClientError";
    this.memberId = memberId;
    this.statusCode = statusCode;
  }
}
