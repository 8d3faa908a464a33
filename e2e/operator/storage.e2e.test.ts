// Volume expansion against a real API server (the local platform, whose node
// agent acts as external-resizer + kubelet for StorageClass narad-local):
//   1. spec.storage.size 1Gi → 2Gi on the expandable class: every broker
//      PVC's capacity (and its PV's) grows to 2Gi, no pod is restarted,
//      Progressing shows ExpandingVolumes until done, then settles;
//   2. the same on narad-local-fixed (allowVolumeExpansion false): Degraded
//      VolumeExpansionUnsupported naming the class, a Warning Event, no PVC
//      touched; shrinking the expanded cluster is refused too.
// Numbers are printed with console.log ("storage-e2e:") for the README.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import {
  FIXED_STORAGE_CLASS_NAME,
  type Platform,
  STORAGE_CLASS_NAME,
  startPlatform,
} from "../platform/platform.ts";
import { ensureBinaries } from "../platform/tools.ts";
import { getJson, type OperatorProcess, prepareCluster, startOperator, waitFor } from "./harness.ts";
import { BROKER_PORT, type HeaderSource, listBrokerPods } from "./load.ts";

const log = stderrLog("storage-e2e");
const REPO = resolve(import.meta.dirname, "../..");
const NS = "volumes";
const LEASE_NS = "narad-system";
const GROW = "grow"; // 3 brokers on the expandable class
const FIXED = "fixed"; // 1 broker on the class without expansion
const headers: HeaderSource = () => ({});

interface Cluster {
  metadata: { generation?: number };
  status?: {
    phase?: string;
    observedGeneration?: number;
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
  };
}
interface Claim {
  name: string;
  uid: string;
  request: string | undefined;
  capacity: string | undefined;
  volume: string | undefined;
  className: string | undefined;
}

let platform: Platform;
let core: CoreV1Api;
let logDir: string;
let op: OperatorProcess | undefined;

const cluster = (name: string) => getJson<Cluster>(platform.kubectl, ["-n", NS, "naradcluster", name]);
const cond = (c: Cluster | undefined, type: string) => c?.status?.conditions?.find((x) => x.type === type);

