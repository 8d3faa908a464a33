import type { V1PersistentVolumeClaim } from "@kubernetes/client-node";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { NaradCluster } from "../../../../packages/api/src/v1alpha1/types.ts";
import { FakeBrokerClient } from "../../broker-client/fake.ts";
import { guardedApi } from "../../kube/api.ts";
import { MemoryRecorder } from "../../kube/events.ts";
import { ManualClock } from "../../kube/manual-clock.ts";
import { MemoryStorageApi } from "../../kube/storage-api.ts";
import { getCondition } from "../../plan/conditions.ts";
import { ControllerMemory, type ReconcileDeps } from "../deps.ts";
import { FakeKube } from "../fake-kube.ts";
import { reconcileCluster } from "./reconcile.ts";

// The storage step inside the whole reconcile, on the in-memory fakes: the
// StatefulSet's claim template is never touched, PVC requests are raised
// only on an expandable class, progress and refusals show in conditions.

const NS = "ns1";

function setup(className: string, allowVolumeExpansion: boolean) {
  const clock = new ManualClock(Date.parse("2026-11-29T12:00:00Z"));
  const kube = new FakeKube(() => clock.now());
  const recorder = new MemoryRecorder();
  const storage = new MemoryStorageApi();
  storage.classes.set(className, {
    metadata: { name: className },
    provisioner: "example.com/x",
    allowVolumeExpansion,
  });
  const deps: ReconcileDeps = {
    caches: kube.caches,
    api: guardedApi(kube, new AbortController().signal),
    storage,
    recorder,
    brokers: new FakeBrokerClient(),
    clock,
    log: pino({ level: "silent" }),
    memory: new ControllerMemory(),
    defaultBrokerImage: undefined,
  };
  kube.create(kube.clusters, {
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradCluster",
    metadata: { name: "demo", namespace: NS },
    spec: {
      replicas: 3,
      image: "ghcr.io/narad/narad:1.0",
      storage: { size: "1Gi", storageClassName: className },
    },
  });
  for (let i = 0; i < 3; i++) {
    kube.addPod(NS, "demo", i, true);
    storage.putClaim(claim(`data-demo-${i}`, className, "1Gi", "1Gi"));
  }
  // A claim of another cluster with the same labels prefix must not be touched.
  storage.putClaim({
    ...claim("data-other-0", className, "1Gi", "1Gi"),
    metadata: { name: "data-other-0", namespace: NS, labels: { "narad.dev/cluster": "other" } },
  });
  const cluster = () => kube.clusters.get(NS, "demo") as NaradCluster;
  const reconcile = () => reconcileCluster(`${NS}/demo`, deps);
  const grow = (size: string) =>
    kube.updateSpec(kube.clusters, NS, "demo", (s) => {
      if (s !== undefined) s.storage = { ...s.storage, size };
    });
  return { kube, recorder, storage, cluster, reconcile, grow, clock };
}

function claim(name: string, className: string, request: string, capacity: string): V1PersistentVolumeClaim {
  return {
    metadata: {
      name,
      namespace: NS,
      labels: {
        "app.kubernetes.io/name": "narad",
        "app.kubernetes.io/instance": "demo",
        "narad.dev/cluster": "demo",
      },
    },
    spec: { storageClassName: className, resources: { requests: { storage: request } } },
    status: { phase: "Bound", capacity: { storage: capacity } },
  };
}

/** What the resizer does: capacity := request. */
function resize(storage: MemoryStorageApi, name: string): void {
  const c = storage.claims.get(`${NS}/${name}`)!;
  c.status = { ...c.status, capacity: { storage: c.spec?.resources?.requests?.["storage"] ?? "" } };
}

const cond = (c: NaradCluster, type: string) => getCondition(c.status?.conditions, type);
const templateSize = (t: ReturnType<typeof setup>) =>
  t.kube.statefulSets.get(NS, "demo")?.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.[
    "storage"
  ];

