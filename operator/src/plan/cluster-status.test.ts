import { describe, expect, it } from "vitest";
import type { MemberStatus } from "../api/v1alpha1/types.ts";
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
  rolling: false,
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

  it("outdated pods: Ready but Progressing (RevisionPending), not Stable", () => {
    const r = verdict({ outdatedPods: 3 });
    expect(r.phase).toBe("Running");
    expect(r.status("Ready")).toBe("True");
    expect(r.reason("Progressing")).toBe("RevisionPending");
    expect(r.status("Stable")).toBe("False");
  });

  it("a step error or refused scale-down: Degraded with the message", () => {
    const r = verdict({ stepError: "apply StatefulSet: 422 forbidden" });
    expect(r.reason("Degraded")).toBe("ReconcileError");
    expect(r.v.conditions.find((c) => c.type === "Degraded")?.message).toContain("422");
    const s = verdict({ refused: ["scale-down refused"] });
    expect(s.reason("Degraded")).toBe("ChangeRefused");
  });
});
