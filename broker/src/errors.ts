// Every error the broker reports to a client, by kind with its HTTP status.
// Handlers throw NaradError; the error plugin answers it with the
// machine-readable code of api-errors.ts (the kind's default, or a more
// specific code of the same status the thrower names).

import { type ApiErrorCode, type ApiErrorCodeWithStatus, apiErrors } from "./api-errors.ts";

export const errorStatus = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  /** Authenticated, but not allowed (the Users API, topic ownership). */
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  /** A known path with the wrong method; the answer carries `Allow`. */
  METHOD_NOT_ALLOWED: 405,
  /** The request (head or body) arrived too slowly; the connection is closed. */
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  OFFSET_EXPIRED: 410,
  /** A receipt handle with no live lease (expired, settled, or from before a restart). */
  GONE: 410,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  UNAVAILABLE: 503,
  /** The disk is full: nothing of the request was stored; retry once space is freed. */
  INSUFFICIENT_STORAGE: 507,
  INTERNAL: 500,
  /** A route this deployment cannot carry out (the answer says what to do instead). */
  NOT_IMPLEMENTED: 501,
} as const;

export type ErrorCode = keyof typeof errorStatus;

/** The code a client sees for each kind unless the thrower names a more specific one. */
export const defaultApiCode = {
  BAD_REQUEST: "bad_request",
  UNAUTHORIZED: "unauthenticated",
  FORBIDDEN: "forbidden",
  NOT_FOUND: "not_found",
  METHOD_NOT_ALLOWED: "method_not_allowed",
  REQUEST_TIMEOUT: "request_timeout",
  CONFLICT: "conflict",
  OFFSET_EXPIRED: "offset_expired",
  GONE: "stale_receipt",
  PAYLOAD_TOO_LARGE: "payload_too_large",
  UNSUPPORTED_MEDIA_TYPE: "unsupported_media_type",
  TOO_MANY_REQUESTS: "rate_limited",
  UNAVAILABLE: "unavailable",
  INSUFFICIENT_STORAGE: "disk_full",
  INTERNAL: "internal",
  NOT_IMPLEMENTED: "not_implemented",
} as const satisfies { [K in ErrorCode]: ApiErrorCodeWithStatus<(typeof errorStatus)[K]> };

interface NaradErrorOptions {
  retryAfterSeconds?: number;
  cause?: unknown;
  /** The client-facing code (api-errors.ts); one of another status is ignored. Prefer coded(). */
  apiCode?: ApiErrorCode;
}

export class NaradError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Seconds a client should wait before retrying (503/429). */
  readonly retryAfterSeconds: number | undefined;
  /** What the error body's `code` says (api-errors.ts). */
  readonly apiCode: ApiErrorCode;

  constructor(code: ErrorCode, message: string, opts: NaradErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "NaradError";
    this.code = code;
    this.status = errorStatus[code];
    this.retryAfterSeconds = opts.retryAfterSeconds;
    const named = opts.apiCode;
    this.apiCode =
      named !== undefined && apiErrors[named].status === this.status ? named : defaultApiCode[code];
  }
}

/** A NaradError with a specific client-facing code, checked against the kind's status at compile time. */
export function coded<K extends ErrorCode>(
  kind: K,
  apiCode: ApiErrorCodeWithStatus<(typeof errorStatus)[K]>,
  message: string,
  opts: Omit<NaradErrorOptions, "apiCode"> = {},
): NaradError {
  return new NaradError(kind, message, { ...opts, apiCode });
}

export const badRequest = (message: string): NaradError => new NaradError("BAD_REQUEST", message);
export const notFound = (message: string): NaradError => new NaradError("NOT_FOUND", message);
export const conflict = (message: string): NaradError => new NaradError("CONFLICT", message);
export const unavailable = (message: string, retryAfterSeconds = 1): NaradError =>
  new NaradError("UNAVAILABLE", message, { retryAfterSeconds });
export const topicNotFound = (name: string): NaradError =>
  coded("NOT_FOUND", "topic_not_found", `topic "${name}" not found`);
export const topicExists = (name: string): NaradError =>
  coded("CONFLICT", "topic_exists", `topic "${name}" already exists`);
/** A query parameter's value is malformed or out of range. */
export const invalidQueryParameter = (message: string): NaradError =>
  coded("BAD_REQUEST", "invalid_query_parameter", message);
export const draining = (message: string, retryAfterSeconds = 1): NaradError =>
  coded("UNAVAILABLE", "draining", message, { retryAfterSeconds });
