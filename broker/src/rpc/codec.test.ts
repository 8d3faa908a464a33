import { status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import type { CommitRecord, StoredRecord } from "../core/records.ts";
import { TopicIdentityError } from "../core/topic-identity.ts";
import { NaradError } from "../errors.ts";
import { LogError } from "../log/log-errors.ts";
import {
  fromCommitRequest,
  fromCommitResponse,
  fromPbStats,
  fromPbStoredRecord,
  mergeCommitResults,
  pbCommitRecordBytes,
  toCommitRequests,
  toCommitResponse,
  toPbStats,
  toPbStoredRecord,
} from "./codec.ts";
import { clusterService } from "./proto.ts";
import { fromRpcError, NotOwnerError, toRpcFailure } from "./status.ts";

const inc = "0123456789abcdef";
const rec = (seq: number, payloadBytes = 10, incarnation = inc): CommitRecord => ({
  key: Buffer.from(`k${seq}`),
  createdMs: 1_700_000_000_000 + seq,
  payload: Buffer.alloc(payloadBytes, seq % 256),
  incarnation,
  seq,
});

describe("commit requests", () => {
  it("carries the topic uid per request and back onto every record (issue #13 item 1)", () => {
    const r = (seq: number, topicUid?: string): CommitRecord => ({
      key: Buffer.from("k"),
      createdMs: 1,
      payload: Buffer.from("p"),
      incarnation: "0123456789abcdef",
      seq,
      ...(topicUid === undefined ? {} : { topicUid }),
    });
    const reqs = toCommitRequests("t", 0, [r(1, "u1"), r(2, "u1"), r(3, "u2"), r(4)], 1 << 20);
    expect(reqs.map((q) => [q.topic_uid, q.records.length])).toEqual([
      ["u1", 2],
      ["u2", 1],
      ["", 1],
    ]);
    expect(fromCommitRequest(reqs[0]!).map((c) => c.topicUid)).toEqual(["u1", "u1"]);
    expect(fromCommitRequest(reqs[2]!)[0]!.topicUid).toBeUndefined();
    expect(toRpcFailure(new TopicIdentityError("other incarnation")).code).toBe(status.FAILED_PRECONDITION);
  });

  it("round-trips through the proto wire format", () => {
    const svc = clusterService().CommitBatch;
    const records = [rec(1), rec(2), rec(2 ** 40)];
    const [req] = toCommitRequests("orders", 7, records, 1 << 20);
    const decoded = svc.requestDeserialize(svc.requestSerialize(req!));
    expect(decoded.topic).toBe("orders");
    expect(decoded.partition).toBe(7);
    expect(fromCommitRequest(decoded)).toEqual(records);
  });

  it("splits above the byte cap in seq order; a record larger than the cap goes alone", () => {
    const records = [rec(1, 400), rec(2, 400), rec(3, 400), rec(4, 5000), rec(5, 10)];
    const cap = 2 * pbCommitRecordBytes(records[0]!) + 100;
    const reqs = toCommitRequests("t", 0, records, cap);
    expect(reqs.map((r) => r.records.map((x) => x.seq))).toEqual([[1, 2], [3], [4], [5]]);
  });

  it("starts a new request when the incarnation changes (one per request)", () => {
    const other = "fedcba9876543210";
    const reqs = toCommitRequests("t", 0, [rec(1), rec(2), rec(1, 10, other), rec(3)], 1 << 20);
    expect(reqs.map((r) => [r.incarnation, r.records.length])).toEqual([
      [inc, 2],
      [other, 1],
      [inc, 1],
    ]);
  });

  it("merges split results: sums, first appended offset", () => {
    expect(
      mergeCommitResults([
        { baseOffset: -1, appended: 0, duplicates: 3 },
        { baseOffset: 40, appended: 2, duplicates: 0 },
        { baseOffset: 42, appended: 1, duplicates: 0 },
      ]),
    ).toEqual({ baseOffset: 40, appended: 3, duplicates: 3 });
    expect(mergeCommitResults([])).toEqual({ baseOffset: -1, appended: 0, duplicates: 0 });
  });

  it("carries base_offset -1 (all duplicates) through the wire", () => {
    const svc = clusterService().CommitBatch;
    const r = { baseOffset: -1, appended: 0, duplicates: 5 };
    expect(fromCommitResponse(svc.responseDeserialize(svc.responseSerialize(toCommitResponse(r))))).toEqual(
      r,
    );
  });
});

describe("stored records and stats", () => {
  it("round-trip", () => {
    const svc = clusterService().Read;
    const r: StoredRecord = {
      offset: 2 ** 41,
      key: Buffer.from("key"),
      commitMs: 1_700_000_000_123,
      createdMs: 1_700_000_000_100,
      payload: Buffer.from([0, 1, 2, 255]),
      incarnation: inc,
      seq: 99,
    };
    const wire = svc.responseDeserialize(
      svc.responseSerialize({ records: [toPbStoredRecord(r)], high_watermark: 5, oldest_offset: 1 }),
    );
    expect(wire.records.map(fromPbStoredRecord)).toEqual([r]);
    const st = {
      index: 3,
      segments: 2,
      oldestOffset: 10,
      nextOffset: 20,
      highWatermark: 19,
      sizeBytes: 4096,
    };
    expect(fromPbStats(toPbStats(st))).toEqual(st);
  });
});

describe("status mapping", () => {
  it.each([
    [new NaradError("NOT_FOUND", "x"), status.NOT_FOUND, 404],
    [new NaradError("BAD_REQUEST", "x"), status.INVALID_ARGUMENT, 400],
    [new NaradError("OFFSET_EXPIRED", "x"), status.OUT_OF_RANGE, 410],
    [new LogError("OFFSET_EXPIRED", "x"), status.OUT_OF_RANGE, 410],
    [new NaradError("UNAVAILABLE", "x"), status.UNAVAILABLE, 503],
    [new LogError("LOG_FAILED", "x"), status.UNAVAILABLE, 503],
    [new NotOwnerError("x"), status.FAILED_PRECONDITION, 503],
    [new Error("boom"), status.INTERNAL, 503],
  ])("%s → %s → HTTP %s", (err, code, http) => {
    const f = toRpcFailure(err);
    expect(f.code).toBe(code);
    const back = fromRpcError(
      Object.assign(new Error(f.details), { code: f.code, details: f.details }),
      "b",
      1,
    );
    expect(back.status).toBe(http);
    if (http === 503) expect(back.retryAfterSeconds).toBe(1);
  });

  it("a transport failure (deadline, refused) is 503 with Retry-After", () => {
    for (const code of [status.DEADLINE_EXCEEDED, status.UNAVAILABLE, status.CANCELLED]) {
      const e = fromRpcError(Object.assign(new Error("x"), { code, details: "x" }), "b:7943", 1);
      expect(e.status).toBe(503);
      expect(e.retryAfterSeconds).toBe(1);
    }
    expect(fromRpcError("weird", "b", 2).status).toBe(503);
  });
});

describe("idempotent-producer fields", () => {
  it("CommitBatch carries producer stamps; records without one stay without", () => {
    const svc = clusterService().CommitBatch;
    const records: CommitRecord[] = [
      { ...rec(1), producer: { id: "prod-1", epoch: 0xffff_ffff, seq: 2 ** 45 } },
      rec(2),
      { ...rec(3), producer: { id: "prod-1", epoch: 0, seq: 0 } },
    ];
    const [req] = toCommitRequests("orders", 7, records, 1 << 20);
    const decoded = svc.requestDeserialize(svc.requestSerialize(req!));
    const back = fromCommitRequest(decoded);
    expect(back).toEqual(records);
    expect("producer" in back[1]!).toBe(false);
  });

  it("CommitBatchResponse carries fenced; stored records carry stamps", () => {
    const svc = clusterService().CommitBatch;
    const r = { baseOffset: 3, appended: 1, duplicates: 1, fenced: 2 };
    expect(fromCommitResponse(svc.responseDeserialize(svc.responseSerialize(toCommitResponse(r))))).toEqual(
      r,
    );
    expect(mergeCommitResults([r, { baseOffset: 9, appended: 1, duplicates: 0 }])).toEqual({
      baseOffset: 3,
      appended: 2,
      duplicates: 1,
      fenced: 2,
    });
    const read = clusterService().Read;
    const stored: StoredRecord = {
      offset: 1,
      key: Buffer.from("k"),
      commitMs: 2,
      createdMs: 1,
      payload: Buffer.from("v"),
      incarnation: inc,
      seq: 4,
      producer: { id: "a.b", epoch: 7, seq: 8 },
    };
    const wire = read.responseDeserialize(
      read.responseSerialize({ records: [toPbStoredRecord(stored)], high_watermark: 2, oldest_offset: 0 }),
    );
    expect(wire.records.map(fromPbStoredRecord)).toEqual([stored]);
  });
});
