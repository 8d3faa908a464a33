// gRPC status codes ↔ broker errors, in one table each way. The server turns
// whatever a handler throws into a status; the client turns a status back
// into a NaradError the HTTP layer already knows how to answer (404, 400,
// 410, 503 + Retry-After). Never 421: a client retries any node.

import { Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { type ApiErrorCode, isApiErrorCode } from "../api-errors.ts";
import { type ErrorCode, NaradError } from "../errors.ts";

/** Thrown by the server when this node does not own the partition (its replica disagrees with the caller's). */
export class NotOwnerError extends Error {
  readonly code = "NOT_OWNER";
}

export interface RpcFailure {
  code: status;
  details: string;
  /** The HTTP error code (api-errors.ts) the caller answers with, so a peer's topic_not_found stays one. */
  apiCode?: ApiErrorCode;
}

/** Metadata key of RpcFailure.apiCode. */
const apiCodeKey = "narad-api-code";

const fromNarad: Partial<Record<ErrorCode, status>> = {
  BAD_REQUEST: status.INVALID_ARGUMENT,
  NOT_FOUND: status.NOT_FOUND,
  CONFLICT: status.ALREADY_EXISTS,
  OFFSET_EXPIRED: status.OUT_OF_RANGE,
  PAYLOAD_TOO_LARGE: status.INVALID_ARGUMENT,
  TOO_MANY_REQUESTS: status.RESOURCE_EXHAUSTED,
  UNAVAILABLE: status.UNAVAILABLE,
  /** A stale receipt handle (Ack). */
  GONE: status.ABORTED,
};

/** Codes of storage errors (log/log-errors.ts, wal/errors.ts) that mean something to the caller. */
const fromStorageCode: Record<string, status> = {
  OFFSET_EXPIRED: status.OUT_OF_RANGE,
  INVALID_NAME: status.INVALID_ARGUMENT,
  INVALID_RECORD: status.INVALID_ARGUMENT,
  RECORD_TOO_LARGE: status.INVALID_ARGUMENT,
  LOG_CLOSED: status.UNAVAILABLE,
  LOG_FAILED: status.UNAVAILABLE,
  COMMIT_VERIFY_FAILED: status.UNAVAILABLE,
  NOT_OWNER: status.FAILED_PRECONDITION,
  // Replication: a refusal before anything is appended (the caller re-reads the record).
  NOT_LEADER: status.FAILED_PRECONDITION,
  // Replication: appended on the leader, not yet on enough replicas; a
  // re-send is deduped and waits again, so the caller treats it as in doubt.
  NOT_ENOUGH_REPLICAS: status.UNAVAILABLE,
  REPLICATION_TIMEOUT: status.UNAVAILABLE,
  // The owner's view of the topic is another incarnation than the caller's (core/topic-identity.ts).
  TOPIC_UID_MISMATCH: status.FAILED_PRECONDITION,
  PARTITION_FROZEN: status.UNAVAILABLE,
  PARTITION_MOVING: status.UNAVAILABLE,
  TOPIC_DELETED: status.NOT_FOUND,
  /** A node asked to take forwarded produce refuses produce itself (nothing appended). */
  INGEST_REFUSED: status.FAILED_PRECONDITION,
};

const movingPattern = /^PARTITION_(FROZEN|MOVING):/;

/**
 * Whether a commit failed only because a partition move has the partition
 * frozen (source) or not yet installed (destination): a brief, expected
 * hold, not evidence that the owner is failing. Works on the local log's
 * LogError and on the NaradError a peer's answer became.
 */
export function isPartitionMoving(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "PARTITION_FROZEN" || code === "PARTITION_MOVING") return true;
  const cause = err instanceof NaradError ? err.cause : undefined;
  return isServiceError(cause) && movingPattern.test(cause.details ?? "");
}

/** A commit that failed before any request left this node (e.g. the owner has no address): nothing can have landed. */
export class CommitNotSentError extends NaradError {}

/** A commit split into several requests that failed after some of them were acknowledged. */
export class PartialCommitError extends NaradError {}

/** gRPC codes an owner answers only without having appended anything. */
const refusals = new Set<number>([
  status.FAILED_PRECONDITION,
  status.NOT_FOUND,
  status.INVALID_ARGUMENT,
  status.OUT_OF_RANGE,
  status.ALREADY_EXISTS,
  status.RESOURCE_EXHAUSTED,
  status.PERMISSION_DENIED,
  status.UNAUTHENTICATED,
]);

