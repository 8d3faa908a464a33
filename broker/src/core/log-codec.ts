// Partition-log frame and record codec (narad-go storage/format.go layout,
// record version 0x03 which adds createdMs and the ingress (incarnation, seq)).
//
// Frame, big-endian, 27-byte header then the payload:
//   0 magic 0xCAFE u16 | 2 flags u8 (bits 0-2 codec, 0 = none) | 3 count i32
//   7 base offset i64 | 15 uncompressed length u32 | 19 compressed length u32
//   23 CRC-32C u32 over header bytes 2..22 (flags through compressed length)
//      followed by the payload.
// Payload: `count` records, each `[len u32][record]`.
// Record: 0x03 | uvarint keyLen | key | commitMs u64 | createdMs u64 |
//         incarnation 8 bytes | seq u64 | payload (the rest of `len`).
// Record version 0x04 (idempotent producers) inserts the producer fields
// before the payload: ... | seq u64 | producerId (u8 len + ascii, 1..64) |
//         epoch u32 | producer seq u64 | payload.
// A frame may mix 0x03 and 0x04 records.
//
// Pure: no I/O. Every decoder validates shape (lengths consume the payload
// exactly, count matches) so a CRC-valid but malformed frame is still refused.

import { crc32c } from "@node-rs/crc32";
import type { CommitRecord, ProducerStamp, StoredRecord } from "./records.ts";

export const frameMagic = 0xcafe;
export const frameHeaderBytes = 27;
export const recordVersion = 0x03;
/** 0x03 plus producer id, epoch and producer seq. */
export const recordVersionProducer = 0x04;
const producerFixedBytes = 1 + 4 + 8;
export const frameCodecMask = 0x07;
export const frameCodecNone = 0;
/** Byte range of the header covered by the CRC (flags .. compressed length). */
const crcHeaderStart = 2;
const crcHeaderEnd = 23;
const crcFieldAt = 23;
const recordLenPrefixBytes = 4;
const incarnationBytes = 8;
const incarnationHexChars = 16;
/** Fixed part of a record after the key: commitMs, createdMs, incarnation, seq. */
const recordFixedTailBytes = 8 + 8 + incarnationBytes + 8;
const twoTo32 = 0x1_0000_0000;
const maxUvarintKeyBytes = 5;
const hexPattern = /^[0-9a-f]{16}$/;

export interface FrameHeader {
  flags: number;
  count: number;
  baseOffset: number;
  uncompressedLength: number;
  compressedLength: number;
  crc: number;
}

/** Why a header or frame was refused; stable strings for logs and tests. */
export type FrameProblem =
  | "short"
  | "bad-magic"
  | "unsupported-codec"
  | "bad-count"
  | "bad-length"
  | "bad-crc"
  | "bad-record";

export type HeaderResult = { ok: true; header: FrameHeader } | { ok: false; problem: FrameProblem };

function uvarintBytes(n: number): number {
  let bytes = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    bytes++;
  }
  return bytes;
}

function writeU64(buf: Buffer, value: number, at: number): void {
  // Two u32 halves: exact for safe integers, and avoids BigInt on the hot path.
  buf.writeUInt32BE(Math.floor(value / twoTo32), at);
  buf.writeUInt32BE(value >>> 0, at + 4);
}

function readU64(buf: Buffer, at: number): number {
  const hi = buf.readUInt32BE(at);
  const lo = buf.readUInt32BE(at + 4);
  // Values above 2^53 cannot come from this encoder; -1 marks them invalid.
  if (hi >= 0x20_0000) return -1;
  return hi * twoTo32 + lo;
}

/** True when `s` is a valid ingress incarnation id (16 lowercase hex chars). */
export function isIncarnation(s: string): boolean {
  return s.length === incarnationHexChars && hexPattern.test(s);
}

/** Bytes one record occupies in a frame payload, including its length prefix. */
export function recordFrameBytes(r: CommitRecord): number {
  const keyLen = r.key.length;
  const producer = r.producer === undefined ? 0 : producerFixedBytes + r.producer.id.length;
  return (
    recordLenPrefixBytes +
    1 +
    uvarintBytes(keyLen) +
    keyLen +
    recordFixedTailBytes +
    producer +
    r.payload.length
  );
}

