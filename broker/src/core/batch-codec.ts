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

// The binary format itself is the @narad/wire package's (packages/wire),
// shared with the client; the broker decodes it with its own error types.
import {
  type BatchLimits,
  batchContentTypes,
  batchMaxKeyBytes,
  type DecodedBatchEntry,
  decodeBinaryBatch as decodeWireBatch,
  encodeBinaryBatch,
} from "../../../packages/wire/src/batch.ts";
import { badRequest, NaradError } from "../errors.ts";

export { type BatchLimits, batchContentTypes, batchMaxKeyBytes, encodeBinaryBatch };

/** A decoded record: key and payload are views into the request body. */
export type BatchEntry = DecodedBatchEntry;

const unlimited: BatchLimits = { maxRecords: Number.MAX_SAFE_INTEGER, maxKeyBytes: batchMaxKeyBytes };

function tooManyRecords(max: number): NaradError {
  return new NaradError(
    "PAYLOAD_TOO_LARGE",
    `batch holds more than ${max} records; split it (the limit is --batch-max-records)`,
  );
}

const brokerErrors = { malformed: badRequest, tooManyRecords };

/**
 * Bounds on a decoded batch. Records are counted while decoding, so a body of
 * millions of tiny records is refused (whole) after maxRecords objects, not
 * after millions: each decoded record costs a few hundred bytes of heap on
 * top of its body bytes, which the produce memory budget does not see.
 */
export function decodeBinaryBatch(
  body: Buffer,
  maxRecordBytes: number,
  limits: BatchLimits = unlimited,
): BatchEntry[] {
  return decodeWireBatch(body, maxRecordBytes, limits, brokerErrors);
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
