import { describe, expect, it } from "vitest";
import type { RollStatus } from "../../../packages/api/src/v1alpha1/types.ts";
import type { PodView } from "./pods.ts";
import type { RollAction, RollInput } from "./roll.ts";
import {
  decideRoll,
  handoffEvent,
  owedDrainCancel,
  rollFinishedEvent,
  rollRequeueMs,
  scaleBusyReason,
} from "./roll-pass.ts";

const NOW = Date.parse("2026-11-29T12:00:00Z");
const delays = { waitingMs: 2_000, actingMs: 500 };

function pod(ordinal: number, revision: string): PodView {
  return {
    name: `demo-${ordinal}`,
    ordinal,
    uid: `uid-${ordinal}`,
    podIP: `127.1.0.${ordinal + 1}`,
    ready: true,
    notReadySinceMs: undefined,
    terminating: false,
    revision,
  };
}

function input(over: Partial<RollInput>): RollInput {
  return {
    nowMs: NOW,
    replicas: 2,
    updateRevision: "new",
    pods: [pod(0, "old"), pod(1, "old")],
    members: [0, 1].map((o) => ({
      id: `demo-${o}`,
      pod: `demo-${o}`,
      ordinal: o,
      state: "Active" as const,
      since: "2026-11-29T11:00:00Z",
    })),
    roll: undefined,
    paused: false,
    force: false,
    drainTimeoutMs: 60_000,
    gateTimeoutMs: 60_000,
    inFlightBroker: undefined,
    ...over,
  };
}

const named: RollStatus = {
  podInFlight: "demo-1",
  startedAt: new Date(NOW).toISOString(),
  reason: "image",
  podReadyAtStart: false,
  podUid: "uid-1b",
};

describe("the roll step's decisions around planRoll", () => {
  it("a pod in flight named afresh waits one pass (PodReplacing) and that roll is what gets written", () => {
    const d = decideRoll(named, input({}));
    expect(d.action).toMatchObject({ kind: "wait", code: "PodReplacing", pod: "demo-1" });
    expect(d.action.kind === "wait" && d.action.reason).toMatch(/restarting the new pod \(not Ready\)$/);
    expect(d.next).toBe(named);
  });

  it("otherwise planRoll decides and status.roll follows its action", () => {
    const d = decideRoll(undefined, input({}));
    expect(d.action).toMatchObject({ kind: "enterMaintenance", pod: "demo-1" });
    expect(d.next).toMatchObject({ podInFlight: "demo-1", startedAt: new Date(NOW).toISOString() });
    const idle = decideRoll(undefined, input({ pods: [pod(0, "new"), pod(1, "new")] }));
    expect(idle).toEqual({
      action: { kind: "none", reason: "every pod runs revision new" },
      next: undefined,
    });
  });

  it("moves in flight keep a roll from starting", () => {
    expect(scaleBusyReason(undefined)).toBeUndefined();
    expect(scaleBusyReason({ moves: [] })).toBeUndefined();
    expect(
      scaleBusyReason({
        moves: [{ topic: "t", partition: 0, from: "demo-2", to: "demo-0", state: "copying", startedAt: "x" }],
      }),
    ).toBe("1 partition move(s) in flight");
  });

  it("a handoff with nothing kept is Normal; one that kept partitions says why, ten at most", () => {
    expect(handoffEvent("demo-1", { kept: [], timedOut: false }, 1234, 30_000)).toEqual({
      type: "Normal",
      reason: "LeadershipHandedOff",
      message: "demo-1 leads no replicated partition (handoff done in 1234 ms); draining it",
    });
    const kept = Array.from({ length: 12 }, (_, i) => `t/${i}`);
    const e = handoffEvent("demo-1", { kept, timedOut: true }, 30_000, 30_000);
    expect(e.type).toBe("Warning");
    expect(e.reason).toBe("LeadershipKept");
    expect(e.message).toContain("still leads 12 replicated partition(s) (t/0, t/1");
    expect(e.message).toContain("t/9, …): leadership did not move within 30s");
    expect(handoffEvent("demo-1", { kept: ["t/0"], timedOut: false }, 5, 30_000).message).toContain(
      "(t/0): no other in-sync replica is Active",
    );
  });

  it("a finished restart completes the roll only when no pod is left", () => {
    expect(rollFinishedEvent("demo-0", "new", 0).reason).toBe("RollComplete");
    expect(rollFinishedEvent("demo-1", "new", 1)).toEqual({
      type: "Normal",
      reason: "RollingUpdate",
      message: "demo-1 restarted and Ready at revision new; 1 pod(s) to go",
    });
  });

  it("a restart that finishes (or is aborted) clears status.roll: the step sets no roll of its own", () => {
    // The step once cleared `next` itself on finish; decideRoll alone must do it.
    const inFlight: RollStatus = { ...named, podInFlight: "demo-1", podUid: "uid-1" };
    const finished = decideRoll(
      undefined,
      input({
        pods: [pod(0, "old"), pod(1, "new")],
        roll: inFlight,
        inFlightBroker: { reachable: true, draining: false, pendingRecords: 0 },
      }),
    );
    expect(finished.action).toEqual({ kind: "finish", pod: "demo-1", revision: "new" });
    expect(finished.next).toBeUndefined();
    const leaving = decideRoll(undefined, input({ replicas: 1, roll: inFlight }));
    expect(leaving.action).toMatchObject({ kind: "abort", pod: "demo-1" });
    expect(leaving.next).toBeUndefined();
  });

  it("an owed drain cancel records when and why", () => {
    expect(owedDrainCancel("demo-1", NOW, 0, "no pod IP")).toEqual({
      pod: "demo-1",
      since: "2026-11-29T12:00:00.000Z",
      attempts: 0,
      lastError: "no pod IP",
    });
  });

  it("requeues only while a roll runs: soon after an action, later while waiting", () => {
    const wait: RollAction = { kind: "wait", code: "Draining", reason: "r" };
    const drain: RollAction = { kind: "drain", pod: "demo-1" };
    const none: RollAction = { kind: "none", reason: "r" };
    expect(
      rollRequeueMs({ next: undefined, outdated: 0, paused: false, action: none }, delays),
    ).toBeUndefined();
    expect(
      rollRequeueMs({ next: undefined, outdated: 2, paused: true, action: wait }, delays),
    ).toBeUndefined();
    expect(rollRequeueMs({ next: undefined, outdated: 2, paused: false, action: wait }, delays)).toBe(2_000);
    expect(rollRequeueMs({ next: named, outdated: 0, paused: true, action: drain }, delays)).toBe(500);
  });
});
