// Pure encoding and decoding of ingress WAL frames. No I/O here: the WAL
// (broker/src/wal) hands this module buffers it read or is about to write.
//
// Frame (all integers big-endian):
//   0  magic "NWAL"            4 bytes
//   4  payload length          u32
//   8  seq                     u64
//  16  CRC-32C                 u32 over bytes 4..16 (length, seq) then the payload
//  20  payload                 `length` bytes
//
// Record payload:
//   format u8 (= 1) | topic (u16 len + utf8) | key (u32 len + bytes)
//   | partition u32 | createdMs u64 | payload (u32 len + bytes)
// Format 2 (idempotent producers) is format 1 followed by the producer trailer:
//   | producerId (u8 len + ascii, 1..64) | epoch u32 | producer seq u64
// Formats 3 and 4 are formats 1 and 2 followed by the topic identity trailer:
//   | topic uid (u8 len + ascii, 1..64)
// Every record written now carries the uid (3 or 4); 1 and 2 are still read
// (a WAL written before the upgrade) and mean "whatever topic has this name".
//
// Invariants: a frame is accepted only when its magic, CRC, seq range and
// record shape (format byte, lengths adding up exactly) all check out; the
// CRC is computed before write and verified after every read.

import { crc32c } from "@node-rs/crc32";
import {
  producerStampProblem,
  topicUidMaxBytes,
  topicUidProblem,
  type WalRecord,
  type WalRecordInput,
} from "./records.ts";

export const walFrameMagic = 0x4e57414c; // "NWAL"
export const walFrameHeaderBytes = 20;
export const walRecordFormat = 1;
/** Format 1 plus the producer trailer (id, epoch, seq). */
export const walRecordFormatProducer = 2;
/** Format 1 plus the topic uid trailer. */
export const walRecordFormatUid = 3;
/** Format 2 plus the topic uid trailer. */
export const walRecordFormatProducerUid = 4;
/** uid len (plus the uid's bytes). */
const uidTrailerFixedBytes = 1;
/** id len + epoch + seq (plus the id's bytes). */
const producerTrailerFixedBytes = 1 + 4 + 8;
/** format + topic len + key len + partition + createdMs + payload len. */
export const walRecordFixedBytes = 1 + 2 + 4 + 4 + 8 + 4;
/** The smallest well-formed frame: empty topic, key and payload. */
export const walMinFrameBytes = walFrameHeaderBytes + walRecordFixedBytes;
export const walMaxTopicBytes = 0xffff;

const u32Span = 0x1_0000_0000;
/** Seqs and timestamps are JS numbers; the high word must keep them below 2^53. */
const maxSafeHighWord = 0x20_0000;

/** Byte size of the encoded record payload (the frame payload) for `r`. */
export function walRecordPayloadBytes(r: WalRecordInput): number {
  const producer = r.producer === undefined ? 0 : producerTrailerFixedBytes + r.producer.id.length;
  const uid = r.topicUid === undefined ? 0 : uidTrailerFixedBytes + r.topicUid.length;
  const trailer = producer + uid;
  return walRecordFixedBytes + Buffer.byteLength(r.topic, "utf8") + r.key.length + r.payload.length + trailer;
}

/** Why an input cannot be encoded, or undefined when it can. */
export function walRecordInputProblem(r: WalRecordInput): string | undefined {
  if (typeof r.topic !== "string" || Buffer.byteLength(r.topic, "utf8") > walMaxTopicBytes) {
    return "topic must be a string of at most 65535 utf8 bytes";
  }
  if (!Buffer.isBuffer(r.key) || !Buffer.isBuffer(r.payload)) return "key and payload must be Buffers";
  if (!Number.isInteger(r.partition) || r.partition < 0 || r.partition >= u32Span) {
    return "partition must be a u32";
  }
  if (!Number.isSafeInteger(r.createdMs) || r.createdMs < 0)
    return "createdMs must be a non-negative integer";
  if (r.topicUid !== undefined) {
    const problem = topicUidProblem(r.topicUid);
    if (problem !== undefined) return problem;
  }
  if (r.producer !== undefined) return producerStampProblem(r.producer);
  return undefined;
}