/** Payload bytes of a frame holding `records` (sum of recordFrameBytes). */
export function framePayloadBytes(records: readonly CommitRecord[]): number {
  let total = 0;
  for (const r of records) total += recordFrameBytes(r);
  return total;
}

/**
 * Encodes `records` into one Buffer (header + payload, one allocation).
 * Offsets are baseOffset, baseOffset+1, ...; every record gets commitMs.
 * Throws on an invalid incarnation or seq (a caller bug, not a disk fault).
 */
export function encodeFrame(records: readonly CommitRecord[], baseOffset: number, commitMs: number): Buffer {
  if (records.length === 0) throw new Error("encodeFrame: no records");
  if (!Number.isSafeInteger(baseOffset) || baseOffset < 0) throw new Error("encodeFrame: bad base offset");
  const payloadLen = framePayloadBytes(records);
  const buf = Buffer.allocUnsafe(frameHeaderBytes + payloadLen);
  buf.writeUInt16BE(frameMagic, 0);
  buf.writeUInt8(frameCodecNone, 2);
  buf.writeInt32BE(records.length, 3);
  writeU64(buf, baseOffset, 7);
  buf.writeUInt32BE(payloadLen, 15);
  buf.writeUInt32BE(payloadLen, 19);
  let at = frameHeaderBytes;
  for (const r of records) {
    if (!isIncarnation(r.incarnation)) throw new Error(`encodeFrame: bad incarnation ${r.incarnation}`);
    if (!Number.isSafeInteger(r.seq) || r.seq < 0) throw new Error("encodeFrame: bad seq");
    const len = recordFrameBytes(r) - recordLenPrefixBytes;
    buf.writeUInt32BE(len, at);
    at += recordLenPrefixBytes;
    const producer = r.producer;
    buf[at++] = producer === undefined ? recordVersion : recordVersionProducer;
    let k = r.key.length;
    while (k >= 0x80) {
      buf[at++] = (k & 0x7f) | 0x80;
      k = Math.floor(k / 0x80);
    }
    buf[at++] = k;
    at += r.key.copy(buf, at);
    writeU64(buf, commitMs, at);
    writeU64(buf, r.createdMs, at + 8);
    buf.write(r.incarnation, at + 16, incarnationBytes, "hex");
    writeU64(buf, r.seq, at + 24);
    at += recordFixedTailBytes;
    if (producer !== undefined) {
      if (!/^[A-Za-z0-9._-]{1,64}$/.test(producer.id)) throw new Error("encodeFrame: bad producer id");
      if (!Number.isInteger(producer.epoch) || producer.epoch < 0 || producer.epoch > 0xffff_ffff)
        throw new Error("encodeFrame: bad producer epoch");
      if (!Number.isSafeInteger(producer.seq) || producer.seq < 0)
        throw new Error("encodeFrame: bad producer seq");
      buf[at] = producer.id.length;
      buf.write(producer.id, at + 1, "latin1");
      at += 1 + producer.id.length;
      buf.writeUInt32BE(producer.epoch, at);
      writeU64(buf, producer.seq, at + 4);
      at += 12;
    }
    at += r.payload.copy(buf, at);
  }
  buf.writeUInt32BE(frameCrc(buf, 0, payloadLen), crcFieldAt);
  return buf;
}

/** CRC-32C of the frame at `pos` in `buf` (header bytes 2..22 then payload). */
export function frameCrc(buf: Buffer, pos: number, payloadLen: number): number {
  const headerCrc = crc32c(buf.subarray(pos + crcHeaderStart, pos + crcHeaderEnd));
  const payloadStart = pos + frameHeaderBytes;
  return crc32c(buf.subarray(payloadStart, payloadStart + payloadLen), headerCrc);
}

/**
 * Parses and sanity-checks the 27-byte header at `pos`. Does not check the
 * CRC (the payload may not be in `buf` yet); call verifyFrame for that.
 */
