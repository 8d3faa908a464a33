import { describe, expect, it } from "vitest";
import { paceAfter } from "./dispatch-pace.ts";

describe("paceAfter", () => {
  it("backs off only when a failure moved nothing", () => {
    expect(paceAfter({ records: 10, done: 0, failed: true })).toBe("backoff");
    expect(paceAfter({ records: 10, done: 3, failed: true })).toBe("now");
  });

  it("runs again at once after progress, waits when held, idles when empty", () => {
    expect(paceAfter({ records: 10, done: 10, failed: false })).toBe("now");
    expect(paceAfter({ records: 10, done: 0, failed: false })).toBe("stuck");
    expect(paceAfter({ records: 0, done: 0, failed: false })).toBe("idle");
  });
});
