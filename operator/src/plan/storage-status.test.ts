import { describe, expect, it } from "vitest";
import type { MemberStatus } from "../../../packages/api/src/v1alpha1/types.ts";
import { type ClusterFacts, clusterVerdict } from "./cluster-status.ts";
import { getCondition } from "./conditions.ts";

// How the storage step's plan shows in the cluster's conditions.

const m = (i: number): MemberStatus => ({
  id: `demo-${i}`,
  pod: `demo-${i}`,
  ordinal: i,
  state: "Active",
  since: "t",
});
const healthy: ClusterFacts = {
  generation: 2,
  specReplicas: 3,
  pods: 3,
  readyPods: 3,
  members: [m(0), m(1), m(2)],
  statefulSetExists: true,
  statefulSetReplicas: 3,
  outdatedPods: 0,
  refused: [],
  stepError: undefined,
  everReady: true,
};
const verdict = (f: Partial<ClusterFacts>) => {
  const v = clusterVerdict({ ...healthy, ...f }, undefined, "now");
  return { phase: v.phase, get: (t: string) => getCondition(v.conditions, t) };
};

describe("clusterVerdict with volume expansion", () => {
  it("expanding: Progressing=True ExpandingVolumes with the plan's message, still Ready and Running, not Stable", () => {
    const r = verdict({
      storage: {
        kind: "expanding",
        size: "2Gi",
        patch: [],
        pending: ["data-demo-1"],
        message: "expanding volumes to 2Gi: 2/3 done",
      },
    });
    expect(r.get("Progressing")).toMatchObject({
      status: "True",
      reason: "ExpandingVolumes",
      message: "expanding volumes to 2Gi: 2/3 done",
    });
    expect(r.get("Ready")?.status).toBe("True");
    expect(r.get("Degraded")?.status).toBe("False");
    expect(r.get("Stable")?.status).toBe("False");
    expect(r.phase).toBe("Running");
  });

  it("a roll in progress takes the Progressing condition; the expansion still runs", () => {
    const r = verdict({
      outdatedPods: 1,
      roll: { inFlight: "demo-2", plannedUnavailable: 1, action: undefined, paused: false },
      storage: { kind: "expanding", size: "2Gi", patch: [], pending: ["data-demo-1"], message: "x" },
    });
    expect(r.get("Progressing")?.reason).toBe("RollingUpdate");
  });

  it("refused: Degraded with the refusal's reason and message", () => {
    const r = verdict({
      storage: {
        kind: "refused",
        reason: "VolumeExpansionUnsupported",
        message: "StorageClass slow does not allow volume expansion",
      },
    });
    expect(r.get("Degraded")).toMatchObject({
      status: "True",
      reason: "VolumeExpansionUnsupported",
      message: "StorageClass slow does not allow volume expansion",
    });
    expect(r.phase).toBe("Degraded");
  });

  it("a Down member outranks a storage refusal in the reason; both are in the message", () => {
    const r = verdict({
      readyPods: 2,
      members: [m(0), { ...m(1), state: "Down" }, m(2)],
      storage: { kind: "refused", reason: "VolumeShrinkUnsupported", message: "cannot shrink" },
    });
    expect(r.get("Degraded")?.reason).toBe("MemberDown");
    expect(r.get("Degraded")?.message).toContain("cannot shrink");
  });

  it("settled: no trace", () => {
    const r = verdict({ storage: { kind: "settled" } });
    expect(r.get("Progressing")?.reason).toBe("UpToDate");
    expect(r.get("Degraded")?.status).toBe("False");
  });
});
