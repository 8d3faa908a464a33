import { describe, expect, it } from "vitest";
import { ProducerDedup } from "./producer-dedup.ts";

const s = (seq: number, epoch = 1, id = "p1") => ({ id, epoch, seq });

describe("ProducerDedup", () => {
  it("accepts out-of-order sequences once each (no contiguity)", () => {
    const d = new ProducerDedup();
    for (const q of [7, 6, 9, 8]) {
      expect(d.verdict(s(q))).toBe("fresh");
      d.commit(s(q));
    }
    for (const q of [6, 7, 8, 9]) expect(d.verdict(s(q))).toBe("duplicate");
    // A gap below the highest is still fresh.
    expect(d.verdict(s(5))).toBe("fresh");
    expect(d.verdict(s(0))).toBe("fresh");
    expect(d.verdict(s(10))).toBe("fresh");
  });

  it("keeps a bounded window: seqs below highest - N count as duplicates", () => {
    const d = new ProducerDedup(16);
    d.commit(s(100));
    expect(d.verdict(s(85))).toBe("fresh"); // inside (84, 100]
    expect(d.verdict(s(84))).toBe("duplicate"); // below the window
    for (let q = 101; q <= 200; q++) d.commit(s(q));
    expect(d.verdict(s(190))).toBe("duplicate");
    expect(d.verdict(s(184))).toBe("duplicate");
    expect(d.verdict(s(201))).toBe("fresh");
  });

  it("fences lower epochs; a higher epoch starts a new window", () => {
    const d = new ProducerDedup();
    d.commit(s(10, 1));
    expect(d.verdict(s(11, 1))).toBe("fresh");
    expect(d.verdict(s(0, 2))).toBe("fresh");
    d.commit(s(0, 2));
    expect(d.epochOf("p1")).toBe(2);
    expect(d.verdict(s(11, 1))).toBe("fenced");
    expect(d.verdict(s(10, 1))).toBe("fenced");
    expect(d.verdict(s(0, 2))).toBe("duplicate");
    expect(d.verdict(s(1, 2))).toBe("fresh");
    // A stale commit (e.g. during rebuild order) does not lower the epoch.
    d.commit(s(50, 1));
    expect(d.epochOf("p1")).toBe(2);
  });

  it("tracks producers independently", () => {
    const d = new ProducerDedup();
    d.commit(s(1, 5, "a"));
    expect(d.verdict(s(1, 0, "b"))).toBe("fresh");
    expect(d.verdict(s(1, 5, "a"))).toBe("duplicate");
    expect(d.size).toBe(1);
  });
});
