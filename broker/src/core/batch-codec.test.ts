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
