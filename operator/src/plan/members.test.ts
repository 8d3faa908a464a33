import { describe, expect, it } from "vitest";
import type { MemberStatus } from "../../../packages/api/src/v1alpha1/types.ts";
import { activeMemberIds, type MembersInput, planMembers } from "./members.ts";
import { ordinalOf, type PodView, podView } from "./pods.ts";

const NOW = Date.parse("2026-11-29T12:00:00Z");

function pod(ordinal: number, ready: boolean, extra: Partial<PodView> = {}): PodView {
  return {
    name: `demo-${ordinal}`,
    ordinal,
    uid: `u${ordinal}`,
    podIP: `127.1.0.${ordinal + 1}`,
    ready,
    notReadySinceMs: ready ? undefined : NOW - 1000,
    terminating: false,
    revision: "rev1",
    ...extra,
  };
}

function member(
  ordinal: number,
  state: MemberStatus["state"],
  since = "2026-11-29T11:00:00.000Z",
): MemberStatus {
  return {
    id: `demo-${ordinal}`,
    pod: `demo-${ordinal}`,
    ordinal,
    state,
    since,
    address: `127.1.0.${ordinal + 1}:7942`,
  };
}

function input(over: Partial<MembersInput>): MembersInput {
  return {
    statefulSetName: "demo",
    replicas: 3,
    pods: [],
    previous: [],
    previousEpoch: 0,
    downGraceMs: 30_000,
    nowMs: NOW,
    notReadySinceMs: new Map(),
    port: 7942,
    ...over,
  };
}

