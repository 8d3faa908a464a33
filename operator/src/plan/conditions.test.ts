import { describe, expect, it } from "vitest";
import { getCondition, isTrue, setCondition, setConditions } from "./conditions.ts";

describe("conditions", () => {
  it("adds, replaces by type and keeps lastTransitionTime while the status holds", () => {
    let c = setCondition(undefined, { type: "Ready", status: "False", reason: "A", message: "a" }, "t1");
    expect(c).toEqual([
      { type: "Ready", status: "False", reason: "A", message: "a", lastTransitionTime: "t1" },
    ]);
    c = setCondition(
      c,
      { type: "Ready", status: "False", reason: "B", message: "b", observedGeneration: 2 },
      "t2",
    );
    expect(c).toEqual([
      {
        type: "Ready",
        status: "False",
        reason: "B",
        message: "b",
        lastTransitionTime: "t1",
        observedGeneration: 2,
      },
    ]);
    c = setCondition(c, { type: "Ready", status: "True", reason: "C", message: "c" }, "t3");
    expect(getCondition(c, "Ready")?.lastTransitionTime).toBe("t3");
    expect(isTrue(c, "Ready")).toBe(true);
  });
  it("keeps other types and their order", () => {
    const c = setConditions(
      [{ type: "X", status: "True", reason: "r", message: "m", lastTransitionTime: "t0" }],
      [
        { type: "Ready", status: "True", reason: "r", message: "m" },
        { type: "X", status: "True", reason: "r2", message: "m2" },
      ],
      "t1",
    );
    expect(c.map((x) => x.type)).toEqual(["X", "Ready"]);
    expect(c[0]?.lastTransitionTime).toBe("t0");
    expect(isTrue(c, "Missing")).toBe(false);
  });
});
