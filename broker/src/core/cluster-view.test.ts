import { describe, expect, it } from "vitest";
import type { Member } from "../meta/types.ts";
import { memberViews, sortedMoves } from "./cluster-view.ts";

const member = (id: string, state: Member["state"] = "Active"): Member => ({
  id,
  address: `${id}:7942`,
  state,
});

describe("memberViews", () => {
  it("counts owned partitions and outbound moves per member, in Narad's shape, sorted by id", () => {
    const owners: Record<string, string[]> = { a: ["n1", "n2", "n1"], b: ["n3"] };
    const views = memberViews(
      [member("n3", "Decommissioning"), member("n1"), member("n2", "Down"), member("gone", "Removed")],
      [
        { name: "a", partitions: 3 },
        { name: "b", partitions: 1 },
      ],
      (t, p) => owners[t]?.[p] ?? "",
      [{ topic: "b", partition: 0, from: "n3", to: "n1" }],
    );
    expect(views).toEqual([
      {
        id: "n1",
        addr: "n1:7942",
        status: "alive",
        state: "Active",
        draining: false,
        owned_partitions: 2,
        outbound_moves: 0,
      },
      {
        id: "n2",
        addr: "n2:7942",
        status: "dead",
        state: "Down",
        draining: false,
        owned_partitions: 1,
        outbound_moves: 0,
      },
      {
        id: "n3",
        addr: "n3:7942",
        status: "alive",
        state: "Decommissioning",
        draining: true,
        owned_partitions: 1,
        outbound_moves: 1,
      },
    ]);
  });
  it("sorts moves by topic, then partition", () => {
    const m = (topic: string, partition: number) => ({ topic, partition, from: "a", to: "b" });
    expect(sortedMoves([m("b", 0), m("a", 2), m("a", 1)])).toEqual([m("a", 1), m("a", 2), m("b", 0)]);
  });
});