function formatOf(hasProducer: boolean, hasUid: boolean): number {
  if (hasUid) return hasProducer ? walRecordFormatProducerUid : walRecordFormatUid;
  return hasProducer ? walRecordFormatProducer : walRecordFormat;
}

function putU32(buf: Buffer, value: number, at: number): void {
  // Plain byte stores: cheaper than writeUInt32BE's range checks on the hot path.
  buf[at] = value >>> 24;
  buf[at + 1] = value >>> 16;
  buf[at + 2] = value >>> 8;
  buf[at + 3] = value;
}

function writeU64(buf: Buffer, value: number, at: number): void {
  // Two u32 writes avoid a BigInt allocation per field on the hot path.
  putU32(buf, Math.floor(value / u32Span), at);
  putU32(buf, value >>> 0, at + 4);
}

function readU64(buf: Buffer, at: number): number | undefined {
  const high = buf.readUInt32BE(at);
  if (high >= maxSafeHighWord) return undefined;
  return high * u32Span + buf.readUInt32BE(at + 4);
}

// CRC-32C (Castagnoli, reflected 0x82F63B78), slice-by-8 tables. The native
// @node-rs/crc32 call costs ~1 µs of fixed overhead, more than a JS table pass
// over the 12 header bytes or a small payload, so short ranges stay in JS and
// long ones go native. Both produce the same value (checked in the test).
const crcTable = buildCrcTable();
/** Payloads shorter than this are checksummed in JS (measured crossover ~250 bytes). */
const nativeCrcMinBytes = 256;

function buildCrcTable(): Int32Array {
  const t = new Int32Array(256 * 8);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n]!;
    for (let s = 1; s < 8; s++) {
      c = t[c & 0xff]! ^ (c >>> 8);
      t[s * 256 + n] = c;
    }
  }
  return t;
}

/** Continues a finalized CRC-32C `prev` over buf[start, end) (crc32c(b, crc32c(a)) semantics). */
export function crc32cRange(prev: number, buf: Uint8Array, start: number, end: number): number {
  if (end - start >= nativeCrcMinBytes) return crc32c(buf.subarray(start, end), prev);
  const t = crcTable;
  let c = ~prev;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const a = c ^ (buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24));
    c =
      t[1792 + (a & 0xff)]! ^
      t[1536 + ((a >>> 8) & 0xff)]! ^
      t[1280 + ((a >>> 16) & 0xff)]! ^
      t[1024 + (a >>> 24)]! ^
      t[768 + buf[i + 4]!]! ^
      t[512 + buf[i + 5]!]! ^
      t[256 + buf[i + 6]!]! ^
      t[buf[i + 7]!]!;
  }
  for (; i < end; i++) c = t[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/** CRC-32C over the length and seq fields, then the payload. */
function frameCrc(buf: Buffer, frameStart: number, payloadBytes: number): number {
  const head = crc32cRange(0, buf, frameStart + 4, frameStart + 16);
  const payloadStart = frameStart + walFrameHeaderBytes;
  return crc32cRange(head, buf, payloadStart, payloadStart + payloadBytes);
}

/**
 * Encodes `records` as consecutive frames with seqs firstSeq, firstSeq+1, …
 * into `buf` starting at `at`; returns the offset after the last frame. The
 * caller sized `buf` with walRecordPayloadBytes (one allocation per group).
 */
export function encodeWalFramesInto(
  buf: Buffer,
  at: number,
  records: readonly WalRecordInput[],
  firstSeq: number,
): number {
  let pos = at;
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    const frameStart = pos;
    let p = frameStart + walFrameHeaderBytes;
    const producer = r.producer;
    const uid = r.topicUid;
    buf[p] = formatOf(producer !== undefined, uid !== undefined);
    // Write the topic first and its length after: one utf8 pass, no byteLength call.
    const topicBytes = buf.write(r.topic, p + 3, "utf8");
    buf[p + 1] = topicBytes >>> 8;
    buf[p + 2] = topicBytes;
    p += 3 + topicBytes;
    putU32(buf, r.key.length, p);
    buf.set(r.key, p + 4);
    p += 4 + r.key.length;
    putU32(buf, r.partition, p);
    writeU64(buf, r.createdMs, p + 4);
    putU32(buf, r.payload.length, p + 12);
    buf.set(r.payload, p + 16);
    p += 16 + r.payload.length;
    if (producer !== undefined) {
      const idBytes = buf.write(producer.id, p + 1, "latin1");
      buf[p] = idBytes;
      putU32(buf, producer.epoch, p + 1 + idBytes);
      writeU64(buf, producer.seq, p + 5 + idBytes);
      p += producerTrailerFixedBytes + idBytes;
    }
    if (uid !== undefined) {
      const uidBytes = buf.write(uid, p + 1, "latin1");
      buf[p] = uidBytes;
      p += uidTrailerFixedBytes + uidBytes;
    }
    const payloadBytes = p - frameStart - walFrameHeaderBytes;
    putU32(buf, walFrameMagic, frameStart);
    putU32(buf, payloadBytes, frameStart + 4);
    writeU64(buf, firstSeq + i, frameStart + 8);
    putU32(buf, frameCrc(buf, frameStart, payloadBytes), frameStart + 16);
    pos = p;
  }
  return pos;
}