describe("planMembers", () => {
  it("new pods join, ready pods become Active, and the epoch bumps", () => {
    const r = planMembers(input({ pods: [pod(0, true), pod(1, false)] }));
    expect(r.members.map((m) => [m.id, m.state, m.address])).toEqual([
      ["demo-0", "Active", "127.1.0.1:7942"],
      ["demo-1", "Joining", "127.1.0.2:7942"],
      ["demo-2", "Joining", undefined],
    ]);
    expect(r.epoch).toBe(1);
    expect(r.changed).toBe(true);
    expect(r.transitions).toContain("demo-0: (new) → Active (pod ready)");
    expect(activeMemberIds(r.members)).toEqual(["demo-0"]);
  });

  it("an unchanged membership keeps its epoch and since", () => {
    const prev = [member(0, "Active"), member(1, "Active"), member(2, "Active")];
    const r = planMembers(
      input({ pods: [pod(0, true), pod(1, true), pod(2, true)], previous: prev, previousEpoch: 7 }),
    );
    expect(r.changed).toBe(false);
    expect(r.epoch).toBe(7);
    expect(r.members).toEqual(prev.map((m) => ({ ...m, revision: "rev1" })));
  });

  it("an Active member stays Active within the grace period, then goes Down", () => {
    const prev = [member(0, "Active"), member(1, "Active"), member(2, "Active")];
    const pods = [pod(0, true), pod(1, false, { notReadySinceMs: NOW - 10_000 }), pod(2, true)];
    const unreachable = new Map([["demo-1", NOW]]);
    const r = planMembers(
      input({ pods, previous: prev, previousEpoch: 3, brokerUnreachableSinceMs: unreachable }),
    );
    expect(r.members[1]?.state).toBe("Active");
    expect(r.changed).toBe(false);
    // The clock starts at the operator's own first observation, whatever the kubelet wrote.
    expect(r.notReadySinceMs.get("demo-1")).toBe(NOW);
    expect(r.recheckAfterMs).toBe(5_000);
    const later = planMembers(
      input({
        pods,
        previous: prev,
        previousEpoch: 3,
        nowMs: NOW + 30_000,
        notReadySinceMs: r.notReadySinceMs,
        brokerUnreachableSinceMs: unreachable,
      }),
    );
    expect(later.members[1]?.state).toBe("Down");
    expect(later.members[1]?.since).toBe(new Date(NOW + 30_000).toISOString());
    expect(later.epoch).toBe(4);
    expect(later.transitions).toEqual([
      "demo-1: Active → Down (pod not ready for 30s, broker unreachable for 30s)",
    ]);
  });

  it("a missing pod counts from when it was first seen missing, across a replacement pod", () => {
    const prev = [member(0, "Active")];
    const r1 = planMembers(input({ replicas: 1, previous: prev, pods: [] }));
    expect(r1.members[0]?.state).toBe("Active");
    expect(r1.members[0]?.address).toBe("127.1.0.1:7942");
    // the replacement pod appears 20s later, not ready, created "now": the clock must not restart
    const replacement = pod(0, false, { notReadySinceMs: NOW + 20_000, podIP: "127.1.0.9" });
    const r2 = planMembers(
      input({
        replicas: 1,
        previous: r1.members,
        pods: [replacement],
        nowMs: NOW + 30_000,
        notReadySinceMs: r1.notReadySinceMs,
        brokerUnreachableSinceMs: new Map([["demo-0", NOW]]),
      }),
    );
    expect(r2.members[0]?.state).toBe("Down");
    expect(r2.members[0]?.address).toBe("127.1.0.9:7942");
  });

  it("a Down member comes back Active when its pod is ready; ready clears the clock", () => {
    const r = planMembers(
      input({
        replicas: 1,
        previous: [member(0, "Down")],
        pods: [pod(0, true)],
        notReadySinceMs: new Map([["demo-0", NOW - 99_000]]),
      }),
    );
    expect(r.members[0]?.state).toBe("Active");
    expect(r.notReadySinceMs.size).toBe(0);
    const stillDown = planMembers(
      input({ replicas: 1, previous: [member(0, "Down")], pods: [pod(0, false)] }),
    );
    expect(stillDown.members[0]?.state).toBe("Down");
  });

  it("keeps Decommissioning beyond replicas whatever the pod does", () => {
    const prev = [member(0, "Active"), member(1, "Decommissioning")];
    const r = planMembers(
      input({
        replicas: 1,
        previous: prev,
        pods: [pod(0, true), pod(1, false, { notReadySinceMs: NOW - 999_000 })],
      }),
    );
    expect(r.members.map((m) => m.state)).toEqual(["Active", "Decommissioning"]);
  });

  it("scale holds set Decommissioning/Removed; scaled back up, a held member is re-admitted", () => {
    const prev = [member(0, "Active"), member(1, "Active")];
    const held = planMembers(
      input({
        replicas: 1,
        previous: prev,
        pods: [pod(0, true), pod(1, true)],
        holds: new Map([["demo-1", "Decommissioning"]]),
      }),
    );
    expect(held.members.map((m) => m.state)).toEqual(["Active", "Decommissioning"]);
    expect(held.transitions).toEqual(["demo-1: Active → Decommissioning (scale-down)"]);
    const back = planMembers(
      input({ replicas: 2, previous: held.members, pods: [pod(0, true), pod(1, true)] }),
    );
    expect(back.members.map((m) => m.state)).toEqual(["Active", "Active"]);
    expect(back.transitions).toEqual(["demo-1: Decommissioning → Active (scaled back up, pod ready)"]);
    // A Removed member is listed while its pod exists, then dropped.
    const removed = [member(0, "Active"), member(1, "Removed")];
    expect(
      planMembers(input({ replicas: 1, previous: removed, pods: [pod(0, true), pod(1, true)] })).members,
    ).toHaveLength(2);
    expect(planMembers(input({ replicas: 1, previous: removed, pods: [pod(0, true)] })).members).toHaveLength(
      1,
    );
  });

  describe("planned restart (Maintenance)", () => {
    const cases: Array<{
      name: string;
      prev: MemberStatus["state"];
      held: boolean;
      pod: PodView | undefined;
      seenNotReadyMsAgo?: number;
      want: MemberStatus["state"];
      transition?: string;
    }> = [
      {
        name: "the roll names an Active member: Maintenance at once, pod still Ready",
        prev: "Active",
        held: true,
        pod: pod(0, true),
        want: "Maintenance",
        transition: "demo-0: Active → Maintenance (planned restart)",
      },
      {
        name: "held while the pod is gone, however long (never Down)",
        prev: "Maintenance",
        held: true,
        pod: undefined,
        seenNotReadyMsAgo: 999_000,
        want: "Maintenance",
      },
      {
        name: "held while the replacement is not Ready",
        prev: "Maintenance",
        held: true,
        pod: pod(0, false, { notReadySinceMs: NOW - 999_000 }),
        want: "Maintenance",
      },
      {
        name: "a Down member restarted by the roll is held too (records wait for it, not rerouted)",
        prev: "Down",
        held: true,
        pod: pod(0, false),
        want: "Maintenance",
      },
      {
        name: "released with a Ready pod: Active",
        prev: "Maintenance",
        held: false,
        pod: pod(0, true),
        want: "Active",
        transition: "demo-0: Maintenance → Active (planned restart done, pod ready)",
      },
      {
        name: "released (stale) with an unready pod: Maintenance within the grace",
        prev: "Maintenance",
        held: false,
        pod: pod(0, false, { notReadySinceMs: NOW - 5_000 }),
        want: "Maintenance",
      },
      {
        name: "released (stale) with an unready pod: Down past the grace",
        prev: "Maintenance",
        held: false,
        pod: pod(0, false, { notReadySinceMs: NOW - 31_000 }),
        seenNotReadyMsAgo: 31_000,
        want: "Down",
      },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const seen = new Map<string, number>();
        if (c.seenNotReadyMsAgo !== undefined) seen.set("demo-0", NOW - c.seenNotReadyMsAgo);
        const r = planMembers(
          input({
            replicas: 1,
            previous: [member(0, c.prev)],
            previousEpoch: 4,
            pods: c.pod === undefined ? [] : [c.pod],
            notReadySinceMs: seen,
            brokerUnreachableSinceMs: new Map([["demo-0", NOW - 31_000]]),
            maintenance: new Set(c.held ? ["demo-0"] : []),
          }),
        );
        expect(r.members[0]?.state).toBe(c.want);
        // every state change bumps the epoch (and is one transition, i.e. one Event)
        expect(r.epoch).toBe(c.want !== c.prev ? 5 : 4);
        expect(r.transitions).toHaveLength(c.want !== c.prev ? 1 : 0);
        if (c.transition !== undefined) expect(r.transitions).toEqual([c.transition]);
        if (c.held) expect(r.notReadySinceMs.has("demo-0")).toBe(false);
      });
    }
  });

  it("an address change alone bumps the epoch", () => {
    const prev = [member(0, "Active")];
    const r = planMembers(
      input({ replicas: 1, previous: prev, pods: [pod(0, true, { podIP: "127.9.9.9" })], previousEpoch: 1 }),
    );
    expect(r.epoch).toBe(2);
  });

  it("records volume ids (this pass's, else the last known) without bumping the epoch", () => {
    const prev = [0, 1, 2].map((i) => ({ ...member(i, "Active"), volumeId: `v${i}` }));
    const pods = [pod(0, true), pod(1, true), pod(2, false)];
    const r = planMembers(
      input({ pods, previous: prev, previousEpoch: 4, volumeIds: new Map([["demo-1", "v1-new"]]) }),
    );
    expect(r.members.map((m) => m.volumeId)).toEqual(["v0", "v1-new", "v2"]);
    // Brokers do not act on a peer's volume: no epoch bump (the topic reconciles are requeued by routing).
    expect(r.epoch).toBe(4);
    expect(r.changed).toBe(false);
  });

  it("keeps members beyond replicas listed (scale-down is a decommission's job)", () => {
    const prev = [member(0, "Active"), member(1, "Active")];
    const r = planMembers(input({ replicas: 1, previous: prev, pods: [pod(0, true), pod(1, true)] }));
    expect(r.members.map((m) => m.id)).toEqual(["demo-0", "demo-1"]);
  });
});

