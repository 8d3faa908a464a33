import { describe, expect, it } from "vitest";
import { messageJson } from "./message-json.ts";
import type { StoredRecord } from "./records.ts";

const rec = (payload: Buffer, key = "k"): StoredRecord => ({
  offset: 7,
  key: Buffer.from(key),
  commitMs: 1_700_000_000_123,
  createdMs: 1_700_000_000_000,
  payload,
  incarnation: "00".repeat(8),
  seq: 1,
});

describe("messageJson", () => {
  it("embeds valid JSON payloads verbatim", () => {
    const m = JSON.parse(messageJson(rec(Buffer.from('{"n": 1.50}')), { topic: "t", partition: 2 }));
    expect(m).toMatchObject({
      topic: "t",
      partition: 2,
      offset: 7,
      key: "k",
      timestamp: 1_700_000_000,
      payload: { n: 1.5 },
    });
    expect(messageJson(rec(Buffer.from('{"n": 1.50}')), { topic: "t", partition: 2 })).toContain(
      '"payload":{"n": 1.50}',
    );
  });
  it("renders text as a JSON string", () => {
    expect(
      JSON.parse(messageJson(rec(Buffer.from("hello world")), { topic: "t", partition: 0 })).payload,
    ).toBe("hello world");
    expect(JSON.parse(messageJson(rec(Buffer.alloc(0)), { topic: "t", partition: 0 })).payload).toBe("");
  });
  it("base64-encodes binary payloads and says so", () => {
    const m = JSON.parse(messageJson(rec(Buffer.from([0xff, 0xfe, 0x00])), { topic: "t", partition: 0 }));
    expect(m.payload_encoding).toBe("base64");
    expect(Buffer.from(m.payload, "base64")).toEqual(Buffer.from([0xff, 0xfe, 0x00]));
  });
  it("includes the receipt handle only when given", () => {
    expect(messageJson(rec(Buffer.from("x")), { topic: "t", partition: 0 })).not.toContain("receipt_handle");
    expect(
      JSON.parse(messageJson(rec(Buffer.from("x")), { topic: "t", partition: 0, receiptHandle: "0:7:1" }))
        .receipt_handle,
    ).toBe("0:7:1");
  });
});