/** grpc-js UNAVAILABLE details when the call never had a connection to go out on. */
const neverConnected = /No connection established|ECONNREFUSED|EHOSTUNREACH|ENETUNREACH/;

/**
 * Whether a failed commit is known not to have reached the owner's log: a
 * refusal the owner answered, or no connection at all. Everything else (a
 * timeout, a connection dropped mid-call, an internal error, a partial
 * success) leaves the records in doubt: the owner may have stored them.
 */
export function commitNeverApplied(err: unknown): boolean {
  if (err instanceof PartialCommitError) return false;
  // A local replicated log refused before appending (this node does not lead it now).
  if ((err as { code?: unknown } | null)?.code === "NOT_LEADER") return true;
  if (err instanceof CommitNotSentError || isPartitionMoving(err)) return true;
  const cause = err instanceof NaradError ? err.cause : err;
  if (!isServiceError(cause)) return false;
  if (refusals.has(cause.code)) return true;
  return cause.code === status.UNAVAILABLE && neverConnected.test(cause.details ?? cause.message);
}

/** What the server answers for an error thrown by a handler. */
export function toRpcFailure(err: unknown): RpcFailure {
  if (err instanceof NaradError)
    return { code: fromNarad[err.code] ?? status.INTERNAL, details: err.message, apiCode: err.apiCode };
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "TOPIC_DELETED")
    return { code: status.NOT_FOUND, details: message, apiCode: "topic_not_found" };
  if (typeof code === "string" && code in fromStorageCode)
    return { code: fromStorageCode[code]!, details: message };
  return { code: status.INTERNAL, details: message };
}

/** The ServiceError object grpc-js sends for a failure. */
export function toServiceError(f: RpcFailure): Partial<ServiceError> {
  const metadata = new Metadata();
  if (f.apiCode !== undefined) metadata.set(apiCodeKey, f.apiCode);
  return { code: f.code, details: f.details, metadata };
}

/** The peer's HTTP error code, when it sent one this node knows. */
function peerApiCode(err: ServiceError): ApiErrorCode | undefined {
  const v = err.metadata?.get(apiCodeKey)[0];
  return typeof v === "string" && isApiErrorCode(v) ? v : undefined;
}

function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as { code?: unknown }).code === "number";
}

/**
 * The NaradError a caller raises for a failed call to `peer`. Anything that
 * means "the owner cannot answer now" is 503 + Retry-After.
 */
export function fromRpcError(err: unknown, peer: string, retryAfterSeconds: number): NaradError {
  if (!isServiceError(err)) {
    return new NaradError("UNAVAILABLE", `partition owner ${peer} failed: ${String(err)}`, {
      retryAfterSeconds,
      cause: err,
    });
  }
  const details = err.details || err.message;
  // A code of another status than the kind's is dropped by NaradError.
  const apiCode = peerApiCode(err);
  switch (err.code) {
    case status.NOT_FOUND:
      return new NaradError("NOT_FOUND", details, { cause: err, apiCode });
    case status.INVALID_ARGUMENT:
      return new NaradError("BAD_REQUEST", details, { cause: err, apiCode });
    case status.OUT_OF_RANGE:
      return new NaradError("OFFSET_EXPIRED", details, { cause: err, apiCode });
    case status.ALREADY_EXISTS:
      return new NaradError("CONFLICT", details, { cause: err, apiCode });
    case status.ABORTED:
      return new NaradError("GONE", details, { cause: err, apiCode });
    case status.RESOURCE_EXHAUSTED:
      return new NaradError("TOO_MANY_REQUESTS", details, { retryAfterSeconds, cause: err, apiCode });
    case status.FAILED_PRECONDITION:
      return new NaradError("UNAVAILABLE", `partition ownership is changing (${peer}: ${details})`, {
        retryAfterSeconds,
        cause: err,
      });
    default:
      return new NaradError(
        "UNAVAILABLE",
        `partition owner ${peer} is unavailable (${status[err.code] ?? err.code}: ${details})`,
        { retryAfterSeconds, cause: err },
      );
  }
}