describe("podView", () => {
  it("reads readiness, IP, revision and times from a pod (Date or string timestamps)", () => {
    const v = podView(
      {
        metadata: {
          name: "demo-2",
          uid: "u",
          creationTimestamp: new Date("2026-11-29T11:00:00Z"),
          labels: { "controller-revision-hash": "demo-abc" },
        },
        status: {
          podIP: "127.1.0.3",
          conditions: [
            { type: "Ready", status: "False", lastTransitionTime: "2026-11-29T11:30:00Z" as unknown as Date },
          ],
        },
      },
      "demo",
    );
    expect(v).toEqual({
      name: "demo-2",
      ordinal: 2,
      uid: "u",
      podIP: "127.1.0.3",
      ready: false,
      notReadySinceMs: Date.parse("2026-11-29T11:30:00Z"),
      terminating: false,
      revision: "demo-abc",
    });
  });
  it("a terminating pod is not ready", () => {
    const v = podView(
      {
        metadata: { name: "demo-0", deletionTimestamp: new Date() },
        status: { conditions: [{ type: "Ready", status: "True" }] },
      },
      "demo",
    );
    expect(v?.ready).toBe(false);
    expect(v?.terminating).toBe(true);
  });
  it("parses ordinals strictly", () => {
    expect(ordinalOf("demo-10", "demo")).toBe(10);
    expect(ordinalOf("demo-01", "demo")).toBeUndefined();
    expect(ordinalOf("demo-x-1", "demo")).toBeUndefined();
    expect(ordinalOf("other-1", "demo")).toBeUndefined();
  });
});

