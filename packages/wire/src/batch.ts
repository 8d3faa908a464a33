// The binary batch format of POST /v1/topics/{topic}/produce-batch
// (content type application/vnd.narad.batch), records back to back:
//   partition  i32 BE (-1: the broker chooses, by key or by rotation; below -1: refused)
//   keyLen     u16 BE (0: keyless)     key      keyLen bytes
//   payloadLen u32 BE                  payload  payloadLen bytes
// The client encodes it and the broker decodes it, with this one module.

export interface BatchEntry {
  /** -1 when the broker should choose. */
  partition: number;
  /** Empty when keyless. */
  key: Uint8Array;
  payload: Uint8Array;
}

/** A decoded entry: the key and payload are views into the request body. */
export interface DecodedBatchEntry extends BatchEntry {
  key: Buffer;
  payload: Buffer;
}

export const batchContentTypes = {
  binary: "application/vnd.narad.batch",
  ndjson: "application/x-ndjson",
} as const;

/** The binary format's u16 key length: the longest key it can carry. */
export const batchMaxKeyBytes = 0xffff;

/** partition (4) + keyLen (2) bytes before each key. */
const headerBytes = 4 + 2;

/**
 * Bounds on a decoded batch. Records are counted while decoding, so a body of
 * millions of tiny records is refused after maxRecords records, not after
 * millions.
 */
export interface BatchLimits {
  maxRecords: number;
  maxKeyBytes: number;
}

/** How a decoder reports a malformed body or one over the record limit. */
export interface BatchErrors {
  malformed(message: string): Error;
  tooManyRecords(max: number): Error;
}

/** Thrown by decodeBinaryBatch when no BatchErrors are given. */
export class BatchFormatError extends Error {
  override readonly name = "BatchFormatError";
}

const plainErrors: BatchErrors = {
  malformed: (message) => new BatchFormatError(message),
  tooManyRecords: (max) => new BatchFormatError(`batch holds more than ${max} records`),
};

const unlimited: BatchLimits = { maxRecords: Number.MAX_SAFE_INTEGER, maxKeyBytes: batchMaxKeyBytes };

/** The size of entries once encoded. */
export function encodedBatchBytes(entries: readonly BatchEntry[]): number {
  let size = 0;
  for (const e of entries) size += headerBytes + e.key.length + 4 + e.payload.length;
  return size;
}

/**
 * Encodes entries as one binary batch body. The partition is written as
 * given (the broker refuses values below -1); a key longer than the u16
 * length field can say is refused here rather than silently cut.
 */
export function encodeBinaryBatch(entries: readonly BatchEntry[]): Buffer {
  const out = Buffer.allocUnsafe(encodedBatchBytes(entries));
  let pos = 0;
  for (const e of entries) {
    if (e.key.length > batchMaxKeyBytes) {
      throw new RangeError(`batch key of ${e.key.length} bytes exceeds ${batchMaxKeyBytes}`);
    }
    out.writeInt32BE(e.partition, pos);
    out.writeUInt16BE(e.key.length, pos + 4);
    pos += headerBytes;
    out.set(e.key, pos);
    pos += e.key.length;
    out.writeUInt32BE(e.payload.length, pos);
    pos += 4;
    out.set(e.payload, pos);
    pos += e.payload.length;
  }
  return out;
}

export function decodeBinaryBatch(
  body: Buffer,
  maxRecordBytes: number,
  limits: BatchLimits = unlimited,
  errors: BatchErrors = plainErrors,
): DecodedBatchEntry[] {
  const entries: DecodedBatchEntry[] = [];
  let pos = 0;
  while (pos < body.length) {
    const n = entries.length;
    if (n >= limits.maxRecords) throw errors.tooManyRecords(limits.maxRecords);
    if (pos + headerBytes > body.length) throw errors.malformed(`batch record ${n}: truncated header`);
    const partition = body.readInt32BE(pos);
    // -1 is the only "choose" value; anything lower is a client bug, not a choice.
    if (partition < -1) throw errors.malformed(`batch record ${n}: partition ${partition} is below -1`);
    const keyLen = body.readUInt16BE(pos + 4);
    if (keyLen > limits.maxKeyBytes) {
      throw errors.malformed(`batch record ${n}: key of ${keyLen} bytes exceeds ${limits.maxKeyBytes}`);
    }
    pos += headerBytes;
    if (pos + keyLen + 4 > body.length) throw errors.malformed(`batch record ${n}: truncated key`);
    const key = body.subarray(pos, pos + keyLen);
    pos += keyLen;
    const payloadLen = body.readUInt32BE(pos);
    pos += 4;
    if (payloadLen > maxRecordBytes) {
      throw errors.malformed(`batch record ${n}: payload of ${payloadLen} bytes exceeds ${maxRecordBytes}`);
    }
    if (pos + payloadLen > body.length) throw errors.malformed(`batch record ${n}: truncated payload`);
    entries.push({ partition, key, payload: body.subarray(pos, pos + payloadLen) });
    pos += payloadLen;
  }
  return entries;
}