async function claims(name: string): Promise<Claim[]> {
  const list = await core.listNamespacedPersistentVolumeClaim({
    namespace: NS,
    labelSelector: `narad.dev/cluster=${name}`,
  });
  return list.items
    .map((p) => ({
      name: p.metadata?.name ?? "",
      uid: p.metadata?.uid ?? "",
      request: p.spec?.resources?.requests?.["storage"],
      capacity: p.status?.capacity?.["storage"],
      volume: p.spec?.volumeName,
      className: p.spec?.storageClassName,
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** Pod name → uid and restart count: a restart or recreation changes it. */
async function podIdentity(name: string): Promise<Record<string, string>> {
  const list = await core.listNamespacedPod({ namespace: NS, labelSelector: `narad.dev/cluster=${name}` });
  return Object.fromEntries(
    list.items.map((p) => [
      p.metadata?.name ?? "",
      `${p.metadata?.uid}/restarts=${p.status?.containerStatuses?.[0]?.restartCount ?? 0}`,
    ]),
  );
}

async function patchSize(name: string, size: string): Promise<number> {
  await platform.kubectl([
    "-n",
    NS,
    "patch",
    "naradcluster",
    name,
    "--type=merge",
    "-p",
    JSON.stringify({ spec: { storage: { size } } }),
  ]);
  return (await cluster(name))?.metadata.generation ?? 0;
}

function applyCluster(name: string, replicas: number, storageClassName: string): Promise<unknown> {
  return platform.applyYaml(
    JSON.stringify({
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradCluster",
      metadata: { name, namespace: NS },
      spec: { replicas, storage: { size: "1Gi", storageClassName } },
    }),
  );
}

async function waitReady(name: string): Promise<void> {
  await waitFor(
    async () => {
      const c = await cluster(name);
      return cond(c, "Ready")?.status === "True" && c?.status?.phase === "Running";
    },
    { timeoutMs: 240_000, what: `cluster ${name} to be Ready`, intervalMs: 1000 },
  );
}

beforeAll(async () => {
  const binaries = await ensureBinaries(log);
  logDir = await mkdtemp(join(tmpdir(), "narad-storage-e2e-"));
  platform = await startPlatform({ dir: logDir, log, binaries, keep: process.env["NARAD_KEEP"] === "1" });
  core = platform.kubeConfig.makeApiClient(CoreV1Api);
  await prepareCluster(platform.kubectl, REPO, [NS, LEASE_NS]);
  op = await startOperator({ kubeconfig: platform.kubeconfigPath, identity: "storage-a", logDir });
  await op.waitForLine((l) => l.msg === "leading: reconciling", "leadership");
  await applyCluster(GROW, 3, STORAGE_CLASS_NAME);
  await applyCluster(FIXED, 1, FIXED_STORAGE_CLASS_NAME);
  await waitReady(GROW);
  await waitReady(FIXED);
}, 600_000);

afterAll(async () => {
  await op?.kill("SIGKILL");
  if (process.env["NARAD_KEEP"] === "1") log(`kept ${logDir} (operator logs, platform state)`);
  await platform?.stop({ keep: process.env["NARAD_KEEP"] === "1" });
});

describe("volume expansion", () => {
  it("grows every broker PVC 1Gi → 2Gi online on an expandable class: no pod restarted, condition clears", async () => {
    const before = await claims(GROW);
    expect(before.map((c) => [c.request, c.capacity, c.className])).toEqual(
      Array(3).fill(["1Gi", "1Gi", STORAGE_CLASS_NAME]),
    );
    const pods = await podIdentity(GROW);
    expect(Object.keys(pods)).toHaveLength(3);
    const t0 = Date.now();
    const gen = await patchSize(GROW, "2Gi");
    // The progress condition shows while any PVC is below the size.
    let sawProgress: string | undefined;
    const done = await waitFor(
      async () => {
        const c = await cluster(GROW);
        const p = cond(c, "Progressing");
        if (p?.reason === "ExpandingVolumes") sawProgress ??= p.message;
        const list = await claims(GROW);
        const settled =
          c?.status?.observedGeneration === gen &&
          list.every((x) => x.capacity === "2Gi") &&
          p?.reason === "UpToDate" &&
          cond(c, "Degraded")?.status === "False" &&
          cond(c, "Ready")?.status === "True";
        return settled ? list : undefined;
      },
      { timeoutMs: 90_000, what: "every PVC at 2Gi and the cluster settled", intervalMs: 250 },
    );
    const ms = Date.now() - t0;
    expect(done.map((c) => c.uid)).toEqual(before.map((c) => c.uid)); // the same claims, grown
    expect(done.map((c) => c.request)).toEqual(["2Gi", "2Gi", "2Gi"]);
    for (const c of done) {
      const pv = await core.readPersistentVolume({ name: c.volume ?? "" });
      expect(pv.spec?.capacity?.["storage"]).toBe("2Gi");
    }
    expect(await podIdentity(GROW)).toEqual(pods);
    // The StatefulSet's claim template is immutable and stays as created.
    const sts = await getJson<{
      spec: { volumeClaimTemplates: Array<{ spec: { resources: { requests: { storage: string } } } }> };
    }>(platform.kubectl, ["-n", NS, "statefulset", GROW]);
    expect(sts?.spec.volumeClaimTemplates[0]?.spec.resources.requests.storage).toBe("1Gi");
    const events = (
      await platform.kubectl([
        "-n",
        NS,
        "get",
        "events",
        "-o",
        "jsonpath={range .items[*]}{.reason}{'\\n'}{end}",
      ])
    ).stdout.split("\n");
    expect(events).toEqual(
      expect.arrayContaining([
        "VolumeExpansion",
        "VolumesExpanded",
        "Resizing",
        "FileSystemResizeSuccessful",
      ]),
    );
    // The brokers kept serving throughout: every pod still answers ready.
    for (const p of await listBrokerPods(core, NS, GROW)) {
      const r = await fetch(`http://${p.ip}:${BROKER_PORT}/readyz`, {
        headers: headers(),
        signal: AbortSignal.timeout(5_000),
      });
      expect(r.status, `${p.name} /readyz`).toBe(200);
    }
    console.log(
      `storage-e2e: 3 PVCs 1Gi → 2Gi on ${STORAGE_CLASS_NAME} in ${(ms / 1000).toFixed(1)} s (patch to settled conditions), 0 pods restarted; progress seen: ${sawProgress ?? "(too quick to sample)"}`,
    );
  });

  it("refuses growth on a class without allowVolumeExpansion: Degraded with the class name, a Warning, nothing changed", async () => {
    const before = await claims(FIXED);
    expect(before.map((c) => [c.request, c.capacity, c.className])).toEqual([
      ["1Gi", "1Gi", FIXED_STORAGE_CLASS_NAME],
    ]);
    const pods = await podIdentity(FIXED);
    const t0 = Date.now();
    const gen = await patchSize(FIXED, "2Gi");
    const degraded = await waitFor(
      async () => {
        const c = await cluster(FIXED);
        const d = cond(c, "Degraded");
        return c?.status?.observedGeneration === gen && d?.reason === "VolumeExpansionUnsupported"
          ? d
          : undefined;
      },
      { timeoutMs: 60_000, what: "Degraded=VolumeExpansionUnsupported", intervalMs: 250 },
    );
    const ms = Date.now() - t0;
    expect(degraded.status).toBe("True");
    expect(degraded.message).toContain(
      `StorageClass ${FIXED_STORAGE_CLASS_NAME} does not allow volume expansion`,
    );
    const warnings = await platform.kubectl([
      "-n",
      NS,
      "get",
      "events",
      "--field-selector",
      "reason=VolumeExpansionUnsupported,type=Warning",
      "-o",
      "json",
    ]);
    expect(warnings.stdout).toContain(`data-${FIXED}-0`);
    await sleep(3_000); // time for a wrong patch to land
    expect(await claims(FIXED)).toEqual(before);
    expect(await podIdentity(FIXED)).toEqual(pods);
    console.log(
      `storage-e2e: growth on ${FIXED_STORAGE_CLASS_NAME} refused in ${(ms / 1000).toFixed(1)} s: ${degraded.message}`,
    );
  });

  it("refuses a shrink of the expanded cluster and keeps its volumes", async () => {
    const before = await claims(GROW);
    const gen = await patchSize(GROW, "1Gi");
    const degraded = await waitFor(
      async () => {
        const c = await cluster(GROW);
        const d = cond(c, "Degraded");
        return c?.status?.observedGeneration === gen && d?.reason === "VolumeShrinkUnsupported"
          ? d
          : undefined;
      },
      { timeoutMs: 60_000, what: "Degraded=VolumeShrinkUnsupported", intervalMs: 250 },
    );
    expect(degraded.message).toContain("cannot shrink");
    expect(await claims(GROW)).toEqual(before);
    // back to the size the volumes have: healthy again
    await patchSize(GROW, "2Gi");
    await waitFor(async () => cond(await cluster(GROW), "Degraded")?.status === "False", {
      timeoutMs: 60_000,
      what: "Degraded=False again",
      intervalMs: 250,
    });
  });
});
