// Typed errors of the Narad client. Every error carries the HTTP status (0
// when no response came back), a stable code, and a hint that says what to do.

export type NaradErrorCode =
  | "TOPIC_NOT_FOUND"
  | "NOT_FOUND"
  | "TOPIC_EXISTS"
  | "TOPIC_DELETED"
  | "CONFLICT"
  | "PAYLOAD_TOO_LARGE"
  | "UNAVAILABLE"
  | "STALE_RECEIPT"
  | "OFFSET_EXPIRED"
  | "BAD_REQUEST"
  | "HTTP_ERROR"
  | "PRODUCER_FENCED"
  | "OUT_OF_ORDER_SEQUENCE"
  | "UNKNOWN_PRODUCER_ID"
  | "BUFFER_FULL"
  | "DELIVERY_TIMEOUT"
  | "DELIVERY_IN_DOUBT"
  | "UNAUTHENTICATED"
  | "FORBIDDEN"
  | "CLOSED";

export class NaradError extends Error {
  readonly status: number;
  readonly code: NaradErrorCode;
  readonly hint: string;
  /** The broker's machine-readable `code` of the answer (`commit_timeout`, …), when there was one. */
  brokerCode: string | undefined;
  /**
   * Set by a producer on the errors it rejects deliveries with: the records
   * were definitely not stored (every attempt was refused before the WAL, or
   * none left), so re-sending them cannot store them twice.
   */
  notStored = false;
  /**
   * Set by a producer on the errors it rejects deliveries with: the records
   * may or may not be stored (an attempt got no answer, or one saying they
   * will still be committed). See docs/idempotent-producer.md for what to do.
   */
  inDoubt = false;

  constructor(status: number, code: NaradErrorCode, message: string, hint: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "NaradError";
    this.status = status;
    this.code = code;
    this.hint = hint;
    this.brokerCode = undefined;
  }
}

export class TopicNotFoundError extends NaradError {
  readonly topic: string;
  constructor(topic: string, message = `topic "${topic}" not found`) {
    super(404, "TOPIC_NOT_FOUND", message, `create it first: narad topic add ${topic} (or topics.create)`);
    this.name = "TopicNotFoundError";
    this.topic = topic;
  }
}

export class TopicExistsError extends NaradError {
  constructor(message: string) {
    super(409, "TOPIC_EXISTS", message, "pick another name, or use the existing topic (topics.get)");
    this.name = "TopicExistsError";
  }
}

export class PayloadTooLargeError extends NaradError {
  constructor(message: string, status = 413) {
    super(
      status,
      "PAYLOAD_TOO_LARGE",
      message,
      "split the message (the broker takes at most 1 MiB per record, --max-body-bytes) or store it elsewhere and send a reference",
    );
    this.name = "PayloadTooLargeError";
  }
}

export class UnauthenticatedError extends NaradError {
  constructor(message: string) {
    super(
      401,
      "UNAUTHENTICATED",
      message,
      "give credentials: auth {username, password} or {token} (CLI: --user/--password, --token or NARAD_TOKEN)",
    );
    this.name = "UnauthenticatedError";
  }
}

export class ForbiddenError extends NaradError {
  constructor(message: string) {
    super(403, "FORBIDDEN", message, "ask an admin for a grant of that action on the topic (users file)");
    this.name = "ForbiddenError";
  }
}

export class UnavailableError extends NaradError {
  /** How long the broker asked us to wait (Retry-After), when it said. */
  readonly retryAfterMs: number | undefined;
  constructor(message: string, opts: { status?: number; retryAfterMs?: number; cause?: unknown } = {}) {
    super(
      opts.status ?? 503,
      "UNAVAILABLE",
      message,
      "the broker is draining, overloaded or unreachable: retry later (after retryAfterMs), or give the client more urls to fail over to",
      opts.cause,
    );
    this.name = "UnavailableError";
    this.retryAfterMs = opts.retryAfterMs;
  }
}

export class StaleReceiptError extends NaradError {
  constructor(message: string) {
    super(
      410,
      "STALE_RECEIPT",
      message,
      "the lease expired, was settled or predates a broker restart; the message will be (or was) redelivered. Process faster, or extend the lease (visibilityExtendMs / extend())",
    );
    this.name = "StaleReceiptError";
  }
}

