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

describe("assignPartitions: fan-out children away from the parent", () => {
  it("places each partition on another Active member than the parent's owner of it, when there is one", () => {
    const ids = ["demo-0", "demo-1", "demo-2"];
    const parent = assignPartitions({
      topic: "orders",
      partitions: 6,
      previous: [],
      memberIds: ids,
      activeIds: ids,
    });
    if (!parent.ok) throw new Error("parent not placed");
    const avoid = new Map(parent.assignments.map((a) => [a.partition, a.owner]));
    const child = assignPartitions({
      topic: "orders-audit",
      partitions: 6,
      previous: [],
      memberIds: ids,
      activeIds: ids,
      avoid,
    });
    if (!child.ok) throw new Error("child not placed");
    for (const a of child.assignments) expect(a.owner).not.toBe(avoid.get(a.partition));
    // Still balanced: 2 each.
    const load = new Map<string, number>();
    for (const a of child.assignments) load.set(a.owner, (load.get(a.owner) ?? 0) + 1);
    expect([...load.values()].sort()).toEqual([2, 2, 2]);
    // One Active member: it takes them anyway. Placed partitions stay (sticky).
    const one = assignPartitions({
      topic: "c",
      partitions: 2,
      previous: [],
      memberIds: ids,
      activeIds: ["demo-0"],
      avoid: new Map([[0, "demo-0"]]),
    });
    expect(one.ok && one.assignments.map((a) => a.owner)).toEqual(["demo-0", "demo-0"]);
    const kept = assignPartitions({
      topic: "orders-audit",
      partitions: 6,
      previous: child.assignments,
      memberIds: ids,
      activeIds: ids,
      avoid: new Map(child.assignments.map((a) => [a.partition, a.owner])),
    });
    expect(kept.ok && kept.changed).toBe(false);
  });
});
