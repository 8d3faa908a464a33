import { describe, expect, it } from "vitest";
import { decodeBinaryBatch, decodeNdjsonBatch, encodeBinaryBatch } from "./batch-codec.ts";

describe("binary batch", () => {
  it("round-trips keyed, keyless and pinned records", () => {
    const entries = [
      { partition: -1, key: Buffer.from("k1"), payload: Buffer.from("hello") },
      { partition: 2, key: Buffer.alloc(0), payload: Buffer.alloc(0) },
      { partition: -1, key: Buffer.alloc(0), payload: Buffer.alloc(1000, 7) },
    ];
    const decoded = decodeBinaryBatch(encodeBinaryBatch(entries), 1 << 20);
    expect(decoded.map((e) => [e.partition, e.key.toString(), e.payload.length])).toEqual([
      [-1, "k1", 5],
      [2, "", 0],
      [-1, "", 1000],
    ]);
  });

  it("rejects every truncation of a valid batch with a 400", () => {
    const body = encodeBinaryBatch([
      { partition: 0, key: Buffer.from("key"), payload: Buffer.from("payload") },
    ]);
    for (let cut = 1; cut < body.length; cut++) {
      expect(() => decodeBinaryBatch(body.subarray(0, cut), 1 << 20)).toThrow(/truncated/);
    }
  });

  it("rejects a payload above the record limit", () => {
    const body = encodeBinaryBatch([{ partition: 0, key: Buffer.alloc(0), payload: Buffer.alloc(100) }]);
    expect(() => decodeBinaryBatch(body, 99)).toThrow(/exceeds 99/);
  });
});

describe("ndjson batch", () => {
  it("stores strings as text, JSON values as JSON text, base64 decoded", () => {
    const body = Buffer.from(
      [
        '{"payload":"plain"}',
        '{"key":"k","partition":1,"payload":{"a":1}}',
        "",
        '{"payload":"aGk=","payload_encoding":"base64"}',
      ].join("\n"),
    );
    const decoded = decodeNdjsonBatch(body, 1 << 20);
    expect(decoded.map((e) => [e.partition, e.key.toString(), e.payload.toString()])).toEqual([
      [-1, "", "plain"],
      [1, "k", '{"a":1}'],
      [-1, "", "hi"],
    ]);
  });

  it.each([
    ["{not json}", /not valid JSON/],
    ['{"key":1,"payload":"x"}', /key must be a string/],
    ['{"partition":-1,"payload":"x"}', /partition must be/],
    ['{"key":"x"}', /payload is required/],
    ['{"payload":"x","other":1}', /unknown field/],
    ["[1]", /JSON object/],
  ])("rejects %s", (line, message) => {
    expect(() => decodeNdjsonBatch(Buffer.from(line), 1 << 20)).toThrow(message);
  });
});

describe("batch limits (issue #14)", () => {
  const limits = { maxRecords: 1000, maxKeyBytes: 0xffff };
  it("refuses a binary batch of more records than the cap, whole, without decoding them all", () => {
    // 10-byte records: a 64 MiB body would decode to 6.7 M objects.
    const body = Buffer.alloc(10 * 1001);
    for (let i = 0; i < 1001; i++) body.writeInt32BE(-1, i * 10);
    expect(() => decodeBinaryBatch(body, 1 << 20, limits)).toThrow(/more than 1000 records/);
    expect(decodeBinaryBatch(body.subarray(0, 10_000), 1 << 20, limits)).toHaveLength(1000);
  });
  it("refuses an ndjson batch of more lines than the cap", () => {
    const body = Buffer.from('{"payload":1}\n'.repeat(1001));
    expect(() => decodeNdjsonBatch(body, 1 << 20, limits)).toThrow(/more than 1000 records/);
  });
  it("refuses a binary partition below -1 instead of treating it as 'choose'", () => {
    const body = encodeBinaryBatch([{ partition: -2, key: Buffer.alloc(0), payload: Buffer.from("x") }]);
    expect(() => decodeBinaryBatch(body, 1 << 20)).toThrow(/below -1/);
  });
  it("caps ndjson keys at the binary format's 65,535 bytes", () => {
    const line = JSON.stringify({ key: "k".repeat(65_536), payload: 1 });
    expect(() => decodeNdjsonBatch(Buffer.from(line), 1 << 20)).toThrow(/key of 65536 bytes exceeds 65535/);
    const ok = JSON.stringify({ key: "k".repeat(65_535), payload: 1 });
    expect(decodeNdjsonBatch(Buffer.from(ok), 1 << 20)).toHaveLength(1);
  });
});