export class OffsetExpiredError extends NaradError {
  constructor(message: string) {
    super(
      410,
      "OFFSET_EXPIRED",
      message,
      "retention removed that offset: read from the partition's oldest_offset (topics.get)",
    );
    this.name = "OffsetExpiredError";
  }
}

export class BadRequestError extends NaradError {
  constructor(message: string, status = 400) {
    super(
      status,
      "BAD_REQUEST",
      message,
      "the broker refused the request as malformed: fix the argument it names",
    );
    this.name = "BadRequestError";
  }
}

/** 409 "producer fenced": a newer epoch of this producerId has written; this instance is a zombie. */
export class FencedProducerError extends NaradError {
  constructor(message: string) {
    super(
      409,
      "PRODUCER_FENCED",
      message,
      "another instance of this producer (same producerId, higher epoch) took over: stop this one, or start it again with a higher epoch",
    );
    this.name = "FencedProducerError";
  }
}

/**
 * 409 out_of_order_sequence: the owner refused the batch's sequences (gap,
 * overlap, older or reused seq); nothing of it was stored. The producer
 * handles it (waits for earlier batches, or re-initialises); it reaches the
 * application only when a re-initialised identity is refused too.
 */
export class OutOfOrderSequenceError extends NaradError {
  constructor(message: string) {
    super(
      409,
      "OUT_OF_ORDER_SEQUENCE",
      message,
      "the producer's sequences and the broker's disagree (an earlier batch of this partition failed, or the identity is shared): close this producer and start a new one",
    );
    this.name = "OutOfOrderSequenceError";
  }
}

/**
 * 400 unknown_producer_id: the broker's registry does not know this producer
 * id (lost, or the id came from another cluster). Nothing of the request was
 * stored; an idempotent producer re-initialises its identity and re-sends.
 */
export class UnknownProducerIdError extends NaradError {
  constructor(message: string) {
    super(
      400,
      "UNKNOWN_PRODUCER_ID",
      message,
      "the producer re-initialises by itself; if this reaches you, the registry kept losing the id: check the broker's producer registry",
    );
    this.name = "UnknownProducerIdError";
  }
}

/** The producer's buffer (maxBufferBytes) stayed full for maxBlockMs. Retriable by the application. */
export class BufferFullError extends NaradError {
  constructor(message: string) {
    super(0, "BUFFER_FULL", message, "send slower, raise maxBufferBytes or maxBlockMs, or check the broker");
    this.name = "BufferFullError";
  }
}

/** A record was not delivered within deliveryTimeoutMs (buffered, in flight and retried). */
export class DeliveryTimeoutError extends NaradError {
  constructor(message: string) {
    super(
      0,
      "DELIVERY_TIMEOUT",
      message,
      "the broker was unavailable too long; `notStored` / `inDoubt` say whether the record may be stored (docs/idempotent-producer.md)",
    );
    this.name = "DeliveryTimeoutError";
  }
}

/**
 * An idempotent batch whose outcome stayed unknown: it failed in doubt while
 * later batches of its partition were already numbered after it, and in the
 * settle window (one more deliveryTimeoutMs) neither an answer to its exact
 * retries nor an accepted later batch told whether it was stored. `inDoubt`
 * is true; `cause` is the last attempt's error.
 */
export class DeliveryInDoubtError extends NaradError {
  constructor(message: string, cause?: unknown) {
    super(
      0,
      "DELIVERY_IN_DOUBT",
      message,
      "the records may or may not be stored, and a re-send carries new sequences (stored again if they were stored): read the partition for them before re-sending, or re-send and deduplicate downstream",
      cause,
    );
    this.name = "DeliveryInDoubtError";
    this.inDoubt = true;
  }
}

export class ClosedError extends NaradError {
  constructor(what: string) {
    super(0, "CLOSED", `${what} is closed`, "create a new one; close() is final");
    this.name = "ClosedError";
  }
}

/** What the request was about, so a status can become the right error. */
export interface ErrorContext {
  topic?: string | undefined;
  /** An ack/extend/nack: 410 means a stale receipt handle, not an expired offset. */
  receipt?: boolean;
}

