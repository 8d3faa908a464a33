import { describe, expect, it } from "vitest";
import { editDistance, nearMissOf } from "./query-typos.ts";

const produce = ["key", "partition", "acks"];
const ack = ["receipt_handle", "extend"];

describe("nearMissOf: which unknown parameter is a typo of a known one", () => {
  it("names the parameter a typo meant", () => {
    expect(nearMissOf("kye", produce)).toBe("key");
    expect(nearMissOf("ky", produce)).toBe("key");
    expect(nearMissOf("partiton", produce)).toBe("partition");
    expect(nearMissOf("parition", produce)).toBe("partition");
    expect(nearMissOf("ack", produce)).toBe("acks");
    expect(nearMissOf("receipt-handle", ack)).toBe("receipt_handle");
    expect(nearMissOf("receiptHandle", ack)).toBe("receipt_handle");
    expect(nearMissOf("KEY", produce)).toBe("key");
  });

  it("leaves stray parameters alone, as Narad v1 ignores them", () => {
    // What Narad's own suite sends, and what proxies and cache-busters add.
    expect(nearMissOf("garbage", produce)).toBeUndefined();
    expect(nearMissOf("ignored", ack)).toBeUndefined();
    expect(nearMissOf("_", produce)).toBeUndefined();
    expect(nearMissOf("utm_source", produce)).toBeUndefined();
    expect(nearMissOf("anything", [])).toBeUndefined();
  });

  it("counts a transposition as one edit and stops past the limit", () => {
    expect(editDistance("kye", "key", 1)).toBe(1);
    expect(editDistance("abc", "abc", 1)).toBe(0);
    expect(editDistance("partition", "x", 2)).toBe(3);
    expect(editDistance("garbage", "partition", 2)).toBe(3);
  });
});
