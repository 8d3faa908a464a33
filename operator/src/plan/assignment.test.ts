import { describe, expect, it } from "vitest";
import { assignPartitions } from "./assignment.ts";

const members = ["demo-0", "demo-1", "demo-2"];

function counts(assignments: { owner: string }[]): Record<string, number> {
  const c: Record<string, number> = {};
  for (const a of assignments) c[a.owner] = (c[a.owner] ?? 0) + 1;
  return c;
}

describe("assignPartitions", () => {
  it("balances a new topic over Active members", () => {
    const r = assignPartitions({
      topic: "orders",
      partitions: 7,
      previous: [],
      memberIds: members,
      activeIds: members,
    });
    if (!r.ok) throw new Error(r.reason);
    expect(r.assignments.map((a) => a.partition)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const c = Object.values(counts(r.assignments)).sort();
    expect(c).toEqual([2, 2, 3]);
    expect(r.changed).toBe(true);
    expect(r.placed).toBe(7);
  });

  it("is deterministic and input-order independent", () => {
    const a = assignPartitions({
      topic: "t",
      partitions: 5,
      previous: [],
      memberIds: members,
      activeIds: members,
    });
    const b = assignPartitions({
      topic: "t",
      partitions: 5,
      previous: [],
      memberIds: members,
      activeIds: [...members].reverse(),
    });
    expect(a).toEqual(b);
  });

  it("spreads partition 0 of different topics", () => {
    const firstOwners = new Set(
      ["a", "b", "c", "d", "e", "f", "g", "h"].map((topic) => {
        const r = assignPartitions({
          topic,
          partitions: 1,
          previous: [],
          memberIds: members,
          activeIds: members,
        });
        return r.ok ? r.assignments[0]?.owner : undefined;
      }),
    );
    expect(firstOwners.size).toBeGreaterThan(1);
  });

  it("is sticky: existing owners keep partitions, even when Down", () => {
    const previous = [
      { partition: 0, owner: "demo-2" },
      { partition: 1, owner: "demo-2" },
      { partition: 2, owner: "demo-1" },
    ];
    const r = assignPartitions({
      topic: "t",
      partitions: 3,
      previous,
      memberIds: members,
      activeIds: ["demo-0", "demo-1"],
    });
    expect(r).toEqual({ ok: true, assignments: previous, changed: false, placed: 0 });
  });

  it("places only new partitions when the count grows, on the least loaded", () => {
    const previous = [
      { partition: 0, owner: "demo-0" },
      { partition: 1, owner: "demo-0" },
      { partition: 2, owner: "demo-1" },
    ];
    const r = assignPartitions({
      topic: "t",
      partitions: 5,
      previous,
      memberIds: members,
      activeIds: members,
    });
    if (!r.ok) throw new Error(r.reason);
    expect(r.assignments.slice(0, 3)).toEqual(previous);
    expect(r.assignments[3]?.owner).toBe("demo-2");
    expect(counts(r.assignments)).toEqual({ "demo-0": 2, "demo-1": 2, "demo-2": 1 });
  });

  it("reassigns partitions whose owner is no longer a member", () => {
    const previous = [
      { partition: 0, owner: "gone-0" },
      { partition: 1, owner: "demo-1" },
    ];
    const r = assignPartitions({
      topic: "t",
      partitions: 2,
      previous,
      memberIds: members,
      activeIds: members,
    });
    if (!r.ok) throw new Error(r.reason);
    expect(r.assignments[1]).toEqual({ partition: 1, owner: "demo-1" });
    expect(r.assignments[0]?.owner).not.toBe("gone-0");
    expect(r.assignments[0]?.owner).not.toBe("demo-1");
  });

  it("refuses when partitions need an owner and nobody is Active", () => {
    const r = assignPartitions({
      topic: "t",
      partitions: 2,
      previous: [],
      memberIds: members,
      activeIds: [],
    });
    expect(r).toEqual({ ok: false, reason: "2 partition(s) need an owner and no member is Active" });
  });
});