/** Retry-After is delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, nowMs = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const secs = Number(value);
  if (Number.isFinite(secs) && secs >= 0) return Math.round(secs * 1000);
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

type ErrorMaker = (
  status: number,
  message: string,
  retryAfterMs: number | undefined,
  ctx: ErrorContext,
) => NaradError;

const badRequest: ErrorMaker = (status, message) => new BadRequestError(message, status);
const unavailable: ErrorMaker = (status, message, retryAfterMs) =>
  new UnavailableError(message, { status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
const notFound: ErrorMaker = (_status, message) =>
  new NaradError(404, "NOT_FOUND", message, "check the name (topic, group) and the broker version");

/**
 * The broker's machine-readable `code` (docs/http-api.md, "Errors") and the
 * error each becomes. A code not listed here falls back on the status.
 */
const byCode: Readonly<Record<string, ErrorMaker>> = {
  bad_request: badRequest,
  invalid_query_parameter: badRequest,
  unknown_query_parameter: badRequest,
  invalid_acks: badRequest,
  acks_all_required: badRequest,
  invalid_producer_epoch: badRequest,
  unsupported_media_type: badRequest,
  unknown_producer_id: (_s, message) => new UnknownProducerIdError(message),
  unauthenticated: (_s, message) => new UnauthenticatedError(message),
  forbidden: (_s, message) => new ForbiddenError(message),
  topic_not_found: (_s, message, _r, ctx) => new TopicNotFoundError(ctx.topic ?? "", message),
  not_found: notFound,
  route_not_found: notFound,
  topic_exists: (_s, message) => new TopicExistsError(message),
  conflict: (status, message) =>
    new NaradError(
      status,
      "CONFLICT",
      message,
      "the broker's state does not allow it now: the message says why",
    ),
  producer_fenced: (_s, message) => new FencedProducerError(message),
  out_of_order_sequence: (_s, message) => new OutOfOrderSequenceError(message),
  stale_receipt: (_s, message) => new StaleReceiptError(message),
  offset_expired: (_s, message) => new OffsetExpiredError(message),
  topic_deleted: (status, message) =>
    new NaradError(
      status,
      "TOPIC_DELETED",
      message,
      "the topic was deleted while the request waited; do not retry into a re-created topic unless that is intended",
    ),
  payload_too_large: (status, message) => new PayloadTooLargeError(message, status),
  rate_limited: unavailable,
  unavailable: unavailable,
  draining: unavailable,
  not_ready: unavailable,
  acks_all_unavailable: unavailable,
  commit_timeout: unavailable,
  registry_unavailable: unavailable,
};

export function errorFromResponse(
  status: number,
  message: string,
  retryAfterMs: number | undefined,
  ctx: ErrorContext,
  code?: string,
): NaradError {
  const make = code === undefined || !Object.hasOwn(byCode, code) ? undefined : byCode[code];
  const err =
    make !== undefined
      ? make(status, message, retryAfterMs, ctx)
      : errorFromStatus(status, message, retryAfterMs, ctx);
  err.brokerCode = code;
  return err;
}

/**
 * For answers without a known code: Narad (Go) v1 and brokers from before
 * codes. Their messages are all there is to tell a missing topic from a
 * missing group, or a fenced producer from an existing topic.
 */
function errorFromStatus(
  status: number,
  message: string,
  retryAfterMs: number | undefined,
  ctx: ErrorContext,
): NaradError {
  switch (status) {
    case 400:
    case 415:
      return badRequest(status, message, retryAfterMs, ctx);
    case 401:
      return new UnauthenticatedError(message);
    case 403:
      return new ForbiddenError(message);
    case 404:
      if (ctx.topic !== undefined && /^topic .* not found/.test(message))
        return new TopicNotFoundError(ctx.topic, message);
      return notFound(status, message, retryAfterMs, ctx);
    case 409:
      if (message.startsWith("producer fenced")) return new FencedProducerError(message);
      return new TopicExistsError(message);
    case 410:
      return ctx.receipt ? new StaleReceiptError(message) : new OffsetExpiredError(message);
    case 413:
      return new PayloadTooLargeError(message);
    case 429:
    case 503:
      return unavailable(status, message, retryAfterMs, ctx);
    default:
      return new NaradError(status, "HTTP_ERROR", message, "unexpected answer from the broker; see its log");
  }
}
