import { describe, expect, it } from "vitest";
import { KeyedBuckets, TokenBucket } from "./token-bucket.ts";

describe("TokenBucket", () => {
  it("lets a burst through, then refuses with the time until the tokens are back", () => {
    const b = new TokenBucket({ rate: 10, burst: 5 }, 0);
    for (let i = 0; i < 5; i++) expect(b.take(1, 0)).toEqual({ ok: true });
    expect(b.take(1, 0)).toEqual({ ok: false, retryAfterMs: 100 });
    expect(b.take(1, 50)).toEqual({ ok: false, retryAfterMs: 50 });
    expect(b.take(1, 100)).toEqual({ ok: true });
  });

  it("refills at the rate up to the burst, never beyond", () => {
    const b = new TokenBucket({ rate: 100, burst: 10 }, 0);
    b.take(10, 0);
    expect(b.tokens(50)).toBeCloseTo(5);
    expect(b.tokens(10_000)).toBe(10);
    expect(b.idle(10_000)).toBe(true);
  });

  it("lets a take larger than the burst through from a full bucket and then owes the difference", () => {
    const b = new TokenBucket({ rate: 10, burst: 5 }, 0);
    expect(b.take(25, 0)).toEqual({ ok: true });
    expect(b.tokens(0)).toBe(-20);
    // Needs 1 token: 21 tokens away at 10/s.
    expect(b.take(1, 0)).toEqual({ ok: false, retryAfterMs: 2100 });
    // A second big one needs a full bucket: 25 tokens away.
    expect(b.take(25, 0)).toEqual({ ok: false, retryAfterMs: 2500 });
    expect(b.take(25, 2500)).toEqual({ ok: true });
  });

  it("ignores a clock going backwards", () => {
    const b = new TokenBucket({ rate: 1, burst: 1 }, 1000);
    expect(b.take(1, 1000).ok).toBe(true);
    expect(b.take(1, 500).ok).toBe(false);
    expect(b.take(1, 2000).ok).toBe(true);
  });

  it("rejects a nonsensical limit", () => {
    expect(() => new TokenBucket({ rate: 0, burst: 1 }, 0)).toThrow(RangeError);
    expect(() => new TokenBucket({ rate: 1, burst: 0 }, 0)).toThrow(RangeError);
  });
});

describe("KeyedBuckets", () => {
  it("keeps one bucket per key", () => {
    const k = new KeyedBuckets({ rate: 1, burst: 1 });
    expect(k.take("a", 1, 0).ok).toBe(true);
    expect(k.take("a", 1, 0).ok).toBe(false);
    expect(k.take("b", 1, 0).ok).toBe(true);
    expect(k.size).toBe(2);
  });

  it("forgets refilled buckets when full, so distinct keys do not pile up", () => {
    const k = new KeyedBuckets({ rate: 10, burst: 1 }, 3);
    k.take("a", 1, 0);
    k.take("b", 1, 0);
    k.take("c", 1, 0);
    // 200 ms later a, b, c are full again and get forgotten to make room.
    expect(k.take("d", 1, 200).ok).toBe(true);
    expect(k.size).toBe(1);
    // A forgotten key starts with a full bucket, as it would have had anyway.
    expect(k.take("a", 1, 200).ok).toBe(true);
  });
});

describe("check", () => {
  it("answers like take without taking", () => {
    const b = new TokenBucket({ rate: 10, burst: 2 }, 0);
    expect(b.check(2, 0)).toEqual({ ok: true });
    expect(b.check(2, 0)).toEqual({ ok: true });
    b.take(2, 0);
    expect(b.check(1, 0)).toEqual({ ok: false, retryAfterMs: 100 });
    const k = new KeyedBuckets({ rate: 1, burst: 1 });
    expect(k.check("x", 1, 0).ok).toBe(true);
    expect(k.size).toBe(0);
  });
});