/** Encodes `records` into one new Buffer (convenience for tests and small batches). */
export function encodeWalFrames(records: readonly WalRecordInput[], firstSeq: number): Buffer {
  let total = 0;
  for (const r of records) total += walFrameHeaderBytes + walRecordPayloadBytes(r);
  const buf = Buffer.allocUnsafe(total);
  const end = encodeWalFramesInto(buf, 0, records, firstSeq);
  if (end !== total) throw new Error(`wal codec: encoded ${end} bytes, sized ${total}`);
  return buf;
}

export type FrameCheck =
  /** A complete frame whose CRC and record shape are valid. */
  | { kind: "ok"; seq: number; frameBytes: number }
  /** The buffer ends before the frame does (header or payload cut short). */
  | { kind: "incomplete"; seq: number | undefined; needBytes: number }
  | { kind: "bad"; reason: string };

/**
 * Checks the frame at `at`, looking no further than `end`. Verifies magic,
 * seq range, CRC and the record's shape; allocates nothing but CRC views.
 */
export function checkWalFrame(buf: Buffer, at: number, end: number): FrameCheck {
  if (end - at < walFrameHeaderBytes) {
    if (end - at >= 4 && buf.readUInt32BE(at) !== walFrameMagic) return { kind: "bad", reason: "magic" };
    return { kind: "incomplete", seq: undefined, needBytes: walFrameHeaderBytes };
  }
  if (buf.readUInt32BE(at) !== walFrameMagic) return { kind: "bad", reason: "magic" };
  const payloadBytes = buf.readUInt32BE(at + 4);
  const seq = readU64(buf, at + 8);
  if (seq === undefined || seq < 1) return { kind: "bad", reason: "seq out of range" };
  if (payloadBytes < walRecordFixedBytes) return { kind: "bad", reason: "payload shorter than a record" };
  const frameBytes = walFrameHeaderBytes + payloadBytes;
  if (end - at < frameBytes) return { kind: "incomplete", seq, needBytes: frameBytes };
  if (frameCrc(buf, at, payloadBytes) !== buf.readUInt32BE(at + 16)) return { kind: "bad", reason: "crc" };
  const shape = recordShapeProblem(buf, at + walFrameHeaderBytes, payloadBytes);
  if (shape !== undefined) return { kind: "bad", reason: shape };
  return { kind: "ok", seq, frameBytes };
}