export function parseFrameHeader(buf: Buffer, pos: number, maxFrameBytes: number): HeaderResult {
  if (buf.length - pos < frameHeaderBytes) return { ok: false, problem: "short" };
  if (buf.readUInt16BE(pos) !== frameMagic) return { ok: false, problem: "bad-magic" };
  const flags = buf[pos + 2]!;
  if ((flags & frameCodecMask) !== frameCodecNone || flags !== 0)
    return { ok: false, problem: "unsupported-codec" };
  const count = buf.readInt32BE(pos + 3);
  const baseOffset = readU64(buf, pos + 7);
  const uncompressedLength = buf.readUInt32BE(pos + 15);
  const compressedLength = buf.readUInt32BE(pos + 19);
  const minRecordBytes = recordLenPrefixBytes + 1 + 1 + recordFixedTailBytes;
  if (count < 1 || baseOffset < 0) return { ok: false, problem: "bad-count" };
  if (
    compressedLength !== uncompressedLength ||
    frameHeaderBytes + compressedLength > maxFrameBytes ||
    compressedLength < count * minRecordBytes
  ) {
    return { ok: false, problem: "bad-length" };
  }
  const crc = buf.readUInt32BE(pos + crcFieldAt);
  return { ok: true, header: { flags, count, baseOffset, uncompressedLength, compressedLength, crc } };
}

/** Total bytes (header + payload) of the frame described by `h`. */
export function frameBytes(h: FrameHeader): number {
  return frameHeaderBytes + h.compressedLength;
}

/** True when the whole frame at `pos` is in `buf` and its CRC matches. */
export function verifyFrameCrc(buf: Buffer, pos: number, h: FrameHeader): boolean {
  if (buf.length - pos < frameBytes(h)) return false;
  return frameCrc(buf, pos, h.compressedLength) === h.crc;
}

/**
 * Walks the records of a CRC-verified frame, calling `visit` with each
 * record's start (after its length prefix) and length. Returns false when the
 * records do not exactly fill the payload or the count differs.
 */
function walkRecords(
  buf: Buffer,
  pos: number,
  h: FrameHeader,
  visit: (
    index: number,
    start: number,
    len: number,
    keyStart: number,
    keyLen: number,
    payloadStart: number,
    producer: ProducerStamp | undefined,
  ) => void,
): boolean {
  let at = pos + frameHeaderBytes;
  const end = at + h.compressedLength;
  for (let i = 0; i < h.count; i++) {
    if (end - at < recordLenPrefixBytes) return false;
    const len = buf.readUInt32BE(at);
    at += recordLenPrefixBytes;
    const version = buf[at];
    if (len > end - at || (version !== recordVersion && version !== recordVersionProducer)) return false;
    let keyLen = 0;
    let shift = 1;
    let p = at + 1;
    for (let b = 0; ; b++) {
      if (b === maxUvarintKeyBytes || p >= at + len) return false;
      const byte = buf[p++]!;
      keyLen += (byte & 0x7f) * shift;
      shift *= 0x80;
      if (byte < 0x80) break;
    }
    if (p + keyLen + recordFixedTailBytes > at + len) return false;
    let payloadStart = p + keyLen + recordFixedTailBytes;
    let producer: ProducerStamp | undefined;
    if (version === recordVersionProducer) {
      if (payloadStart + producerFixedBytes > at + len) return false;
      const idLen = buf[payloadStart]!;
      if (idLen < 1 || idLen > 64 || payloadStart + producerFixedBytes + idLen > at + len) return false;
      const seq = readU64(buf, payloadStart + 5 + idLen);
      if (seq < 0) return false;
      producer = {
        id: buf.toString("latin1", payloadStart + 1, payloadStart + 1 + idLen),
        epoch: buf.readUInt32BE(payloadStart + 1 + idLen),
        seq,
      };
      payloadStart += producerFixedBytes + idLen;
    }
    visit(i, at, len, p, keyLen, payloadStart, producer);
    at += len;
  }
  return at === end;
}

/**
 * Decodes the records of a verified frame with offset >= fromOffset, pushing
 * at most `maxRecords` into `out`. Keys and payloads are views into `buf`.
 * Returns false when the frame's records are malformed (nothing is pushed).
 */
