import { describe, expect, it } from "vitest";
import type { NaradCluster, NaradTopic } from "../../../packages/api/src/v1alpha1/types.ts";
import { clusterSeen, route } from "./routing.ts";

function cluster(generation: number, epoch: number, deleting = false): NaradCluster {
  return {
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradCluster",
    metadata: {
      name: "demo",
      namespace: "ns",
      generation,
      ...(deleting ? { deletionTimestamp: new Date() } : {}),
    },
    spec: {},
    status: { membershipEpoch: epoch },
  };
}

const topics: NaradTopic[] = [
  {
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradTopic",
    metadata: { name: "orders" },
    spec: { cluster: "demo" },
  },
];
const topicsOf = (_ns: string, c: string) => (c === "demo" ? topics : []);

describe("route", () => {
  it("a status-only update of a cluster requeues nothing", () => {
    const c = cluster(1, 3);
    expect(route("NaradCluster", "update", c, clusterSeen(c), topicsOf)).toMatchObject({
      clusters: [],
      topics: [],
    });
  });
  it("a spec change requeues the cluster and its topics", () => {
    const r = route("NaradCluster", "update", cluster(2, 3), clusterSeen(cluster(1, 3)), topicsOf);
    expect(r).toMatchObject({ clusters: ["ns/demo"], topics: ["ns/orders"] });
    expect(r.seen?.generation).toBe(2);
  });
  it("a membership epoch change requeues only the topics", () => {
    expect(
      route("NaradCluster", "update", cluster(1, 4), clusterSeen(cluster(1, 3)), topicsOf),
    ).toMatchObject({
      clusters: [],
      topics: ["ns/orders"],
    });
  });
  it("a member's new volume id (no epoch bump) requeues the topics: a leader on it must be replaced", () => {
    const withVolume = (v: string): NaradCluster => {
      const c = cluster(1, 3);
      c.status = {
        ...c.status,
        members: [{ id: "demo-0", pod: "demo-0", ordinal: 0, state: "Active", since: "", volumeId: v }],
      };
      return c;
    };
    expect(
      route("NaradCluster", "update", withVolume("v2"), clusterSeen(withVolume("v1")), topicsOf),
    ).toMatchObject({ clusters: [], topics: ["ns/orders"] });
    expect(
      route("NaradCluster", "update", withVolume("v1"), clusterSeen(withVolume("v1")), topicsOf).topics,
    ).toEqual([]);
  });
  it("deletion, add and delete requeue the cluster; delete forgets it", () => {
    expect(
      route("NaradCluster", "update", cluster(1, 3, true), clusterSeen(cluster(1, 3)), topicsOf).clusters,
    ).toEqual(["ns/demo"]);
    expect(route("NaradCluster", "add", cluster(1, 3), undefined, topicsOf).clusters).toEqual(["ns/demo"]);
    const del = route("NaradCluster", "delete", cluster(1, 3), clusterSeen(cluster(1, 3)), topicsOf);
    expect(del.clusters).toEqual(["ns/demo"]);
    expect(del.seen).toBeUndefined();
  });
  it("topics requeue themselves; pods and owned objects map to their cluster by label", () => {
    expect(
      route("NaradTopic", "update", { metadata: { name: "t", namespace: "ns" } }, undefined, topicsOf),
    ).toEqual({
      clusters: [],
      topics: ["ns/t"],
    });
    expect(
      route(
        "Pod",
        "update",
        { metadata: { name: "demo-0", namespace: "ns", labels: { "narad.dev/cluster": "demo" } } },
        undefined,
        topicsOf,
      ),
    ).toEqual({ clusters: ["ns/demo"], topics: [] });
    expect(route("Pod", "update", { metadata: { name: "x", namespace: "ns" } }, undefined, topicsOf)).toEqual(
      { clusters: [], topics: [] },
    );
  });
});

describe("route: action annotations (issue #21 item 12)", () => {
  it("a restartedAt or rebalance annotation change requeues the cluster at once (no generation bump)", () => {
    for (const key of ["narad.dev/restartedAt", "narad.dev/rebalance"]) {
      const before = cluster(1, 3);
      const after = cluster(1, 3);
      after.metadata.annotations = { [key]: "2026-12-01T23:00:00Z" };
      expect(route("NaradCluster", "update", after, clusterSeen(before), topicsOf).clusters).toEqual([
        "ns/demo",
      ]);
    }
  });
  it("another annotation changes nothing", () => {
    const before = cluster(1, 3);
    const after = cluster(1, 3);
    after.metadata.annotations = { "example.com/note": "x" };
    expect(route("NaradCluster", "update", after, clusterSeen(before), topicsOf).clusters).toEqual([]);
  });
});