// Issue #21 items 0 and 8: Down needs the broker's own evidence, timed on the
// operator's clock from its own observations; a node-level verdict and an
// untrusted cache are unknown, not Down.
describe("planMembers: evidence for Down", () => {
  const active = [member(0, "Active")];
  const notReady = pod(0, false, { notReadySinceMs: NOW - 600_000 });
  const longAgo = new Map([["demo-0", NOW - 600_000]]);

  it("a pod not ready past the grace whose broker still answers stays Active", () => {
    const r = planMembers(
      input({
        replicas: 1,
        previous: active,
        pods: [notReady],
        notReadySinceMs: longAgo,
        brokerUnreachableSinceMs: new Map(),
      }),
    );
    expect(r.members[0]?.state).toBe("Active");
    expect(r.pendingDown.get("demo-0")).toContain("broker still answers");
    expect(r.recheckAfterMs).toBeLessThanOrEqual(5_000);
  });

  it("without any broker evidence (no probe results) nobody goes Down", () => {
    const r = planMembers(
      input({ replicas: 1, previous: active, pods: [notReady], notReadySinceMs: longAgo }),
    );
    expect(r.members[0]?.state).toBe("Active");
  });

  it("the broker unreachable for less than the grace is not enough, even with the pod long not ready", () => {
    const r = planMembers(
      input({
        replicas: 1,
        previous: active,
        pods: [notReady],
        notReadySinceMs: longAgo,
        brokerUnreachableSinceMs: new Map([["demo-0", NOW - 10_000]]),
      }),
    );
    expect(r.members[0]?.state).toBe("Active");
    const later = planMembers(
      input({
        replicas: 1,
        previous: active,
        pods: [notReady],
        nowMs: NOW + 20_000,
        notReadySinceMs: longAgo,
        brokerUnreachableSinceMs: new Map([["demo-0", NOW - 10_000]]),
      }),
    );
    expect(later.members[0]?.state).toBe("Down");
  });

  it("the kubelet's lastTransitionTime (another clock) never shortens the grace", () => {
    // The pod says it has been not ready for 10 minutes (a skewed node clock,
    // or a transition before a leadership gap); the operator saw it first now.
    const r = planMembers(
      input({
        replicas: 1,
        previous: active,
        pods: [notReady],
        brokerUnreachableSinceMs: longAgo,
      }),
    );
    expect(r.members[0]?.state).toBe("Active");
    expect(r.notReadySinceMs.get("demo-0")).toBe(NOW);
  });

  it("Ready=False written by the node controller (NodeNotReady) is unknown: no clock runs", () => {
    const flipped = pod(0, false, { readyVerdictFromNode: true });
    const r = planMembers(
      input({
        replicas: 1,
        previous: active,
        pods: [flipped],
        notReadySinceMs: longAgo,
        brokerUnreachableSinceMs: longAgo,
      }),
    );
    expect(r.members[0]?.state).toBe("Active");
    expect(r.notReadySinceMs.size).toBe(0);
  });

  it("while observations are not trusted nobody goes Down and the clocks restart afterwards", () => {
    const r = planMembers(
      input({
        replicas: 1,
        previous: active,
        pods: [notReady],
        notReadySinceMs: longAgo,
        brokerUnreachableSinceMs: longAgo,
        observationsTrusted: false,
      }),
    );
    expect(r.members[0]?.state).toBe("Active");
    expect(r.notReadySinceMs.size).toBe(0);
    const trustedAgain = planMembers(
      input({
        replicas: 1,
        previous: r.members,
        pods: [notReady],
        nowMs: NOW + 1_000,
        notReadySinceMs: r.notReadySinceMs,
        brokerUnreachableSinceMs: longAgo,
      }),
    );
    expect(trustedAgain.members[0]?.state).toBe("Active");
    expect(trustedAgain.notReadySinceMs.get("demo-0")).toBe(NOW + 1_000);
  });
});

describe("podView: who said not ready", () => {
  const base = (conditions: Array<{ type: string; status: string; reason?: string }>) =>
    podView(
      {
        metadata: { name: "demo-0", uid: "u0", creationTimestamp: new Date(NOW - 60_000) },
        status: { podIP: "127.1.0.1", conditions },
      },
      "demo",
    );

  it("Ready=False with ContainersReady=True, or reason NodeNotReady, is the node controller's verdict", () => {
    expect(
      base([
        { type: "Ready", status: "False" },
        { type: "ContainersReady", status: "True" },
      ])?.readyVerdictFromNode,
    ).toBe(true);
    expect(base([{ type: "Ready", status: "False", reason: "NodeNotReady" }])?.readyVerdictFromNode).toBe(
      true,
    );
  });

  it("the kubelet's own not-ready (ContainersNotReady) is evidence", () => {
    expect(
      base([
        { type: "Ready", status: "False", reason: "ContainersNotReady" },
        { type: "ContainersReady", status: "False", reason: "ContainersNotReady" },
      ])?.readyVerdictFromNode,
    ).toBeUndefined();
  });
});

