// Decoding of batch produce bodies. Two formats share one route:
//
// application/vnd.narad.batch (binary, for throughput), records back to back:
//   partition i32 BE (-1: choose by key, or rotate when keyless; below -1: 400)
//   keyLen    u16 BE (0: keyless)     key     keyLen bytes
//   payloadLen u32 BE                  payload payloadLen bytes
//
// application/x-ndjson (for humans and scripts), one JSON object per line:
//   {"key":"k","partition":0,"payload":<any JSON>,"payload_encoding":"base64"}
//   key and partition are optional; a string payload is stored as its UTF-8
//   text (or decoded from base64 with payload_encoding), anything else as
//   its JSON text.

import { badRequest, NaradError } from "../errors.ts";

/**
 * Bounds on a decoded batch. Records are counted while decoding, so a body of
 * millions of tiny records is refused (whole) after maxRecords objects, not
 * after millions: each decoded record costs a few hundred bytes of heap on
 * top of its body bytes, which the produce memory budget does not see.
 */
export interface BatchLimits {
  maxRecords: number;
  /** One key limit for both formats (the binary format cannot carry more than 65,535). */
  maxKeyBytes: number;
}

/** The binary format's u16 key length: the most either format accepts. */
export const batchMaxKeyBytes = 0xffff;

const unlimited: BatchLimits = { maxRecords: Number.MAX_SAFE_INTEGER, maxKeyBytes: batchMaxKeyBytes };

function tooManyRecords(max: number): NaradError {
  return new NaradError(
    "PAYLOAD_TOO_LARGE",
    `batch holds more than ${max} records; split it (the limit is --batch-max-records)`,
  );
}

export interface BatchEntry {
  /** -1 when the broker should choose. */
  partition: number;
  /** Empty when keyless. */
  key: Buffer;
  payload: Buffer;
}

export const batchContentTypes = {
  binary: "application/vnd.narad.batch",
  ndjson: "application/x-ndjson",
} as const;

const binaryHeaderBytes = 4 + 2;

export function decodeBinaryBatch(
  body: Buffer,
  maxRecordBytes: number,
  limits: BatchLimits = unlimited,
): BatchEntry[] {
  const entries: BatchEntry[] = [];
  let pos = 0;
  while (pos < body.length) {
    if (entries.length >= limits.maxRecords) throw tooManyRecords(limits.maxRecords);
    if (pos + binaryHeaderBytes > body.length)
      throw badRequest(`batch record ${entries.length}: truncated header`);
    const partition = body.readInt32BE(pos);
    // -1 is the only "choose" value; anything lower is a client bug, not a choice.
    if (partition < -1)
      throw badRequest(`batch record ${entries.length}: partition ${partition} is below -1`);
    const keyLen = body.readUInt16BE(pos + 4);
    if (keyLen > limits.maxKeyBytes) {
      throw badRequest(
        `batch record ${entries.length}: key of ${keyLen} bytes exceeds ${limits.maxKeyBytes}`,
      );
    }
    pos += binaryHeaderBytes;
    if (pos + keyLen + 4 > body.length) throw badRequest(`batch record ${entries.length}: truncated key`);
    const key = body.subarray(pos, pos + keyLen);
    pos += keyLen;
    const payloadLen = body.readUInt32BE(pos);
    pos += 4;
    if (payloadLen > maxRecordBytes) {
      throw badRequest(
        `batch record ${entries.length}: payload of ${payloadLen} bytes exceeds ${maxRecordBytes}`,
      );
    }
    if (pos + payloadLen > body.length) throw badRequest(`batch record ${entries.length}: truncated payload`);
    entries.push({ partition, key, payload: body.subarray(pos, pos + payloadLen) });
    pos += payloadLen;
  }
  return entries;
}

export function encodeBinaryBatch(entries: readonly BatchEntry[]): Buffer {
  let size = 0;
  for (const e of entries) size += binaryHeaderBytes + e.key.length + 4 + e.payload.length;
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  for (const e of entries) {
    out.writeInt32BE(e.partition, pos);
    out.writeUInt16BE(e.key.length, pos + 4);
    pos += binaryHeaderBytes;
    pos += e.key.copy(out, pos);
    out.writeUInt32BE(e.payload.length, pos);
    pos += 4;
    pos += e.payload.copy(out, pos);
  }
  return out;
}

function ndjsonEntry(line: string, index: number, maxRecordBytes: number, maxKeyBytes: number): BatchEntry {
  let obj: unknown;
  try {
    obj = JSON.parse(line);
  } catch {
    throw badRequest(`batch line ${index + 1}: not valid JSON`);
  }
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) {
    throw badRequest(`batch line ${index + 1}: must be a JSON object`);
  }
  const rec = obj as Record<string, unknown>;
  for (const field of Object.keys(rec)) {
    if (field !== "key" && field !== "partition" && field !== "payload" && field !== "payload_encoding") {
      throw badRequest(`batch line ${index + 1}: unknown field "${field}"`);
    }
  }
  if (rec.key !== undefined && typeof rec.key !== "string")
    throw badRequest(`batch line ${index + 1}: key must be a string`);
  if (
    rec.partition !== undefined &&
    (typeof rec.partition !== "number" || !Number.isInteger(rec.partition) || rec.partition < 0)
  ) {
    throw badRequest(`batch line ${index + 1}: partition must be a non-negative integer`);
  }
  if (!("payload" in rec)) throw badRequest(`batch line ${index + 1}: payload is required`);
  let payload: Buffer;
  if (rec.payload_encoding !== undefined) {
    if (rec.payload_encoding !== "base64" || typeof rec.payload !== "string") {
      throw badRequest(`batch line ${index + 1}: payload_encoding must be "base64" with a string payload`);
    }
    payload = Buffer.from(rec.payload, "base64");
  } else if (typeof rec.payload === "string") {
    payload = Buffer.from(rec.payload, "utf8");
  } else {
    payload = Buffer.from(JSON.stringify(rec.payload), "utf8");
  }
  if (payload.length > maxRecordBytes) {
    throw badRequest(`batch line ${index + 1}: payload of ${payload.length} bytes exceeds ${maxRecordBytes}`);
  }
  const key = rec.key === undefined ? Buffer.alloc(0) : Buffer.from(rec.key, "utf8");
  if (key.length > maxKeyBytes) {
    throw badRequest(`batch line ${index + 1}: key of ${key.length} bytes exceeds ${maxKeyBytes}`);
  }
  return { partition: rec.partition === undefined ? -1 : (rec.partition as number), key, payload };
}

export function decodeNdjsonBatch(
  body: Buffer,
  maxRecordBytes: number,
  limits: BatchLimits = unlimited,
): BatchEntry[] {
  const entries: BatchEntry[] = [];
  // Line by line, not split("\n"): a body of millions of empty or tiny lines
  // must not become millions of strings before the record cap is checked.
  let start = 0;
  while (start < body.length) {
    let end = body.indexOf(0x0a, start);
    if (end < 0) end = body.length;
    const line = body.toString("utf8", start, end).trim();
    start = end + 1;
    if (line.length === 0) continue;
    if (entries.length >= limits.maxRecords) throw tooManyRecords(limits.maxRecords);
    entries.push(ndjsonEntry(line, entries.length, maxRecordBytes, limits.maxKeyBytes));
  }
  return entries;
}
