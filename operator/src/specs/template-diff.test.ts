import { describe, expect, it } from "vitest";
import { describeDiff, quantityEqual, templateDiff } from "./template-diff.ts";

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

describe("quantities the API server normalised (issue #21 item 12)", () => {
  it("0.5 vs 500m, 1Gi vs 1024Mi, 1 vs 1000m are no drift; 1 vs 2 is", () => {
    const want = { containers: [{ name: "narad", resources: { limits: { cpu: "0.5", memory: "1Gi" } } }] };
    const live = {
      containers: [{ name: "narad", resources: { limits: { cpu: "500m", memory: "1024Mi" } } }],
    };
    expect(templateDiff(live, want)).toBeUndefined();
    expect(quantityEqual("1", "1000m")).toBe(true);
    expect(quantityEqual(2, "2")).toBe(true);
    expect(quantityEqual("1e3", "1k")).toBe(true);
    expect(quantityEqual("1", "2")).toBe(false);
    expect(quantityEqual("1Gi", "1G")).toBe(false);
    const grown = { containers: [{ name: "narad", resources: { limits: { cpu: "1", memory: "1Gi" } } }] };
    expect(templateDiff(live, grown)?.path).toBe("containers[narad].resources.limits.cpu");
  });
  it("outside resources, equal amounts in other spellings still differ (not quantities)", () => {
    expect(
      templateDiff({ env: [{ name: "X", value: "500m" }] }, { env: [{ name: "X", value: "0.5" }] }),
    ).toBeDefined();
  });
});
