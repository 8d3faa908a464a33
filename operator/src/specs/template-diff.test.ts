import { describe, expect, it } from "vitest";
import { describeDiff, templateDiff } from "./template-diff.ts";

describe("templateDiff", () => {
  it("ignores fields only the live object has (server defaults)", () => {
    expect(templateDiff({ a: 1, b: { c: 2, d: 3 } }, { b: { c: 2 } })).toBeUndefined();
  });
  it("names the first differing field", () => {
    const d = templateDiff({ spec: { x: 1, y: 2 } }, { spec: { x: 1, y: 3 } });
    expect(d).toEqual({ path: "spec.y", current: 2, desired: 3 });
    expect(describeDiff(d!)).toBe("spec.y: 2 → 3");
  });
  it("matches named lists by name and reports removed items", () => {
    const live = {
      containers: [
        { name: "b", image: "2" },
        { name: "a", image: "1" },
      ],
    };
    expect(
      templateDiff(live, {
        containers: [
          { name: "a", image: "1" },
          { name: "b", image: "2" },
        ],
      }),
    ).toBeUndefined();
    expect(
      templateDiff(live, {
        containers: [
          { name: "a", image: "9" },
          { name: "b", image: "2" },
        ],
      })?.path,
    ).toBe("containers[a].image");
    const removed = templateDiff(live, { containers: [{ name: "a", image: "1" }] });
    expect(removed?.path).toBe("containers[b]");
    expect(removed?.desired).toBeUndefined();
  });
  it("compares plain lists by position and length", () => {
    expect(templateDiff({ args: ["a", "b"] }, { args: ["a", "b"] })).toBeUndefined();
    expect(templateDiff({ args: ["a", "b"] }, { args: ["a"] })?.path).toBe("args");
    expect(templateDiff({ args: ["a", "b"] }, { args: ["a", "c"] })?.path).toBe("args[1]");
  });
  it("treats numbers and numeric strings alike, and missing as different", () => {
    expect(templateDiff({ port: "7942" }, { port: 7942 })).toBeUndefined();
    expect(templateDiff({}, { a: { b: 1 } })).toEqual({ path: "a", current: undefined, desired: { b: 1 } });
    expect(describeDiff({ path: "x", current: undefined, desired: "y".repeat(100) })).toMatch(
      /<unset> → y+\.\.\.$/,
    );
  });
});
