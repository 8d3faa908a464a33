import { describe, expect, it } from "vitest";
import type { ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";
import { type PlacementBroker, placeReplicas } from "./replica-placement.ts";

const brokers = (n: number, zones?: string[]): PlacementBroker[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `demo-${i}`,
    active: true,
    volumeId: `v${i}`,
    ...(zones ? { zone: zones[i % zones.length] as string } : {}),
  }));

const count = (xs: (string | null)[]) => {
  const c = new Map<string, number>();
  for (const x of xs) if (x !== null) c.set(x, (c.get(x) ?? 0) + 1);
  return c;
};

describe("placeReplicas", () => {
  it("puts each partition's replicas on distinct brokers, all in sync at epoch 0", () => {
    const r = placeReplicas({
      topic: "t",
      partitions: 12,
      replicationFactor: 3,
      brokers: brokers(5),
      previous: [],
    });
    expect(r.assignments).toHaveLength(12);
    for (const a of r.assignments) {
      expect(new Set(a.replicas).size).toBe(3);
      expect(a.leader).toBe(a.replicas[0]);
      expect(a.isr.map((m) => m.member)).toEqual(a.replicas);
      expect(a.isr.every((m) => m.volumeId === `v${m.member.slice(5)}`)).toBe(true);
      expect(a.leaderEpoch).toBe(0);
    }
    expect(r.underReplicated).toEqual([]);
    expect(r.changed).toBe(true);
  });

  it("spreads leaders evenly (counts differ by at most one) and replicas by load", () => {
    for (const [n, p, rf] of [
      [3, 7, 3],
      [5, 12, 3],
      [4, 9, 2],
      [5, 5, 5],
    ] as const) {
      const r = placeReplicas({
        topic: `t${n}${p}`,
        partitions: p,
        replicationFactor: rf,
        brokers: brokers(n),
        previous: [],
      });
      const leaders = [...count(r.assignments.map((a) => a.leader)).values()];
      while (leaders.length < Math.min(n, p)) leaders.push(0);
      expect(Math.max(...leaders) - Math.min(...leaders), `${n}/${p}/${rf}`).toBeLessThanOrEqual(1);
      const reps = [...count(r.assignments.flatMap((a) => a.replicas)).values()];
      expect(Math.max(...reps) - Math.min(...reps), `${n}/${p}/${rf}`).toBeLessThanOrEqual(1);
    }
  });

  it("spreads a partition across zones before doubling up a zone", () => {
    // 6 brokers in 3 zones, laid out a,a,b,b,c,c
    const bs = brokers(6).map((b, i) => ({ ...b, zone: ["a", "b", "c"][Math.floor(i / 2)] as string }));
    const r = placeReplicas({ topic: "z", partitions: 10, replicationFactor: 3, brokers: bs, previous: [] });
    const zoneOf = new Map(bs.map((b) => [b.id, b.zone]));
    for (const a of r.assignments) expect(new Set(a.replicas.map((id) => zoneOf.get(id))).size).toBe(3);
    // Two zones, RF 3: both zones used.
    const two = brokers(4, ["a", "b"]);
    const r2 = placeReplicas({
      topic: "z2",
      partitions: 6,
      replicationFactor: 3,
      brokers: two,
      previous: [],
    });
    const z2 = new Map(two.map((b) => [b.id, b.zone]));
    for (const a of r2.assignments) expect(new Set(a.replicas.map((id) => z2.get(id))).size).toBe(2);
  });

  it("is stable: re-planning its own output changes nothing", () => {
    const input = { topic: "s", partitions: 8, replicationFactor: 3, brokers: brokers(4) };
    const first = placeReplicas({ ...input, previous: [] });
    const again = placeReplicas({ ...input, previous: first.assignments });
    expect(again.changed).toBe(false);
    expect(again.assignments).toEqual(first.assignments);
    // A new broker does not move anything that is valid.
    const grown = placeReplicas({ ...input, brokers: brokers(6), previous: first.assignments });
    expect(grown.changed).toBe(false);
  });

  it("keeps leader, ISR and epoch; replaces a Removed broker by one outside the ISR", () => {
    const prev: ReplicaAssignment[] = [
      {
        partition: 0,
        leader: "demo-1",
        replicas: ["demo-1", "demo-2", "demo-0"],
        isr: [
          { member: "demo-1", volumeId: "v1" },
          { member: "demo-0", volumeId: "v0" },
        ],
        leaderEpoch: 7,
      },
    ];
    const bs = brokers(4).filter((b) => b.id !== "demo-2");
    const r = placeReplicas({ topic: "k", partitions: 1, replicationFactor: 3, brokers: bs, previous: prev });
    const a = r.assignments[0] as ReplicaAssignment;
    expect(a.leader).toBe("demo-1");
    expect(a.leaderEpoch).toBe(7);
    expect(a.replicas).toEqual(["demo-1", "demo-0", "demo-3"]);
    expect(a.isr.map((m) => m.member)).toEqual(["demo-1", "demo-0"]);
    expect(r.needElection).toEqual([]);
  });

  it("flags an election when the leader left, and never places on a non-Active broker", () => {
    const prev: ReplicaAssignment[] = [
      {
        partition: 0,
        leader: "demo-0",
        replicas: ["demo-0", "demo-1", "demo-2"],
        isr: ["demo-0", "demo-1", "demo-2"].map((member, i) => ({ member, volumeId: `v${i}` })),
        leaderEpoch: 2,
      },
    ];
    const bs = brokers(4)
      .filter((b) => b.id !== "demo-0")
      .map((b) => (b.id === "demo-3" ? { ...b, active: false } : b));
    const r = placeReplicas({ topic: "e", partitions: 1, replicationFactor: 3, brokers: bs, previous: prev });
    expect(r.needElection).toEqual([0]);
    expect(r.assignments[0]?.replicas).toEqual(["demo-1", "demo-2"]);
    expect(r.underReplicated).toEqual([0]);
  });

  it("shrinks to a lower factor without dropping the leader", () => {
    const first = placeReplicas({
      topic: "d",
      partitions: 4,
      replicationFactor: 3,
      brokers: brokers(3),
      previous: [],
    });
    const r = placeReplicas({
      topic: "d",
      partitions: 4,
      replicationFactor: 1,
      brokers: brokers(3),
      previous: first.assignments,
    });
    for (const [i, a] of r.assignments.entries()) {
      expect(a.replicas).toEqual([first.assignments[i]?.leader]);
      expect(a.isr.map((m) => m.member)).toEqual(a.replicas);
    }
  });

  it("adds a replacement beside a leaving replica (in its zone when it can), keeping the leaving one listed", () => {
    const prev: ReplicaAssignment[] = [
      {
        partition: 0,
        leader: "demo-0",
        replicas: ["demo-0", "demo-1", "demo-2"],
        isr: ["demo-0", "demo-1", "demo-2"].map((member, i) => ({ member, volumeId: `v${i}` })),
        leaderEpoch: 3,
      },
    ];
    // zones a, b, c, a, b: demo-2 (zone c) leaves; demo-3 (a) and demo-4 (b) are free, no free c.
    const bs = brokers(6, ["a", "b", "c"]).map((b) =>
      b.id === "demo-2" ? { ...b, leaving: true, active: false } : b,
    );
    const r = placeReplicas({ topic: "k", partitions: 1, replicationFactor: 3, brokers: bs, previous: prev });
    const a = r.assignments[0] as ReplicaAssignment;
    // demo-5 is the free broker in zone c, the leaving replica's zone.
    expect(a.replicas).toEqual(["demo-0", "demo-1", "demo-2", "demo-5"]);
    expect(a.isr.map((m) => m.member)).toEqual(["demo-0", "demo-1", "demo-2"]);
    expect(a.leaderEpoch).toBe(3);
    expect(r.underReplicated).toEqual([]);
    // Planned again: the replacement stays, nothing is trimmed.
    expect(
      placeReplicas({ topic: "k", partitions: 1, replicationFactor: 3, brokers: bs, previous: r.assignments })
        .changed,
    ).toBe(false);
  });

  it("reports under-replication when there are fewer brokers than the factor", () => {
    const r = placeReplicas({
      topic: "u",
      partitions: 2,
      replicationFactor: 3,
      brokers: brokers(2),
      previous: [],
    });
    expect(r.underReplicated).toEqual([0, 1]);
    for (const a of r.assignments) expect(a.replicas).toHaveLength(2);
  });
});
