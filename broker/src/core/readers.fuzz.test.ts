// Fuzzes the pure readers with random and mutated bytes: WAL frames, log
// frames (with the CRC recomputed after each mutation, so the record walker
// behind the CRC is exercised too), batch bodies, receipt handles, topic specs
// and message JSON. Properties: no reader throws anything but a client error
// (NaradError), an accepted frame decodes to exactly what it encodes, and a
// rendered message is valid JSON that gives the payload bytes back.
// NARAD_FUZZ_SEED=<n> replays a run; the seed is printed.

import { isUtf8 } from "node:buffer";
import { describe, expect, it } from "vitest";
import { NaradError } from "../errors.ts";
import { fuzzSeed, type Prng, prng } from "../testing/prng.ts";
import { decodeBinaryBatch, decodeNdjsonBatch, encodeBinaryBatch } from "./batch-codec.ts";
import { encodeHandle, parseHandle } from "./consumer-handle.ts";
import {
  decodeFrameRecords,
  encodeFrame,
  frameBytes,
  frameCrc,
  parseFrameHeader,
  scanFrameIds,
  verifyFrameCrc,
} from "./log-codec.ts";
import { messageJson } from "./message-json.ts";
import type { CommitRecord, StoredRecord, WalRecordInput } from "./records.ts";
import { parseTopicCreate } from "./topic-spec.ts";
import {
  checkWalFrame,
  crc32cRange,
  decodeCheckedWalFrame,
  encodeWalFrames,
  findWalMagic,
  walFrameHeaderBytes,
} from "./wal-codec.ts";

const seed = fuzzSeed(9009);
const rounds = 2500;
const groupPattern = /^[A-Za-z0-9._-]{1,255}$/;

function mutate(r: Prng, src: Buffer): Buffer {
  let b = Buffer.from(src);
  const ops = 1 + r.int(4);
  for (let i = 0; i < ops; i++) {
    const kind = r.int(6);
    if (kind === 0 && b.length > 0) b[r.int(b.length)] = r.int(256);
    else if (kind === 1 && b.length > 0) b[r.int(b.length)]! ^= 1 << r.int(8);
    else if (kind === 2) b = b.subarray(0, r.int(b.length + 1));
    else if (kind === 3) b = Buffer.concat([b, r.bytes(r.int(40))]);
    else if (kind === 4 && b.length >= 4)
      b.writeUInt32BE(r.pick([0, 1, 0x7fffffff, 0xffffffff, r.int(2 ** 32)]), r.int(b.length - 3));
    else if (kind === 5 && b.length > 0) {
      const at = r.int(b.length);
      b = Buffer.concat([b.subarray(0, at), r.bytes(r.int(8)), b.subarray(at)]);
    }
  }
  return b;
}

function walRecord(r: Prng, i: number): WalRecordInput {
  const rec: WalRecordInput = {
    topic: r.pick(["t", "orders", "a".repeat(r.int(300))]) || "t",
    key: r.bytes(r.int(20)),
    partition: r.int(108),
    createdMs: 1_700_000_000_000 + i,
    payload: r.bytes(r.int(100)),
  };
  if (r.bool(0.3)) rec.producer = { id: `p${r.int(9)}`, epoch: r.int(5), seq: r.int(1e6) };
  return rec;
}

function commitRecord(r: Prng, i: number): CommitRecord {
  const rec: CommitRecord = {
    key: r.bytes(r.int(300)),
    createdMs: 1_700_000_000_000 + i,
    payload: r.bytes(r.int(100)),
    incarnation: r.bytes(8).toString("hex"),
    seq: 1 + r.int(1e9),
  };
  if (r.bool(0.3)) rec.producer = { id: `p${r.int(9)}`, epoch: r.int(5), seq: r.int(1e6) };
  return rec;
}

/** Recomputes a WAL frame's CRC in place, when the header is still long enough to hold one. */
function fixWalCrc(b: Buffer): void {
  if (b.length < walFrameHeaderBytes) return;
  const payloadBytes = Math.min(b.readUInt32BE(4), b.length - walFrameHeaderBytes);
  const head = crc32cRange(0, b, 4, 16);
  b.writeUInt32BE(crc32cRange(head, b, walFrameHeaderBytes, walFrameHeaderBytes + payloadBytes), 16);
}

function onlyClientErrors(fn: () => unknown): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof NaradError)) throw err;
    expect(err.status).toBeGreaterThanOrEqual(400);
    expect(err.status).toBeLessThan(500);
  }
}

