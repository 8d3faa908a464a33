import { describe, expect, it } from "vitest";
import type { NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import { observationOf } from "./decommission.ts";

const base = (spec: NaradCluster["spec"], status?: NaradCluster["status"]): NaradCluster => ({
  apiVersion: "narad.dev/v1alpha1",
  kind: "NaradCluster",
  metadata: { name: "dc", namespace: "ns", resourceVersion: "42" },
  spec,
  ...(status === undefined ? {} : { status }),
});

describe("observationOf", () => {
  it("reads spec.replicas (the CRD default 3 when unset), the members' ordinals and states, and a roll", () => {
    const since = "2026-01-01T00:00:00Z";
    const c = base(
      {},
      {
        members: [
          { id: "dc-0", pod: "dc-0", ordinal: 0, state: "Active", since },
          { id: "dc-1", pod: "dc-1", ordinal: 1, state: "Maintenance", since },
        ],
        roll: { podInFlight: "dc-1", startedAt: since, reason: "image" },
      },
    );
    expect(observationOf(c)).toEqual({
      replicas: 3,
      resourceVersion: "42",
      members: [
        { id: "dc-0", ordinal: 0, state: "Active" },
        { id: "dc-1", ordinal: 1, state: "Maintenance" },
      ],
      rolling: "dc-1",
    });
  });
  it("a cluster the operator has not reported on yet: no members, no roll", () => {
    expect(observationOf(base({ replicas: 5 }))).toEqual({
      replicas: 5,
      resourceVersion: "42",
      members: [],
      rolling: undefined,
    });
  });
});
