// A bad image in a rolling restart, against a real API server (issue #21
// item 9). The roll drains and deletes its first pod; the replacement runs an
// image the node agent cannot "pull" (ErrImagePull, like a typo in a real
// registry path) and never becomes Ready. Before the fix its member stayed in
// Maintenance forever (Maintenance outranks Down), the peers held its
// records in their WALs, and status said Ready=True, Degraded=False. Now:
//   - past spec.rollout.replacementTimeoutSeconds the cluster is Degraded,
//     reason ReplacementNotReady, naming the pod and its container state;
//   - one Warning Event ReplacementNotReady;
//   - the member leaves Maintenance and the Down rules apply (pod not Ready
//     and its broker unreachable for the grace): Down;
//   - records flow again: the survivors reroute, and every record
//     acknowledged after the Down is readable from the survivors' partitions.
// Numbers are printed with "stuck-replacement-e2e:".
import { setTimeout as sleep } from "node:timers/promises";
import type { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import type { Platform } from "../platform/platform.ts";
import { clusterCredentials } from "./credentials.ts";
import { getJson, type OperatorProcess, startOperator, startSuitePlatform, waitFor } from "./harness.ts";
import { BROKER_PORT, type HeaderSource, LoadProducer, listBrokerPods, PodSampler } from "./load.ts";

const log = stderrLog("stuck-replacement-e2e");
const NS = "stuckrepl";
const LEASE_NS = "narad-system";
const NAME = "stuck";
const TOPIC = "events";
const PARTITIONS = 6;
const DOWN_GRACE_SECONDS = 10;
const REPLACEMENT_TIMEOUT_SECONDS = 20;
const BROKEN_IMAGE = "ghcr.io/narad/narad-typo:0.2.0";
let headers: HeaderSource = () => ({});

interface Cluster {
  status?: {
    phase?: string;
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
    members?: Array<{ id: string; state: string }>;
    roll?: { podInFlight: string };
  };
}

let platform: Platform;
let core: CoreV1Api;
let logDir: string;
let op: OperatorProcess | undefined;

const cluster = () => getJson<Cluster>(platform.kubectl, ["-n", NS, "naradcluster", NAME]);
const cond = (c: Cluster | undefined, type: string) => c?.status?.conditions?.find((x) => x.type === type);
const member = (c: Cluster | undefined, id: string) => c?.status?.members?.find((m) => m.id === id);
const pods = () => listBrokerPods(core, NS, NAME);

async function metricSum(ip: string, name: string): Promise<number> {
  const r = await fetch(`http://${ip}:${BROKER_PORT}/metrics`, {
    headers: headers(),
    signal: AbortSignal.timeout(5_000),
  });
  let sum = 0;
  for (const line of (await r.text()).split("\n"))
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.split(" ").pop());
  return sum;
}
const sumOver = async (ips: string[], name: string) =>
  (await Promise.all(ips.map((ip) => metricSum(ip, name)))).reduce((a, b) => a + b, 0);

async function readPartitions(ip: string, partitions: readonly number[]): Promise<Set<string> | undefined> {
  const seen = new Set<string>();
  for (const p of partitions) {
    let offset = 0;
    for (;;) {
      const r = await fetch(
        `http://${ip}:${BROKER_PORT}/v1/topics/${TOPIC}/records?partition=${p}&offset=${offset}&limit=1000`,
        { headers: headers(), signal: AbortSignal.timeout(10_000) },
      );
      if (r.status !== 200) {
        await r.body?.cancel();
        return undefined;
      }
      const body = (await r.json()) as { next_offset: number; records: Array<{ key: string }> };
      for (const rec of body.records) seen.add(rec.key);
      if (body.records.length === 0) break;
      offset = body.next_offset;
    }
  }
  return seen;
}

beforeAll(async () => {
  ({ logDir, platform, core } = await startSuitePlatform("stuck-replacement", log, [NS, LEASE_NS]));
  op = await startOperator({ kubeconfig: platform.kubeconfigPath, identity: "stuck-a", logDir });
  await op.waitForLine((l) => l.msg === "leading: reconciling", "leadership");
  await platform.applyYaml(
    JSON.stringify({
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradCluster",
      metadata: { name: NAME, namespace: NS },
      spec: {
        replicas: 3,
        rollout: {
          downGraceSeconds: DOWN_GRACE_SECONDS,
          replacementTimeoutSeconds: REPLACEMENT_TIMEOUT_SECONDS,
          drainTimeoutSeconds: 5,
        },
        security: { auth: { enabled: true } },
      },
    }),
  );
  await waitFor(
    async () => {
      const c = await cluster();
      return cond(c, "Ready")?.status === "True" && c?.status?.phase === "Running";
    },
    { timeoutMs: 180_000, what: "the cluster to be Ready", intervalMs: 1000 },
  );
  headers = await clusterCredentials(platform.kubectl, NS, NAME);
  const ip = (await pods())[0]!.ip!;
  const created = await fetch(`http://${ip}:${BROKER_PORT}/v1/topics`, {
    method: "POST",
    headers: { ...headers(), "content-type": "application/json" },
    body: JSON.stringify({ name: TOPIC, partitions: PARTITIONS }),
  });
  expect(created.status).toBe(201);
}, 1_500_000);