export function decodeFrameRecords(
  buf: Buffer,
  pos: number,
  h: FrameHeader,
  fromOffset: number,
  out: StoredRecord[],
): boolean {
  const decoded: StoredRecord[] = [];
  let bad = false;
  const ok = walkRecords(buf, pos, h, (i, start, len, keyStart, keyLen, payloadStart, producer) => {
    const offset = h.baseOffset + i;
    if (offset < fromOffset) return;
    const tail = keyStart + keyLen;
    const commitMs = readU64(buf, tail);
    const createdMs = readU64(buf, tail + 8);
    const seq = readU64(buf, tail + 24);
    if (commitMs < 0 || createdMs < 0 || seq < 0) bad = true;
    const rec: StoredRecord = {
      offset,
      key: buf.subarray(keyStart, tail),
      commitMs,
      createdMs,
      payload: buf.subarray(payloadStart, start + len),
      incarnation: buf.toString("hex", tail + 16, tail + 16 + incarnationBytes),
      seq,
    };
    if (producer !== undefined) rec.producer = producer;
    decoded.push(rec);
  });
  if (!ok || bad) return false;
  for (const r of decoded) out.push(r);
  return true;
}

/** Per-frame summary used by recovery: dedup ids and the newest commit time. */
export interface FrameIds {
  /** Highest seq per incarnation within the frame. */
  maxSeq: Map<string, number>;
  lastCommitMs: number;
  /** Producer stamps of the frame's records, in offset order (empty for 0x03-only frames). */
  producers: ProducerStamp[];
  /** The same records with their offset, commit time and content fingerprint (key + payload). */
  producerRecords: Array<{ stamp: ProducerStamp; offset: number; commitMs: number; fingerprint: number }>;
  /** Every record's (incarnation, seq) with its offset, in offset order (only when asked for). */
  seqs?: Array<{ incarnation: string; seq: number; offset: number }>;
}

/**
 * Extracts (incarnation, seq) and commit times without copying payloads;
 * with `withSeqs`, also every record's (incarnation, seq, offset).
 */
export function scanFrameIds(buf: Buffer, pos: number, h: FrameHeader, withSeqs = false): FrameIds | null {
  const maxSeq = new Map<string, number>();
  const seqs: NonNullable<FrameIds["seqs"]> | undefined = withSeqs ? [] : undefined;
  let lastCommitMs = 0;
  let bad = false;
  const producers: ProducerStamp[] = [];
  const producerRecords: FrameIds["producerRecords"] = [];
  const ok = walkRecords(buf, pos, h, (i, start, len, keyStart, keyLen, payloadStart, producer) => {
    const tail = keyStart + keyLen;
    const commitMs = readU64(buf, tail);
    const seq = readU64(buf, tail + 24);
    if (commitMs < 0 || seq < 0) {
      bad = true;
      return;
    }
    if (commitMs > lastCommitMs) lastCommitMs = commitMs;
    const inc = buf.toString("hex", tail + 16, tail + 16 + incarnationBytes);
    const prev = maxSeq.get(inc);
    if (prev === undefined || seq > prev) maxSeq.set(inc, seq);
    seqs?.push({ incarnation: inc, seq, offset: h.baseOffset + i });
    if (producer !== undefined) {
      producers.push(producer);
      producerRecords.push({
        stamp: producer,
        offset: h.baseOffset + i,
        commitMs,
        fingerprint: recordFingerprint(buf.subarray(payloadStart, start + len)),
      });
    }
  });
  if (!ok || bad) return null;
  return { maxSeq, lastCommitMs, producers, producerRecords, ...(seqs === undefined ? {} : { seqs }) };
}

/**
 * Content fingerprint of a record (CRC-32C of its payload): the owner compares
 * it to tell an exact retry of an idempotent record from another record that
 * reuses its (producer, epoch, seq). Not the key: a keyless record pinned to
 * a partition gets a new generated key on every attempt.
 */
export function recordFingerprint(payload: Uint8Array): number {
  return crc32c(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength));
}
