import { describe, expect, it } from "vitest";
import { summarise, type TestEvent } from "./summary.ts";

describe("summarise", () => {
  it("counts top-level outcomes, keeps the first failure line and counts -skip'd tests", () => {
    const events: TestEvent[] = [
      { Action: "run", Test: "TestA" },
      { Action: "pass", Test: "TestA", Elapsed: 1 },
      { Action: "output", Test: "TestB/sub", Output: "    topic_test.go:12: status: got 415, want 201\n" },
      { Action: "output", Test: "TestB", Output: "    topic_test.go:40: later line\n" },
      { Action: "fail", Test: "TestB/sub" },
      { Action: "fail", Test: "TestB" },
      { Action: "skip", Test: "TestC" },
      { Action: "fail" },
    ];
    expect(summarise(events, { TestD: "in-process only" })).toEqual({
      total: 4,
      passed: 1,
      failed: 1,
      skipped: ["TestC", "TestD"],
      failures: [{ test: "TestB", reason: "status: got 415, want 201" }],
    });
  });
});