afterAll(async () => {
  await op?.kill("SIGKILL");
  if (process.env["NARAD_KEEP"] === "1") log(`kept ${logDir} (operator logs, platform state)`);
  await platform?.stop({ keep: process.env["NARAD_KEEP"] === "1" });
});

describe("a bad image in a rolling restart", () => {
  it("→ Degraded (ReplacementNotReady, pod named) → Warning Event → member Down → records flow again", async () => {
    const sampler = new PodSampler(() => 3, pods, log);
    const producer = new LoadProducer({ tag: "s1", topic: TOPIC, ips: () => sampler.readyIps, headers });
    await sleep(3_000);
    const t0 = Date.now();
    await platform.kubectl([
      "-n",
      NS,
      "patch",
      "naradcluster",
      NAME,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { image: BROKEN_IMAGE } }),
    ]);

    // The roll names its first pod; that pod's replacement never starts.
    const victim = (
      await waitFor(async () => (await cluster())?.status?.roll?.podInFlight, {
        timeoutMs: 60_000,
        what: "the roll to name a pod",
        intervalMs: 250,
      })
    ).toString();
    const survivors = () => sampler.readyIps;
    let peakPending = 0;
    const degraded = await waitFor(
      async () => {
        const c = await cluster();
        const ips = survivors();
        if (ips.length > 0)
          peakPending = Math.max(peakPending, await sumOver(ips, "narad_wal_pending_records"));
        const d = cond(c, "Degraded");
        return d?.status === "True" && d.reason === "ReplacementNotReady" ? { c, d } : undefined;
      },
      { timeoutMs: 180_000, what: "Degraded=True reason ReplacementNotReady", intervalMs: 500 },
    );
    const tDegraded = Date.now();
    log(`Degraded after ${((tDegraded - t0) / 1000).toFixed(1)} s: ${degraded.d.message}`);
    expect(degraded.d.message).toContain(`replacement pod ${victim}`);
    expect(degraded.d.message).toContain("ErrImagePull");
    expect(cond(degraded.c, "Ready")?.status).toBe("False");
    expect(cond(degraded.c, "Progressing")?.status).toBe("False");

    const warning = await waitFor(
      async () => {
        const ev = await getJson<{ items: Array<{ type: string; reason: string; message: string }> }>(
          platform.kubectl,
          ["-n", NS, "events"],
        );
        const found = (ev?.items ?? []).filter((e) => e.reason === "ReplacementNotReady");
        return found.length > 0 ? found : undefined;
      },
      { timeoutMs: 30_000, what: "a ReplacementNotReady Event", intervalMs: 500 },
    );
    expect(warning[0]?.type).toBe("Warning");
    expect(warning[0]?.message).toContain(victim);

    const survivorIps = (await pods()).filter((p) => p.name !== victim && p.ready).map((p) => p.ip as string);
    expect(survivorIps).toHaveLength(2);
    const reroutedBefore = await sumOver(survivorIps, "narad_dispatch_rerouted_records_total");
    await waitFor(async () => member(await cluster(), victim)?.state === "Down", {
      timeoutMs: 90_000,
      what: `${victim} to be Down`,
      intervalMs: 250,
    });
    const tDown = Date.now();
    await waitFor(
      async () => (await sumOver(survivorIps, "narad_dispatch_rerouted_records_total")) > reroutedBefore,
      { timeoutMs: 30_000, what: "the survivors to reroute", intervalMs: 250 },
    );
    const tReroute = Date.now();
    // Records acknowledged from two seconds after the Down on: all readable
    // from the survivors' partitions while the victim is still Down.
    await sleep(2_000);
    const from = producer.acked.size;
    await sleep(8_000);
    const window = [...producer.acked].slice(from);
    const ownedByVictim = (
      (
        await getJson<{ status?: { assignments?: Array<{ partition: number; owner: string }> } }>(
          platform.kubectl,
          ["-n", NS, "naradtopic", TOPIC],
        )
      )?.status?.assignments ?? []
    )
      .filter((a) => a.owner === victim)
      .map((a) => a.partition);
    const survivorPartitions = [...Array(PARTITIONS).keys()].filter((p) => !ownedByVictim.includes(p));
    const pendingAfter = await sumOver(survivorIps, "narad_wal_pending_records");
    const seen = await waitFor(
      async () => {
        const s = await readPartitions(survivorIps[0]!, survivorPartitions);
        return s !== undefined && window.every((id) => s.has(id)) ? s : undefined;
      },
      { timeoutMs: 60_000, what: "records acknowledged after the Down to be readable", intervalMs: 1000 },
    ).catch(() => undefined);
    await producer.stop();
    await sampler.stop();
    const missing = seen === undefined ? window.length : window.filter((id) => !seen.has(id)).length;
    console.log(
      `stuck-replacement-e2e: image change → Degraded (ReplacementNotReady) ${((tDegraded - t0) / 1000).toFixed(1)} s (bound ${REPLACEMENT_TIMEOUT_SECONDS} s), → ${victim} Down ${((tDown - t0) / 1000).toFixed(1)} s (grace ${DOWN_GRACE_SECONDS} s), → reroute ${((tReroute - t0) / 1000).toFixed(1)} s; survivors' WAL pending peak ${peakPending} while held, ${pendingAfter} after the Down; ${window.length} records acked after the Down, ${missing} not readable from the survivors; produce ${producer.summary()}`,
    );
    expect(window.length).toBeGreaterThan(20);
    expect(missing).toBe(0);
  }, 600_000);
});
