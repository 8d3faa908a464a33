import { describe, expect, it } from "vitest";
import { capRefusal } from "./topic-caps.ts";

describe("capRefusal", () => {
  const caps = { maxTopics: 2, maxPartitions: 10 };
  it("allows topics and partitions up to the caps", () => {
    expect(capRefusal([{ partitions: 4 }], 1, 6, caps)).toBeUndefined();
  });
  it("refuses a topic past maxTopics and partitions past maxPartitions with a 409", () => {
    expect(capRefusal([{ partitions: 1 }, { partitions: 1 }], 1, 1, caps)?.status).toBe(409);
    expect(capRefusal([{ partitions: 4 }], 1, 7, caps)?.message).toMatch(/--max-partitions 10/);
    // Growing a topic counts only its new partitions.
    expect(capRefusal([{ partitions: 9 }], 0, 2, caps)?.status).toBe(409);
  });
});
