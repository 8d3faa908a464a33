import { describe, expect, it } from "vitest";
import type { MemberStatus } from "../../../packages/api/src/v1alpha1/types.ts";
import { type ClusterFacts, clusterVerdict } from "./cluster-status.ts";
import { getCondition } from "./conditions.ts";

function m(i: number, state: MemberStatus["state"]): MemberStatus {
  return { id: `demo-${i}`, pod: `demo-${i}`, ordinal: i, state, since: "t" };
}

const healthy: ClusterFacts = {
  generation: 2,
  specReplicas: 3,
  pods: 3,
  readyPods: 3,
  members: [m(0, "Active"), m(1, "Active"), m(2, "Active")],
  statefulSetExists: true,
  statefulSetReplicas: 3,
  outdatedPods: 0,
  refused: [],
  stepError: undefined,
  everReady: true,
};

function verdict(f: Partial<ClusterFacts>) {
  const v = clusterVerdict({ ...healthy, ...f }, undefined, "now");
  const status = (t: string) => getCondition(v.conditions, t)?.status;
  const reason = (t: string) => getCondition(v.conditions, t)?.reason;
  return { phase: v.phase, status, reason, v };
}

describe("clusterVerdict", () => {
  it("healthy cluster: Running, Ready, not Progressing, not Degraded, Stable", () => {
    const r = verdict({});
    expect(r.phase).toBe("Running");
    expect([r.status("Ready"), r.status("Progressing"), r.status("Degraded"), r.status("Stable")]).toEqual([
      "True",
      "False",
      "False",
      "True",
    ]);
    expect(r.v.conditions.every((c) => c.observedGeneration === 2)).toBe(true);
  });

  it("no StatefulSet yet: Pending", () => {
    const r = verdict({ statefulSetExists: false, pods: 0, readyPods: 0, members: [], everReady: false });
    expect(r.phase).toBe("Pending");
    expect(r.reason("Ready")).toBe("Creating");
  });

  it("first start: Creating while pods start", () => {
    const r = verdict({
      readyPods: 1,
      members: [m(0, "Active"), m(1, "Joining"), m(2, "Joining")],
      everReady: false,
    });
    expect(r.phase).toBe("Creating");
    expect(r.reason("Progressing")).toBe("PodsStarting");
    expect(r.status("Degraded")).toBe("False");
  });

  it("a Down member: Degraded", () => {
    const r = verdict({ readyPods: 2, members: [m(0, "Active"), m(1, "Down"), m(2, "Active")] });
    expect(r.phase).toBe("Degraded");
    expect(r.reason("Degraded")).toBe("MemberDown");
    expect(r.status("Ready")).toBe("False");
    expect(r.status("Stable")).toBe("False");
  });

  it("outdated pods waiting for a gate: Ready, Rolling, Progressing (RollingUpdate), not Stable", () => {
    const r = verdict({
      outdatedPods: 3,
      roll: {
        inFlight: undefined,
        plannedUnavailable: 0,
        paused: false,
        action: { kind: "wait", code: "MemberNotActive", reason: "members not Active: demo-0=Joining" },
      },
    });
    expect(r.phase).toBe("Rolling");
    expect(r.status("Ready")).toBe("True");
    expect(r.reason("Progressing")).toBe("RollingUpdate");
    expect(r.v.conditions.find((c) => c.type === "Progressing")?.message).toContain("demo-0=Joining");
    expect(r.status("Stable")).toBe("False");
  });

  it("outdated pods with the rollout paused: Running, Progressing Unknown (RolloutPaused), not Stable", () => {
    const r = verdict({
      outdatedPods: 3,
      roll: { inFlight: undefined, plannedUnavailable: 0, paused: true, action: undefined },
    });
    expect(r.phase).toBe("Running");
    expect([r.status("Progressing"), r.reason("Progressing")]).toEqual(["Unknown", "RolloutPaused"]);
    expect(r.status("Stable")).toBe("False");
  });

  it("a pod in a planned restart is not a degradation: Ready, Rolling", () => {
    const r = verdict({
      pods: 2,
      readyPods: 2,
      outdatedPods: 1,
      members: [m(0, "Active"), m(1, "Active"), m(2, "Maintenance")],
      roll: {
        inFlight: "demo-2",
        plannedUnavailable: 1,
        paused: false,
        action: { kind: "wait", code: "PodReplacing", reason: "waiting for demo-2 to be recreated" },
      },
    });
    expect(r.phase).toBe("Rolling");
    expect([r.status("Ready"), r.reason("Ready")]).toEqual(["True", "RollingUpdate"]);
    expect(r.status("Degraded")).toBe("False");
    expect(r.reason("Progressing")).toBe("RollingUpdate");
  });

  it("a blocked drain: Progressing False (RollBlocked) and Degraded, with the message", () => {
    const reason = "drain of demo-2 not finished after 61s: 7 WAL record(s) pending; waiting";
    const r = verdict({
      outdatedPods: 3,
      readyPods: 2,
      members: [m(0, "Active"), m(1, "Active"), m(2, "Maintenance")],
      roll: {
        inFlight: "demo-2",
        plannedUnavailable: 1,
        paused: false,
        action: { kind: "stuck", pod: "demo-2", pendingRecords: 7, reason },
      },
    });
    expect([r.status("Progressing"), r.reason("Progressing")]).toEqual(["False", "RollBlocked"]);
    expect(r.v.conditions.find((c) => c.type === "Progressing")?.message).toContain("7 WAL record(s)");
    expect(r.reason("Degraded")).toBe("RollBlocked");
    expect(r.phase).toBe("Degraded");
  });

  it("a step error or refused scale-down: Degraded with the message", () => {
    const r = verdict({ stepError: "apply StatefulSet: 422 forbidden" });
    expect(r.reason("Degraded")).toBe("ReconcileError");
    expect(r.v.conditions.find((c) => c.type === "Degraded")?.message).toContain("422");
    const s = verdict({ refused: ["scale-down refused"] });
    expect(s.reason("Degraded")).toBe("ChangeRefused");
  });
});
