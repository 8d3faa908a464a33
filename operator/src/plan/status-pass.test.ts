import { describe, expect, it } from "vitest";
import type { Condition, NaradClusterStatus } from "../../../packages/api/src/v1alpha1/types.ts";
import {
  drainCancelMessage,
  everReady,
  mergePatchOf,
  type NextStatusInput,
  nextClusterStatus,
  statusRequeueMs,
  stuckReplacementPod,
} from "./status-pass.ts";

const cond = (type: string, status: "True" | "False", reason = "R", message = ""): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: "2026-11-29T11:00:00Z",
});

function input(over: Partial<NextStatusInput>): NextStatusInput {
  return {
    prev: {},
    generation: 4,
    stepFailed: false,
    verdict: { phase: "Running", conditions: [cond("Ready", "True")] },
    pods: 3,
    readyPods: 2,
    membership: { members: [], epoch: 7 },
    selector: "app=narad",
    roll: undefined,
    drainCancel: undefined,
    scale: undefined,
    currentRevision: undefined,
    updateRevision: undefined,
    ...over,
  };
}

describe("the status step's decisions around clusterVerdict", () => {
  it("a cluster once Ready (or in a phase past Creating) is never Creating again", () => {
    expect(everReady({})).toBe(false);
    expect(everReady({ phase: "Creating" })).toBe(false);
    expect(everReady({ phase: "Scaling" })).toBe(true);
    expect(everReady({ conditions: [cond("Ready", "True")] })).toBe(true);
    expect(everReady({ conditions: [cond("Ready", "False")] })).toBe(false);
  });

  it("merge-patch values: undefined clears, a key dropped since is sent as null", () => {
    expect(mergePatchOf({ a: 1 }, undefined)).toBeNull();
    expect(mergePatchOf({ a: 1, b: 2 }, { a: 3 })).toEqual({ a: 3, b: null });
    expect(mergePatchOf(undefined, { a: 3 })).toEqual({ a: 3 });
  });

  it("a failed step keeps the observed generation; the revisions only when the StatefulSet has them", () => {
    const ok = nextClusterStatus(input({ prev: { observedGeneration: 3 } }));
    expect(ok.observedGeneration).toBe(4);
    expect("currentRevision" in ok || "updateRevision" in ok).toBe(false);
    expect([ok.replicas, ok.readyReplicas, ok.membershipEpoch, ok.phase]).toEqual([3, 2, 7, "Running"]);
    const failed = nextClusterStatus(
      input({ prev: { observedGeneration: 3 }, stepFailed: true, currentRevision: "a", updateRevision: "b" }),
    );
    expect(failed.observedGeneration).toBe(3);
    expect([failed.currentRevision, failed.updateRevision]).toEqual(["a", "b"]);
  });

  it("roll, drainCancel and scale cleared by null, replaced with nulls for dropped keys", () => {
    const prev: NaradClusterStatus = {
      roll: { podInFlight: "demo-1", startedAt: "t", reason: "r", gateBlockedSince: "t0" },
      scale: { decommissioning: "demo-2", movesDone: 1 },
    };
    const s = nextClusterStatus(
      input({ prev, roll: { podInFlight: "demo-1", startedAt: "t", reason: "r" }, scale: undefined }),
    );
    expect(s.roll).toEqual({ podInFlight: "demo-1", startedAt: "t", reason: "r", gateBlockedSince: null });
    expect(s.scale).toBeNull();
    expect(s.drainCancel).toBeNull();
  });

  it("the pod a persisted ReplacementNotReady names, and the owed drain cancel's message", () => {
    expect(
      stuckReplacementPod([
        cond("Progressing", "False", "ReplacementNotReady", "replacement pod demo-1 not Ready for 600s"),
      ]),
    ).toBe("demo-1");
    expect(
      stuckReplacementPod([cond("Progressing", "True", "Rolling", "replacement pod demo-1 not Ready")]),
    ).toBe(undefined);
    expect(drainCancelMessage(undefined)).toBeUndefined();
    expect(drainCancelMessage({ pod: "demo-1", since: "t", attempts: 2, lastError: "" })).toBe(
      "demo-1 may still be draining (refusing produce) since its restart was abandoned at t: cancelling its drain failed 2 time(s); retrying every pass",
    );
  });

  it("requeues while not Stable, else at the earliest recheck asked for", () => {
    expect(statusRequeueMs([cond("Stable", "True")], [undefined, undefined], 5_000)).toBeUndefined();
    expect(statusRequeueMs([cond("Stable", "True")], [3_000, undefined, 1_000], 5_000)).toBe(1_000);
    expect(statusRequeueMs([cond("Stable", "False")], [undefined], 5_000)).toBe(5_000);
    expect(statusRequeueMs([], [9_000], 5_000)).toBe(5_000);
  });
});