describe(`reader fuzzing (seed ${seed})`, () => {
  console.log(`readers.fuzz: seed ${seed} (NARAD_FUZZ_SEED=${seed} reproduces)`);

  it("WAL frames: random and mutated bytes never throw; an accepted frame re-encodes to itself", () => {
    const r = prng(seed);
    let accepted = 0;
    for (let i = 0; i < rounds; i++) {
      const valid = encodeWalFrames([walRecord(r, i)], 1 + r.int(1e6));
      const buf = r.bool(0.2) ? r.bytes(r.int(200)) : mutate(r, valid);
      if (r.bool(0.5)) fixWalCrc(buf);
      for (let at = 0; at < buf.length; ) {
        const c = checkWalFrame(buf, at, buf.length);
        if (c.kind !== "ok") {
          const next = findWalMagic(buf, at + 1, buf.length);
          if (next < 0) break;
          at = next;
          continue;
        }
        accepted++;
        const rec = decodeCheckedWalFrame(buf, at);
        const again = encodeWalFrames([rec], rec.seq);
        // A topic that is not UTF-8 (possible only with a forged CRC) decodes
        // lossily: such a frame names no existing topic, so it is never delivered.
        if (
          Buffer.byteLength(rec.topic) === buf.readUInt16BE(at + walFrameHeaderBytes + 1) &&
          !rec.topic.includes("\ufffd")
        )
          expect(again.equals(buf.subarray(at, at + c.frameBytes))).toBe(true);
        at += c.frameBytes;
      }
    }
    expect(accepted).toBeGreaterThan(0);
  }, 60_000);

  it("log frames: header, CRC, record walker and id scan never throw on mutated frames with a fixed CRC", () => {
    const r = prng(seed + 1);
    let decoded = 0;
    for (let i = 0; i < rounds; i++) {
      const recs = Array.from({ length: 1 + r.int(4) }, (_, j) => commitRecord(r, j));
      const buf = mutate(r, encodeFrame(recs, r.int(1e6), 1_700_000_000_000));
      const h = parseFrameHeader(buf, 0, 1 << 20);
      if (!h.ok) continue;
      // Forge the CRC so the record walker sees the mutated payload.
      if (r.bool(0.8) && buf.length >= frameBytes(h.header)) {
        h.header.crc = frameCrc(buf, 0, h.header.compressedLength);
        buf.writeUInt32BE(h.header.crc, 23);
      }
      if (!verifyFrameCrc(buf, 0, h.header)) continue;
      const out: StoredRecord[] = [];
      const ok = decodeFrameRecords(buf, 0, h.header, 0, out);
      scanFrameIds(buf, 0, h.header);
      if (ok) {
        decoded++;
        expect(out.length).toBe(h.header.count);
        for (const rec of out) {
          expect(rec.offset).toBeGreaterThanOrEqual(h.header.baseOffset);
          expect(Number.isSafeInteger(rec.seq)).toBe(true);
          expect(rec.payload.length).toBeLessThanOrEqual(buf.length);
        }
      } else expect(out).toEqual([]);
    }
    expect(decoded).toBeGreaterThan(0);
  }, 60_000);

  it("batch bodies: binary and NDJSON decoders only ever refuse with a 400", () => {
    const r = prng(seed + 2);
    for (let i = 0; i < rounds; i++) {
      const entries = Array.from({ length: r.int(5) }, () => ({
        partition: r.pick([-1, 0, 3]),
        key: r.bytes(r.int(10)),
        payload: r.bytes(r.int(50)),
      }));
      const bin = r.bool(0.2) ? r.bytes(r.int(100)) : mutate(r, encodeBinaryBatch(entries));
      onlyClientErrors(() => decodeBinaryBatch(bin, r.pick([0, 10, 1 << 20])));
      const lines = entries.map((e) =>
        JSON.stringify({
          key: r.bool(0.8) ? e.key.toString("latin1") : r.pick([1, null, [], {}]),
          partition: r.pick([e.partition, -2, 1.5, "1", null, 2 ** 53]),
          payload: r.pick([e.payload.toString("base64"), { a: 1 }, [1], null, 7, "\ud800"]),
          payload_encoding: r.pick([undefined, "base64", "hex", 3]),
        }),
      );
      const nd = r.bool(0.5) ? Buffer.from(lines.join("\n")) : mutate(r, Buffer.from(lines.join("\n")));
      onlyClientErrors(() => decodeNdjsonBatch(nd, r.pick([0, 10, 1 << 20])));
    }
  }, 60_000);

  it("receipt handles: random and mutated strings are parsed or refused, never thrown", () => {
    const r = prng(seed + 3);
    for (let i = 0; i < rounds; i++) {
      const valid = encodeHandle({
        group: r.pick(["default", "g", "a.b-c_d"]),
        partition: r.int(108),
        offset: r.int(1e12),
        epoch: r.bytes(4).toString("hex"),
        nonce: 1 + r.int(1e9),
      });
      const raw = r.bool(0.3)
        ? r.bytes(r.int(60)).toString("latin1")
        : mutate(r, Buffer.from(valid)).toString("latin1");
      const p = parseHandle(raw, groupPattern);
      if (p.ok) {
        expect(Number.isSafeInteger(p.handle.offset)).toBe(true);
        expect(groupPattern.test(p.handle.group)).toBe(true);
        expect([".", ".."]).not.toContain(p.handle.group);
      }
    }
  }, 60_000);

  it("topic specs: random JSON values are accepted as a valid topic or refused with a 400", () => {
    const r = prng(seed + 4);
    const d = {
      partitions: 3,
      partitionsMin: 1,
      partitionsMax: 108,
      retentionMs: 1000,
      visibilityTimeoutMs: 30_000,
      maxInFlight: 10,
      maxAckedAhead: 20,
      namePattern: groupPattern,
    };
    const values = (): unknown =>
      r.pick([
        null,
        true,
        0,
        -1,
        1.5,
        1e308,
        Number.NaN,
        "",
        "x",
        "..",
        "../x",
        [],
        {},
        [{}],
        { name: "g" },
        2 ** 53,
      ]);
    const fields = [
      "name",
      "partitions",
      "retention_ms",
      "retention_bytes",
      "visibility_timeout_ms",
      "max_in_flight_per_partition",
      "max_acked_ahead_per_partition",
      "subscriptions",
      "schema",
      "__proto__",
    ];
    for (let i = 0; i < rounds; i++) {
      const body: Record<string, unknown> = r.bool(0.7) ? { name: r.pick(["t", "..", "a/b", "ok-1"]) } : {};
      for (let f = r.int(4); f > 0; f--) body[r.pick(fields)] = values();
      const input = r.bool(0.1) ? values() : JSON.parse(JSON.stringify(body));
      onlyClientErrors(() => {
        const t = parseTopicCreate(input, d, new Date(0));
        expect(groupPattern.test(t.name) && t.name !== "." && t.name !== "..").toBe(true);
        expect(Number.isInteger(t.partitions) && t.partitions >= 1 && t.partitions <= 108).toBe(true);
      });
    }
  }, 60_000);

  it("message JSON: any key and payload bytes render as valid JSON that gives the bytes back", () => {
    const r = prng(seed + 5);
    const texts = [
      "{}",
      "[1,2]",
      " 7 ",
      "null",
      '"s"',
      "\u2028",
      '{"a":',
      "\ufeff{}",
      "1e400",
      "-0",
      "é",
      "\ud7ff",
    ];
    for (let i = 0; i < rounds; i++) {
      const kind = r.int(3);
      const payload =
        kind === 0
          ? r.bytes(r.int(40))
          : kind === 1
            ? Buffer.from(r.pick(texts))
            : mutate(r, Buffer.from(r.pick(texts)));
      const key = r.bool(0.5) ? r.bytes(r.int(10)) : Buffer.from(`k${i}`);
      const rec: StoredRecord = {
        offset: i,
        key,
        commitMs: 1_700_000_000_000,
        createdMs: 1_700_000_000_000,
        payload,
        incarnation: "00000000000000aa",
        seq: i + 1,
      };
      const rendered = messageJson(rec, {
        topic: "t",
        partition: 0,
        receiptHandle: r.bool(0.5) ? "h" : undefined,
      });
      const m = JSON.parse(rendered) as { payload: unknown; payload_encoding?: string; offset: number };
      expect(m.offset).toBe(i);
      if (!isUtf8(payload)) {
        expect(m.payload_encoding).toBe("base64");
        expect(Buffer.from(m.payload as string, "base64").equals(payload)).toBe(true);
        continue;
      }
      const text = payload.toString("utf8");
      let parsed: { ok: boolean; value?: unknown } = { ok: false };
      try {
        if (text.length > 0) parsed = { ok: true, value: JSON.parse(text) };
      } catch {
        // plain text
      }
      expect(m.payload_encoding).toBeUndefined();
      if (parsed.ok) expect(m.payload).toEqual(parsed.value);
      else expect(m.payload).toBe(text);
    }
  }, 60_000);
});
