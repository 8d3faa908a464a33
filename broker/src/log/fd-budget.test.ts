import { describe, expect, it } from "vitest";
import { FdBudget } from "./fd-budget.ts";

describe("FdBudget", () => {
  it("refuses opens past the budget and frees a slot on close or a failed open", () => {
    const b = new FdBudget(2);
    expect(b.reserve()).toBe(true);
    expect(b.reserve()).toBe(true);
    expect(b.reserve()).toBe(false);
    b.settle("a/0", true, 1);
    b.settle("a/1", false, 1);
    expect(b.openCount).toBe(1);
    expect(b.reserve()).toBe(true);
    b.settle("a/2", true, 2);
    expect(b.reserve()).toBe(false);
    b.closed("a/0");
    expect(b.reserve()).toBe(true);
  });
  it("lists logs idle since a time, least recently used first", () => {
    const b = new FdBudget(10);
    for (const [k, t] of [
      ["x", 1],
      ["y", 2],
      ["z", 3],
    ] as const) {
      b.reserve();
      b.settle(k, true, t);
    }
    b.touch("x", 4);
    expect(b.idleSince(4)).toEqual(["y", "z"]);
  });
});
