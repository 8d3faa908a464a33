import { describe, expect, it } from "vitest";
import {
  decodeFrameRecords,
  encodeFrame,
  frameBytes,
  frameHeaderBytes,
  parseFrameHeader,
  scanFrameIds,
  verifyFrameCrc,
} from "./log-codec.ts";
import type { CommitRecord, StoredRecord } from "./records.ts";

const maxFrame = 1 << 20;
const inc = "0123456789abcdef";

function rec(i: number, keyLen = 3, payloadLen = 10): CommitRecord {
  return {
    key: Buffer.alloc(keyLen, i & 0xff),
    createdMs: 1_700_000_000_000 + i,
    payload: Buffer.alloc(payloadLen, (i * 7) & 0xff),
    incarnation: inc,
    seq: 2 ** 40 + i,
  };
}

/** Decodes a frame fully or returns null when any check fails. */
function decode(buf: Buffer): StoredRecord[] | null {
  const parsed = parseFrameHeader(buf, 0, maxFrame);
  if (!parsed.ok || frameBytes(parsed.header) !== buf.length || !verifyFrameCrc(buf, 0, parsed.header))
    return null;
  const out: StoredRecord[] = [];
  return decodeFrameRecords(buf, 0, parsed.header, 0, out) ? out : null;
}

describe("log codec", () => {
  it("round-trips records, including empty and multi-byte-varint keys", () => {
    const records = [rec(0, 0, 0), rec(1, 200, 5), rec(2, 3, 1000), rec(3, 16_384, 1)];
    const buf = encodeFrame(records, 42, 1_700_000_123_456);
    expect(buf.readUInt16BE(0)).toBe(0xcafe);
    const out = decode(buf);
    expect(out).not.toBeNull();
    expect(out!.map((r) => r.offset)).toEqual([42, 43, 44, 45]);
    for (let i = 0; i < records.length; i++) {
      const a = records[i]!;
      const b = out![i]!;
      expect(b.key.equals(a.key)).toBe(true);
      expect(b.payload.equals(a.payload)).toBe(true);
      expect(b.createdMs).toBe(a.createdMs);
      expect(b.commitMs).toBe(1_700_000_123_456);
      expect(b.incarnation).toBe(inc);
      expect(b.seq).toBe(a.seq);
    }
    const ids = scanFrameIds(buf, 0, decodeHeader(buf));
    expect(ids?.maxSeq.get(inc)).toBe(2 ** 40 + 3);
  });

  it("decodes only offsets >= fromOffset", () => {
    const buf = encodeFrame([rec(0), rec(1), rec(2)], 10, 1);
    const out: StoredRecord[] = [];
    expect(decodeFrameRecords(buf, 0, decodeHeader(buf), 12, out)).toBe(true);
    expect(out.map((r) => r.offset)).toEqual([12]);
  });

  it("rejects every single-byte corruption", () => {
    const buf = encodeFrame([rec(0), rec(1, 0, 0)], 7, 99);
    for (let i = 0; i < buf.length; i++) {
      for (const flip of [0x01, 0x80, 0xff]) {
        const bad = Buffer.from(buf);
        bad[i]! ^= flip;
        expect(decode(bad), `byte ${i} ^ ${flip}`).toBeNull();
      }
    }
  });

  it("rejects truncated frames and wrong magic", () => {
    const buf = encodeFrame([rec(0)], 0, 1);
    expect(parseFrameHeader(buf.subarray(0, frameHeaderBytes - 1), 0, maxFrame)).toEqual({
      ok: false,
      problem: "short",
    });
    expect(decode(buf.subarray(0, buf.length - 1))).toBeNull();
    expect(parseFrameHeader(buf, 0, buf.length - 1)).toEqual({ ok: false, problem: "bad-length" });
  });

  it("refuses bad incarnations at encode time", () => {
    expect(() => encodeFrame([{ ...rec(0), incarnation: "XYZ" }], 0, 1)).toThrow(/incarnation/);
    expect(() => encodeFrame([{ ...rec(0), incarnation: "0123456789ABCDEF" }], 0, 1)).toThrow(/incarnation/);
  });
});

function decodeHeader(buf: Buffer) {
  const parsed = parseFrameHeader(buf, 0, maxFrame);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.header;
}
