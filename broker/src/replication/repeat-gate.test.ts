import { describe, expect, it } from "vitest";
import { RepeatGate } from "./repeat-gate.ts";

describe("RepeatGate", () => {
  it("logs the first of a kind, then once per interval with the count skipped", () => {
    const g = new RepeatGate(10_000);
    expect(g.offer("down", 0)).toEqual({ log: true, repeated: 0 });
    for (let t = 250; t < 10_000; t += 250) expect(g.offer("down", t).log).toBe(false);
    expect(g.offer("down", 10_000)).toEqual({ log: true, repeated: 39 });
    expect(g.offer("down", 10_250).log).toBe(false);
  });

  it("logs another kind at once, and the first failure after a reset", () => {
    const g = new RepeatGate(10_000);
    g.offer("down", 0);
    expect(g.offer("down", 100).log).toBe(false);
    expect(g.offer("not_leader", 200)).toEqual({ log: true, repeated: 0 });
    g.reset();
    expect(g.offer("not_leader", 300)).toEqual({ log: true, repeated: 0 });
  });
});