describe("volume expansion (storage step)", () => {
  it("grows every PVC on an expandable class, shows progress, and settles when the capacities arrive", async () => {
    const t = setup("fast", true);
    await t.reconcile();
    expect(t.storage.resizes).toEqual([]);
    t.grow("2Gi");
    const r = await t.reconcile();
    expect(t.storage.resizes).toEqual(["data-demo-0=2Gi", "data-demo-1=2Gi", "data-demo-2=2Gi"]);
    expect(r.requeueAfterMs).toBeLessThanOrEqual(3_000);
    expect(templateSize(t)).toBe("1Gi"); // immutable: left alone
    // no pod or StatefulSet deleted (no restart, no orphan-recreate)
    expect(t.kube.writes.filter((w) => /^delete (Pod|StatefulSet) /.test(w))).toEqual([]);
    let p = cond(t.cluster(), "Progressing");
    expect(p?.reason).toBe("ExpandingVolumes");
    expect(p?.message).toContain("0/3 done");
    expect(t.recorder.reasons()).toContain("VolumeExpansion");

    resize(t.storage, "data-demo-0");
    await t.reconcile();
    expect(t.storage.resizes).toHaveLength(3); // requests already raised: not patched again
    p = cond(t.cluster(), "Progressing");
    expect(p?.message).toContain("1/3 done");

    resize(t.storage, "data-demo-1");
    resize(t.storage, "data-demo-2");
    await t.reconcile();
    expect(cond(t.cluster(), "Progressing")?.reason).toBe("UpToDate");
    expect(cond(t.cluster(), "Degraded")?.status).toBe("False");
    expect(t.recorder.events.find((e) => e.reason === "VolumesExpanded")?.message).toContain("2Gi");
    expect(t.storage.claims.get(`${NS}/data-other-0`)?.spec?.resources?.requests?.["storage"]).toBe("1Gi");
  });

  it("refuses growth on a class without allowVolumeExpansion: Degraded, a Warning, nothing patched", async () => {
    const t = setup("fixed", false);
    await t.reconcile();
    t.grow("2Gi");
    await t.reconcile();
    expect(t.storage.resizes).toEqual([]);
    expect(templateSize(t)).toBe("1Gi");
    const d = cond(t.cluster(), "Degraded");
    expect(d?.status).toBe("True");
    expect(d?.reason).toBe("VolumeExpansionUnsupported");
    expect(d?.message).toContain("StorageClass fixed does not allow volume expansion");
    expect(t.recorder.events.find((e) => e.reason === "VolumeExpansionUnsupported")?.type).toBe("Warning");
    // reverting the size clears it
    t.grow("1Gi");
    await t.reconcile();
    expect(cond(t.cluster(), "Degraded")?.reason).not.toBe("VolumeExpansionUnsupported");
  });

  it("refuses a shrink with its own reason and patches nothing", async () => {
    const t = setup("fast", true);
    await t.reconcile();
    t.grow("512Mi");
    await t.reconcile();
    expect(t.storage.resizes).toEqual([]);
    const d = cond(t.cluster(), "Degraded");
    expect(d?.reason).toBe("VolumeShrinkUnsupported");
    expect(d?.message).toContain("cannot shrink");
  });

  it("after an expansion, a size equal to the StatefulSet template again is a shrink", async () => {
    const t = setup("fast", true);
    await t.reconcile();
    t.grow("2Gi");
    await t.reconcile();
    for (let i = 0; i < 3; i++) resize(t.storage, `data-demo-${i}`);
    await t.reconcile();
    t.grow("1Gi"); // the template's size
    await t.reconcile();
    expect(cond(t.cluster(), "Degraded")?.reason).toBe("VolumeShrinkUnsupported");
    expect(t.storage.resizes).toHaveLength(3);
  });

  it("expands a PVC created later at the old template size (scale-up after an expansion)", async () => {
    const t = setup("fast", true);
    await t.reconcile();
    t.grow("2Gi");
    await t.reconcile();
    for (let i = 0; i < 3; i++) resize(t.storage, `data-demo-${i}`);
    await t.reconcile();
    expect(cond(t.cluster(), "Progressing")?.reason).toBe("UpToDate");
    t.storage.putClaim(claim("data-demo-3", "fast", "1Gi", "1Gi"));
    await t.reconcile();
    expect(t.storage.resizes).toContain("data-demo-3=2Gi");
  });
});
