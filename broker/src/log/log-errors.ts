// Error codes raised by partition logs and the log store. The HTTP/gRPC
// mapping lives with the callers (OFFSET_EXPIRED → 410 Gone, the rest → 5xx
// or 4xx as noted).

export type LogErrorCode =
  /** fsync succeeded but the frames read back did not match what was written (5xx, retryable). */
  | "COMMIT_VERIFY_FAILED"
  /** read() below the oldest retained offset (410). */
  | "OFFSET_EXPIRED"
  /** A replica fetch at an offset that is not a frame boundary at or below the HWM (replication). */
  | "OFFSET_OUT_OF_RANGE"
  /** The log was closed (5xx, retry after reopen). */
  | "LOG_CLOSED"
  /** A failed commit could not be rolled back; the log refuses commits until reopened (5xx). */
  | "LOG_FAILED"
  /** One record does not fit in a frame of maxFrameBytes (413). */
  | "RECORD_TOO_LARGE"
  /** A CommitRecord with a malformed incarnation or seq (caller bug, 400/500). */
  | "INVALID_RECORD"
  /** Topic name or partition index that could escape dataDir or is out of range (400). */
  | "INVALID_NAME"
  /** Commits refused while a partition move freezes this partition (503, retryable). */
  | "PARTITION_FROZEN"
  /** The partition is being installed by a partition move here (503, retryable). */
  | "PARTITION_MOVING"
  /** The topic no longer exists, so its directory may not be created again (404). */
  | "TOPIC_DELETED"
  /** Opening another partition log would pass the node's fd budget, --max-open-logs (503). */
  | "TOO_MANY_OPEN_LOGS"
  /** Replication: this node does not lead the partition (now); the caller re-reads the record (503, retryable). */
  | "NOT_LEADER"
  /** Replication: fewer recorded in-sync replicas than min_insync_replicas (503, retryable; nothing is lost). */
  | "NOT_ENOUGH_REPLICAS"
  /** Replication: appended on the leader but not on enough replicas in time (503, retryable; re-sent and deduped). */
  | "REPLICATION_TIMEOUT";

export class LogError extends Error {
  readonly code: LogErrorCode;
  constructor(code: LogErrorCode, message: string, options?: ErrorOptions) {
    super(`${code}: ${message}`, options);
    this.name = "LogError";
    this.code = code;
  }
}

export function isLogError(err: unknown, code?: LogErrorCode): err is LogError {
  return err instanceof LogError && (code === undefined || err.code === code);
}