function recordShapeProblem(buf: Buffer, start: number, payloadBytes: number): string | undefined {
  const format = buf[start];
  if (format === undefined || format < walRecordFormat || format > walRecordFormatProducerUid)
    return "unknown record format";
  const hasProducer = format === walRecordFormatProducer || format === walRecordFormatProducerUid;
  const hasUid = format >= walRecordFormatUid;
  const topicBytes = buf.readUInt16BE(start + 1);
  const keyAt = start + 3 + topicBytes;
  if (keyAt + 4 - start > payloadBytes) return "topic overruns payload";
  const keyBytes = buf.readUInt32BE(keyAt);
  const partAt = keyAt + 4 + keyBytes;
  if (partAt + 16 - start > payloadBytes) return "key overruns payload";
  if (buf.readUInt32BE(partAt + 4) >= maxSafeHighWord) return "createdMs out of range";
  const valueBytes = buf.readUInt32BE(partAt + 12);
  let end = partAt + 16 + valueBytes - start;
  if (hasProducer) {
    if (end + producerTrailerFixedBytes > payloadBytes) return "payload overruns record";
    const idBytes = buf[start + end]!;
    if (idBytes < 1 || idBytes > 64) return "producer id length out of range";
    if (end + producerTrailerFixedBytes + idBytes > payloadBytes) return "producer id overruns record";
    const seqHighAt = start + end + 5 + idBytes;
    if (buf.readUInt32BE(seqHighAt) >= maxSafeHighWord) return "producer seq out of range";
    end += producerTrailerFixedBytes + idBytes;
  }
  if (hasUid) {
    if (end + uidTrailerFixedBytes > payloadBytes) return "payload overruns record";
    const uidBytes = buf[start + end]!;
    if (uidBytes < 1 || uidBytes > topicUidMaxBytes) return "topic uid length out of range";
    end += uidTrailerFixedBytes + uidBytes;
  }
  if (end !== payloadBytes) return "record lengths do not add up";
  return undefined;
}

/**
 * Decodes the frame at `at`, which checkWalFrame already accepted. key and
 * payload are views into `buf` (no copy), so they keep `buf` alive.
 */
export function decodeCheckedWalFrame(buf: Buffer, at: number): WalRecord {
  const seq = readU64(buf, at + 8)!;
  const format = buf[at + walFrameHeaderBytes];
  let p = at + walFrameHeaderBytes + 1;
  const topicBytes = buf.readUInt16BE(p);
  const topic = buf.toString("utf8", p + 2, p + 2 + topicBytes);
  p += 2 + topicBytes;
  const keyBytes = buf.readUInt32BE(p);
  const key = buf.subarray(p + 4, p + 4 + keyBytes);
  p += 4 + keyBytes;
  const partition = buf.readUInt32BE(p);
  const createdMs = readU64(buf, p + 4)!;
  const valueBytes = buf.readUInt32BE(p + 12);
  const payload = buf.subarray(p + 16, p + 16 + valueBytes);
  if (format === walRecordFormat) return { topic, key, partition, createdMs, payload, seq };
  const record: WalRecord = { topic, key, partition, createdMs, payload, seq };
  p += 16 + valueBytes;
  if (format === walRecordFormatProducer || format === walRecordFormatProducerUid) {
    const idBytes = buf[p]!;
    record.producer = {
      id: buf.toString("latin1", p + 1, p + 1 + idBytes),
      epoch: buf.readUInt32BE(p + 1 + idBytes),
      seq: readU64(buf, p + 5 + idBytes)!,
    };
    p += producerTrailerFixedBytes + idBytes;
  }
  if (format === walRecordFormatUid || format === walRecordFormatProducerUid) {
    const uidBytes = buf[p]!;
    record.topicUid = buf.toString("latin1", p + 1, p + 1 + uidBytes);
  }
  return record;
}

/** Seq field of a frame header, without any validation (for skipping known-good frames). */
export function walFrameSeq(buf: Buffer, at: number): number | undefined {
  return readU64(buf, at + 8);
}

/** Total frame length from the header, without validation. */
export function walFrameBytes(buf: Buffer, at: number): number {
  return walFrameHeaderBytes + buf.readUInt32BE(at + 4);
}

/** Offset of the next "NWAL" magic at or after `from` and before `end`, or -1. */
export function findWalMagic(buf: Buffer, from: number, end: number): number {
  const at = buf.subarray(0, end).indexOf("NWAL", from, "latin1");
  return at;
}
