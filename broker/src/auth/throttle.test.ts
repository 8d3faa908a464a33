import { describe, expect, it } from "vitest";
import { LoginThrottle } from "./throttle.ts";

describe("LoginThrottle", () => {
  it("allows 5 failures, then one attempt per 12 s, refusing the rest with the time left", () => {
    const t = new LoginThrottle();
    let now = 1_000_000;
    for (let i = 0; i < 5; i++) {
      expect(t.begin("bob", now)).toEqual({ allowed: true });
      t.failed("bob", now);
      now += 100;
    }
    expect(t.begin("bob", now)).toEqual({ allowed: false, retryAfterMs: 12_000 - 100 });
    // Other users are not affected.
    expect(t.begin("carol", now)).toEqual({ allowed: true });
    now += 11_900;
    expect(t.begin("bob", now)).toEqual({ allowed: true });
    // That attempt used the slot: the next one waits another 12 s even before its result.
    expect(t.begin("bob", now + 1).allowed).toBe(false);
    t.failed("bob", now);
    expect(t.begin("bob", now + 11_999).allowed).toBe(false);
    expect(t.begin("bob", now + 12_000).allowed).toBe(true);
  });
  it("a success clears the count; 60 s without failures forgets it", () => {
    const t = new LoginThrottle();
    for (let i = 0; i < 5; i++) t.failed("bob", 0);
    expect(t.begin("bob", 1).allowed).toBe(false);
    t.succeeded("bob");
    expect(t.begin("bob", 2).allowed).toBe(true);
    for (let i = 0; i < 5; i++) t.failed("dan", 0);
    expect(t.begin("dan", 59_999).allowed).toBe(true); // 12 s passed since the last attempt
    t.failed("dan", 59_999);
    expect(t.begin("dan", 60_000).allowed).toBe(false);
    expect(t.begin("dan", 59_999 + 60_000).allowed).toBe(true);
    expect(t.size).toBe(0);
  });
  it("keeps a bounded table", () => {
    const t = new LoginThrottle({
      freeFailures: 5,
      intervalMs: 12_000,
      forgetAfterMs: 60_000,
      maxEntries: 3,
    });
    for (let i = 0; i < 10; i++) t.failed(`u${i}`, 0);
    expect(t.size).toBe(3);
  });
});
