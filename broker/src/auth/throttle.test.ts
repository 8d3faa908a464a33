import { describe, expect, it } from "vitest";
import { LoginThrottle } from "./throttle.ts";

const small = { freeFailures: 5, intervalMs: 12_000, forgetAfterMs: 60_000, maxEntries: 3 };

describe("LoginThrottle", () => {
  it("allows 5 attempts, then one per 12 s, refusing the rest with the time left", () => {
    const t = new LoginThrottle();
    let now = 1_000_000;
    for (let i = 0; i < 5; i++) {
      expect(t.begin("bob", now)).toEqual({ allowed: true });
      now += 100;
    }
    expect(t.begin("bob", now)).toEqual({ allowed: false, retryAfterMs: 12_000 - 100, reason: "throttled" });
    // Other keys are not affected.
    expect(t.begin("carol", now)).toEqual({ allowed: true });
    now += 11_900;
    expect(t.begin("bob", now)).toEqual({ allowed: true });
    expect(t.begin("bob", now + 1).allowed).toBe(false);
    expect(t.begin("bob", now + 11_999).allowed).toBe(false);
    expect(t.begin("bob", now + 12_000).allowed).toBe(true);
  });

  it("counts an attempt when it begins: a burst of concurrent guesses gets only the free ones", () => {
    // Before, the failure was recorded after the awaited hash, so all 60 passed.
    const t = new LoginThrottle();
    const allowed = Array.from({ length: 60 }, () => t.begin("scrypt-user", 0)).filter((d) => d.allowed);
    expect(allowed).toHaveLength(5);
  });

  it("a success clears the count; 60 s without attempts forgets it", () => {
    const t = new LoginThrottle();
    for (let i = 0; i < 5; i++) t.begin("bob", 0);
    expect(t.begin("bob", 1).allowed).toBe(false);
    t.succeeded("bob");
    expect(t.begin("bob", 2).allowed).toBe(true);
    for (let i = 0; i < 6; i++) t.begin("dan", 0);
    expect(t.begin("dan", 59_999).allowed).toBe(true);
    expect(t.begin("dan", 60_000).allowed).toBe(false);
    expect(t.begin("dan", 59_999 + 60_000).allowed).toBe(true);
  });

  it("keeps a bounded table, and eviction never frees a throttled key", () => {
    const t = new LoginThrottle(small);
    for (let i = 0; i < 6; i++) t.begin("target", 0);
    expect(t.begin("target", 1).allowed).toBe(false);
    // Random usernames push through the table: the throttled key stays.
    for (let i = 0; i < 10_001; i++) t.begin(`u${i}`, 2);
    expect(t.size).toBe(3);
    expect(t.begin("target", 3).allowed).toBe(false);
  });

  it("refuses a new key when every entry is throttled, until entries expire", () => {
    const t = new LoginThrottle(small);
    for (const k of ["a", "b", "c"]) for (let i = 0; i < 5; i++) t.begin(k, 0);
    expect(t.begin("d", 1)).toMatchObject({ allowed: false, reason: "table_full" });
    expect(t.begin("d", 60_000).allowed).toBe(true);
  });

  it("one client address cannot fill the table and lock everyone else out", () => {
    const t = new LoginThrottle({ ...small, maxEntries: 100, maxEntriesPerClient: 10 });
    // A stranger at 6.6.6.6 cycles through made-up usernames, 5 attempts each.
    for (let u = 0; u < 200; u++) for (let i = 0; i < 5; i++) t.begin(`u${u}@6.6.6.6`, 0, "6.6.6.6");
    expect(t.size).toBe(10);
    expect(t.begin("u999\x006.6.6.6", 1, "6.6.6.6")).toMatchObject({ allowed: false, reason: "table_full" });
    // The real user, from her own address, still gets her attempts.
    expect(t.begin("alice\x0010.0.0.1", 1, "10.0.0.1")).toEqual({ allowed: true });
    // The stranger's share comes back as its entries expire.
    expect(t.begin("u999\x006.6.6.6", 60_000, "6.6.6.6").allowed).toBe(true);
  });

  it("a refunded attempt (no password checked) does not count", () => {
    const t = new LoginThrottle();
    for (let i = 0; i < 50; i++) {
      expect(t.begin("bob", 0, "a").allowed).toBe(true);
      t.refund("bob");
    }
    expect(t.size).toBe(0);
    for (let i = 0; i < 5; i++) expect(t.begin("bob", 0, "a").allowed).toBe(true);
    expect(t.begin("bob", 0, "a").allowed).toBe(false);
  });
});
