import { describe, expect, it } from "vitest";
import { encodeHandle, parseHandle, type ReceiptHandle } from "./consumer-handle.ts";

const pattern = /^[A-Za-z0-9._-]{1,255}$/;

describe("receipt handles", () => {
  const cases: Array<[string, ReceiptHandle, string]> = [
    [
      "default group",
      { group: "default", partition: 0, offset: 0, epoch: "0123456789ab", nonce: 1 },
      "0:0:0123456789ab.1",
    ],
    [
      "named group",
      {
        group: "billing.v2",
        partition: 107,
        offset: 9_007_199_254_740_991,
        epoch: "ffffffffffff",
        nonce: 36,
      },
      "billing.v2:107:9007199254740991:ffffffffffff.10",
    ],
  ];
  it.each(cases)("round-trips %s", (_name, h, text) => {
    expect(encodeHandle(h)).toBe(text);
    expect(parseHandle(text, pattern)).toEqual({ ok: true, handle: h });
  });

  const malformed: Array<[string, string]> = [
    ["empty", ""],
    ["too few fields", "0:1"],
    ["too many fields", "a:b:0:1:0123456789ab.1"],
    ["bad group", "a/b:0:1:0123456789ab.1"],
    ["dot group", "..:0:1:0123456789ab.1"],
    ["negative partition", "-1:1:0123456789ab.1"],
    ["leading zero", "01:1:0123456789ab.1"],
    ["offset not a number", "0:x:0123456789ab.1"],
    ["offset too large", "0:99999999999999999:0123456789ab.1"],
    ["no nonce", "0:1:0123456789ab"],
    ["short epoch", "0:1:0123.1"],
    ["upper-case epoch", "0:1:0123456789AB.1"],
    ["zero nonce", "0:1:0123456789ab.0"],
    ["bad nonce", "0:1:0123456789ab.!"],
    ["too long", `${"g".repeat(600)}:0:1:0123456789ab.1`],
  ];
  it.each(malformed)("refuses %s", (_name, text) => {
    const r = parseHandle(text, pattern);
    expect(r.ok).toBe(false);
  });
});
