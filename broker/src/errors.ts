// Every error the broker reports to a client, with its stable code and HTTP
// status, in one table. Handlers throw NaradError; the error plugin maps it.

export const errorStatus = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
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

export class NaradError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Seconds a client should wait before retrying (503/429). */
  readonly retryAfterSeconds: number | undefined;
  /**
   * A finer machine-readable reason sent as the body's `code` (e.g.
   * "schema_violation"); absent: the body has `error` only, as Narad's.
   */
  readonly wireCode: string | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { retryAfterSeconds?: number; cause?: unknown; wireCode?: string } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "NaradError";
    this.code = code;
    this.status = errorStatus[code];
    this.retryAfterSeconds = opts.retryAfterSeconds;
    this.wireCode = opts.wireCode;
  }
}

export const badRequest = (message: string): NaradError => new NaradError("BAD_REQUEST", message);
export const notFound = (message: string): NaradError => new NaradError("NOT_FOUND", message);
export const conflict = (message: string): NaradError => new NaradError("CONFLICT", message);
export const unavailable = (message: string, retryAfterSeconds = 1): NaradError =>
  new NaradError("UNAVAILABLE", message, { retryAfterSeconds });