describe("planMembers: a held member whose broker failed (failedSince)", () => {
  const grace = 30_000;
  const prev = [member(0, "Active"), member(1, "Active"), member(2, "Decommissioning")];
  const base = (over: Partial<MembersInput>) =>
    input({
      replicas: 2,
      previous: prev,
      pods: [pod(0, true), pod(1, true), pod(2, false)],
      holds: new Map([["demo-2", "Decommissioning"]]),
      downGraceMs: grace,
      ...over,
    });

  it("a Decommissioning member keeps its state; failedSince once its pod is not Ready and its broker failed for the grace", () => {
    const early = planMembers(base({ brokerUnreachableSinceMs: new Map([["demo-2", NOW - grace + 5_000]]) }));
    expect(early.members[2]).toMatchObject({ state: "Decommissioning" });
    expect(early.members[2]?.failedSince).toBeUndefined();
    expect(early.recheckAfterMs).toBe(5_000);
    const r = planMembers(base({ brokerUnreachableSinceMs: new Map([["demo-2", NOW - grace]]) }));
    expect(r.members[2]).toMatchObject({
      state: "Decommissioning",
      failedSince: new Date(NOW).toISOString(),
    });
    expect(r.failures).toEqual([
      expect.stringContaining("demo-2: Decommissioning, pod not ready, broker unreachable for 30s"),
    ]);
    // Not a membership change brokers act on: no epoch bump, no transition.
    expect(r.changed).toBe(false);
    expect(r.transitions).toEqual([]);
    // Kept (same since) while it lasts, no second Event; cleared once the broker answers.
    const withFailed = [prev[0]!, prev[1]!, { ...prev[2]!, failedSince: "2026-11-29T11:59:00.000Z" }];
    const still = planMembers(
      base({ previous: withFailed, brokerUnreachableSinceMs: new Map([["demo-2", NOW - 90_000]]) }),
    );
    expect(still.members[2]?.failedSince).toBe("2026-11-29T11:59:00.000Z");
    expect(still.failures).toEqual([]);
    const back = planMembers(base({ previous: withFailed, brokerUnreachableSinceMs: new Map() }));
    expect(back.members[2]?.failedSince).toBeUndefined();
    expect(back.members[2]?.state).toBe("Decommissioning");
  });

  it("needs both: a Ready pod, an answering broker, an untrusted cache or a node's verdict sets nothing", () => {
    const since = new Map([["demo-2", NOW - 60_000]]);
    const cases: Array<Partial<MembersInput>> = [
      { pods: [pod(0, true), pod(1, true), pod(2, true)], brokerUnreachableSinceMs: since },
      { brokerUnreachableSinceMs: new Map() },
      { brokerUnreachableSinceMs: since, observationsTrusted: false },
      {
        pods: [pod(0, true), pod(1, true), pod(2, false, { readyVerdictFromNode: true })],
        brokerUnreachableSinceMs: since,
      },
    ];
    for (const c of cases)
      expect(planMembers(base(c)).members[2]?.failedSince, JSON.stringify(c)).toBeUndefined();
    // A missing pod counts as not Ready.
    const gone = planMembers(base({ pods: [pod(0, true), pod(1, true)], brokerUnreachableSinceMs: since }));
    expect(gone.members[2]?.failedSince).toBeDefined();
  });

  it("a member the roll holds in Maintenance likewise, without ever going Down while held", () => {
    const r = planMembers(
      input({
        previous: [member(0, "Active"), member(1, "Active"), member(2, "Maintenance")],
        pods: [pod(0, true), pod(1, true)],
        maintenance: new Set(["demo-2"]),
        downGraceMs: grace,
        notReadySinceMs: new Map([["demo-2", NOW - 120_000]]),
        brokerUnreachableSinceMs: new Map([["demo-2", NOW - 120_000]]),
      }),
    );
    expect(r.members[2]).toMatchObject({ state: "Maintenance" });
    expect(r.members[2]?.failedSince).toBeDefined();
    // Active members never get it: they go Down instead.
    expect(r.members[0]?.failedSince).toBeUndefined();
  });
});
