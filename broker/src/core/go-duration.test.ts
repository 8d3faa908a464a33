import { describe, expect, it } from "vitest";
import { parseGoDurationMs } from "./go-duration.ts";

describe("parseGoDurationMs", () => {
  it.each([
    ["0", 0],
    ["10s", 10_000],
    ["1m30s", 90_000],
    [".3s", 300],
    ["300000us", 300],
    ["-1s", -1000],
    ["1.5ns", 1],
  ])("%s is %d ms", (text, ms) => {
    expect(parseGoDurationMs(text)).toBe(ms);
  });
  it.each(["", "10", "s", "1x", ".s", "1s2", "--1s"])("%j is not a Go duration", (text) => {
    expect(parseGoDurationMs(text)).toBeUndefined();
  });
});
