// The pure decisions of the sealed-segment handle cache: the bound counts
// opening and closing handles, a pinned handle is never evicted, eviction is
// least recently used, a full cache of pinned handles makes callers wait,
// and a dropped key is never handed out again.

import { describe, expect, it } from "vitest";
import { HandleLru } from "./handle-lru.ts";

describe("HandleLru", () => {
  it("evicts the least recently used unpinned handle, and counts it until closed", () => {
    const lru = new HandleLru<string>(2);
    expect(lru.pin("a")).toEqual({ kind: "open" });
    lru.unpin("a");
    expect(lru.pin("b")).toEqual({ kind: "open" });
    lru.unpin("b");
    // a is used again: b becomes the least recently used.
    expect(lru.pin("a")).toEqual({ kind: "hit" });
    lru.unpin("a");
    expect(lru.pin("c")).toEqual({ kind: "evict", victim: "b" });
    expect(lru.has("b")).toBe(false);
    // b's fd is not free until its close returned: c must not open yet.
    expect(lru.used).toBe(2);
    expect(lru.pin("c")).toEqual({ kind: "evict", victim: "a" });
    lru.closed();
    lru.closed();
    expect(lru.pin("c")).toEqual({ kind: "open" });
    expect(lru.used).toBe(1);
    lru.unpin("c");
  });

  it("never evicts a pinned handle; with every slot pinned a new key waits", () => {
    const lru = new HandleLru<string>(2);
    lru.pin("a");
    lru.pin("b");
    expect(lru.pin("c")).toEqual({ kind: "wait" });
    expect(lru.pinned).toBe(2);
    // A second read of a pinned key shares its handle.
    expect(lru.pin("a")).toEqual({ kind: "hit" });
    lru.unpin("a");
    expect(lru.pin("c")).toEqual({ kind: "wait" });
    lru.unpin("a");
    expect(lru.pin("c")).toEqual({ kind: "evict", victim: "a" });
    expect(lru.pin("c")).toEqual({ kind: "wait" });
    lru.closed();
    expect(lru.pin("c")).toEqual({ kind: "open" });
    expect(lru.used).toBe(2);
  });

  it("a dropped key closes at its last unpin and is never handed out again", () => {
    const lru = new HandleLru<string>(4);
    lru.pin("a");
    lru.pin("a");
    expect(lru.drop("a")).toBe(false);
    expect(lru.pin("a")).toEqual({ kind: "gone" });
    expect(lru.unpin("a")).toBe(false);
    expect(lru.unpin("a")).toBe(true);
    lru.closed();
    expect(lru.used).toBe(0);
    // Idle at drop: close now.
    lru.pin("b");
    lru.unpin("b");
    expect(lru.drop("b")).toBe(true);
    lru.closed();
    // Unknown key: nothing to close.
    expect(lru.drop("z")).toBe(false);
  });

  it("a failed open frees its slot", () => {
    const lru = new HandleLru<string>(1);
    lru.pin("a");
    lru.openFailed("a");
    expect(lru.used).toBe(0);
    expect(lru.pin("b")).toEqual({ kind: "open" });
  });

  it("refuses a bound below 1", () => {
    expect(() => new HandleLru(0)).toThrow(RangeError);
  });
});
