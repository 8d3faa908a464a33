// Errors the ingress WAL raises, each with a stable `code` the HTTP layer maps
// to a status (errors.ts at the broker root owns that mapping).

export type WalErrorCode =
  /** A write or fdatasync failed earlier: this append was not (or is not known to be) durable. */
  | "WAL_POISONED"
  /**
   * The disk is full (ENOSPC on a group write, or creating its segment): the
   * group was not written (its bytes were truncated away) and the WAL keeps
   * working; a retry succeeds once space is freed.
   */
  | "DISK_FULL"
  /** One record's encoded size exceeds maxRecordBytes; rejected before staging. */
  | "RECORD_TOO_LARGE"
  /** A record field cannot be encoded (topic over 65535 bytes, partition not u32, …). */
  | "RECORD_INVALID"
  /** The WAL was closed before this call. */
  | "WAL_CLOSED"
  /** A frame that recovery accepted failed its CRC when read again. */
  | "WAL_CORRUPT"
  /** setCheckpoint went backwards or past the durable end. */
  | "CHECKPOINT_INVALID"
  /** The directory's incarnation file is missing or malformed while segments exist. */
  | "WAL_INCARNATION_INVALID";

export class WalError extends Error {
  readonly code: WalErrorCode;

  constructor(code: WalErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "WalError";
    this.code = code;
  }
}

/** The logger surface the WAL uses (pino's signature: object first, then message). */
export interface WalLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentWalLogger: WalLogger = {
  info: () => {},
  warn: () => {},
  error: () => {},
};
