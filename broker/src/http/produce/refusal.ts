// The refusals of the acks / producer path, answered as JSON {error, code}
// (with Retry-After when set) by the produce plugin's own error handler,
// before the generic error plugin sees them.

import type { ApiErrorCode } from "../../api-errors.ts";

/** A refusal with a machine-readable code: answered as JSON {error, code}. */
export class CodedRefusal extends Error {
  readonly status: number;
  readonly code: ApiErrorCode;
  readonly retryAfterSeconds: number | undefined;
  constructor(status: number, code: ApiErrorCode, message: string, retryAfterSeconds?: number) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
