// Drained rolling restarts against a real API server (the local platform),
// with a continuous producer and a verifier that reads every record back:
//   1. an image change rolls all three pods, at most one unavailable at any
//      sampled moment, zero loss, zero duplicates, PVC UIDs unchanged;
//   2. the operator SIGKILLed mid-roll: a new one resumes and finishes;
//   3. a drain that cannot finish (the owner of some of its records frozen)
//      blocks the roll with Progressing=RollBlocked and deletes no other pod;
//      unfreezing lets the roll finish.
// The three rolls run on one cluster, in order. Numbers are printed with
// console.log ("roll-e2e:") for the README.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import type { Platform } from "../platform/platform.ts";
import { clusterCredentials } from "./credentials.ts";
import { getJson, type OperatorProcess, startOperator, startSuitePlatform, waitFor } from "./harness.ts";
import {
  checkLedger,
  type HeaderSource,
  LoadProducer,
  listBrokerPods,
  type PodInfo,
  PodSampler,
  readTopic,
} from "./load.ts";

const log = stderrLog("roll-e2e");
const NS = "rolls";
const LEASE_NS = "narad-system";
const NAME = "roll";
const TOPIC = "events";
const PARTITIONS = 6;
const IMAGE = (tag: string) => `ghcr.io/narad/narad:${tag}`;

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface Cluster {
  metadata: { generation?: number };
  status?: {
    phase?: string;
    observedGeneration?: number;
    conditions?: Condition[];
    members?: Array<{ id: string; state: string }>;
    roll?: { podInFlight: string; startedAt: string; reason: string };
    updateRevision?: string;
  };
}

let platform: Platform;
let core: CoreV1Api;
let logDir: string;
const operators: OperatorProcess[] = [];
/** Admin credentials from the operator-created users Secret (set once the cluster exists). */
let headers: HeaderSource = () => ({});

async function cluster(): Promise<Cluster | undefined> {
  return getJson<Cluster>(platform.kubectl, ["-n", NS, "naradcluster", NAME]);
}
const cond = (c: Cluster | undefined, type: string) => c?.status?.conditions?.find((x) => x.type === type);

async function pods(): Promise<PodInfo[]> {
  return listBrokerPods(core, NS, NAME);
}

async function pvcUids(): Promise<Record<string, string>> {
  const list = await core.listNamespacedPersistentVolumeClaim({ namespace: NS });
  return Object.fromEntries(list.items.map((p) => [p.metadata?.name ?? "", p.metadata?.uid ?? ""]));
}

async function patch(spec: Record<string, unknown>): Promise<void> {
  await platform.kubectl([
    "-n",
    NS,
    "patch",
    "naradcluster",
    NAME,
    "--type=merge",
    "-p",
    JSON.stringify({ spec }),
  ]);
}

async function brokerPid(pod: string): Promise<number> {
  return Number(
    (await readFile(join(platform.dir, "node", "pods", `${NS}_${pod}`, "narad.pid"), "utf8")).trim(),
  );
}

/** Waits until every acked id is readable, then checks: none lost, none twice, also through a second broker. */
async function verify(producer: LoadProducer, prefix: string): Promise<void> {
  const ips = (await pods()).filter((p) => p.ready && p.ip).map((p) => p.ip as string);
  const report = await checkLedger(producer, {
    ip: ips[0]!,
    topic: TOPIC,
    partitions: PARTITIONS,
    headers,
  });
  console.log(`roll-e2e: ${report.line}`);
  expect(producer.tag).toBe(prefix);
  expect(report.lost.slice(0, 10)).toEqual([]);
  expect(report.duplicated.slice(0, 10)).toEqual([]);
  expect(report.unknown.slice(0, 10)).toEqual([]);
  // the same through another broker (reads cross the cluster RPC)
  const other = await readTopic(ips[1]!, TOPIC, PARTITIONS, headers);
  expect([...producer.acked].filter((id) => !other?.has(id))).toEqual([]);
}

/**
 * Waits for every pod at the StatefulSet's update revision (a new one, not
 * fromRevision), the roll cleared, and the cluster settled.
 */
async function waitRolled(generation: number, fromRevision: string, timeoutMs: number): Promise<Cluster> {
  return waitFor(
    async () => {
      const c = await cluster();
      const list = await pods();
      const rev = c?.status?.updateRevision;
      const done =
        c?.status?.observedGeneration === generation &&
        rev !== undefined &&
        rev !== fromRevision &&
        c.status.roll === undefined &&
        cond(c, "Progressing")?.reason === "UpToDate" &&
        cond(c, "Ready")?.status === "True" &&
        list.length === 3 &&
        list.every((p) => p.ready && p.revision === rev);
      return done ? c : undefined;
    },
    { timeoutMs, what: `the roll at generation ${generation} to finish`, intervalMs: 500 },
  );
}

async function operator(identity: string): Promise<OperatorProcess> {
  const op = await startOperator({ kubeconfig: platform.kubeconfigPath, identity, logDir });
  operators.push(op);
  return op;
}

beforeAll(async () => {
  ({ logDir, platform, core } = await startSuitePlatform("roll", log, [NS, LEASE_NS]));
  const a = await operator("roll-a");
  await a.waitForLine((l) => l.msg === "leading: reconciling", "leadership");
  await platform.applyYaml(
    JSON.stringify({
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradCluster",
      metadata: { name: NAME, namespace: NS },
      spec: {
        replicas: 3,
        image: IMAGE("0.1.0"),
        // short drain bound for the blocked-drain test; a frozen peer must not go Down meanwhile
        rollout: { drainTimeoutSeconds: 5, downGraceSeconds: 120 },
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
  const created = await fetch(`http://${ip}:7942/v1/topics`, {
    method: "POST",
    headers: { ...headers(), "content-type": "application/json" },
    body: JSON.stringify({ name: TOPIC, partitions: PARTITIONS }),
  });
  expect(created.status).toBe(201);
}, 600_000);

afterAll(async () => {
  for (const op of operators) await op.kill("SIGKILL");
  if (process.env["NARAD_KEEP"] === "1") log(`kept ${logDir} (operator logs, platform state)`);
  await platform?.stop({ keep: process.env["NARAD_KEEP"] === "1" });
});

describe("drained rolling restart", () => {
  it("an image change rolls all three pods one at a time: ≤1 unavailable, zero loss, zero duplicates, PVCs kept", async () => {
    const before = await pods();
    const pvcs = await pvcUids();
    expect(Object.keys(pvcs)).toHaveLength(3);
    const sampler = new PodSampler(() => 3, pods, log);
    const producer = new LoadProducer({ tag: "r1", topic: TOPIC, ips: () => sampler.readyIps, headers });
    await sleep(2_000); // traffic before the roll
    const gen = ((await cluster())?.metadata.generation ?? 0) + 1;
    const fromRevision = (await cluster())?.status?.updateRevision ?? "";
    const t0 = Date.now();
    await patch({ image: IMAGE("0.1.1") });
    await waitRolled(gen, fromRevision, 150_000);
    const rollMs = Date.now() - t0;
    await sleep(1_000); // traffic after the roll
    await producer.stop();
    await sampler.stop();
    console.log(
      `roll-e2e: image roll of 3 pods took ${(rollMs / 1000).toFixed(1)} s; max unavailable ${sampler.maxUnavailable} over ${sampler.samples} samples; produce: ${producer.summary()}`,
    );
    expect(sampler.maxUnavailable, `worst sample: ${sampler.worst.join(" ")}`).toBeLessThanOrEqual(1);
    const after = await pods();
    for (const p of before) expect(after.find((x) => x.name === p.name)?.uid).not.toBe(p.uid);
    expect(await pvcUids()).toEqual(pvcs);
    const a = operators.find((o) => o.identity === "roll-a")!;
    const deletions = a
      .lines()
      .filter((l) => l.msg.startsWith("deleted pod "))
      .map((l) => l.msg.split(" ")[2]);
    expect(deletions).toEqual([`${NAME}-2`, `${NAME}-1`, `${NAME}-0`]);
    const events = await platform.kubectl([
      "-n",
      NS,
      "get",
      "events",
      "--field-selector",
      "reason=RollComplete",
    ]);
    expect(events.stdout).toContain("every pod runs it now");
    await verify(producer, "r1");
  });

  it("an operator SIGKILLed mid-roll is replaced and the new one finishes the roll", async () => {
    const sampler = new PodSampler(() => 3, pods, log);
    const producer = new LoadProducer({ tag: "r2", topic: TOPIC, ips: () => sampler.readyIps, headers });
    const gen = ((await cluster())?.metadata.generation ?? 0) + 1;
    const fromRevision = (await cluster())?.status?.updateRevision ?? "";
    const t0 = Date.now();
    await patch({ image: IMAGE("0.1.2") });
    // kill once the second pod is in flight (the first is done)
    await waitFor(async () => (await cluster())?.status?.roll?.podInFlight === `${NAME}-1`, {
      timeoutMs: 90_000,
      what: "the roll to reach the second pod",
      intervalMs: 200,
    });
    const a = operators.find((o) => o.identity === "roll-a")!;
    await a.kill("SIGKILL");
    const killedAt = Date.now();
    const inFlight = (await cluster())?.status?.roll;
    const b = await operator("roll-b");
    await b.waitForLine((l) => l.msg === "leading: reconciling", "roll-b to lead", 60_000);
    await waitRolled(gen, fromRevision, 150_000);
    const rollMs = Date.now() - t0;
    await producer.stop();
    await sampler.stop();
    console.log(
      `roll-e2e: roll with the operator killed at ${inFlight?.podInFlight} took ${(rollMs / 1000).toFixed(1)} s (${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill, incl. the 15 s lease); max unavailable ${sampler.maxUnavailable}; produce: ${producer.summary()}`,
    );
    expect(sampler.maxUnavailable, `worst sample: ${sampler.worst.join(" ")}`).toBeLessThanOrEqual(1);
    // the new operator picked up the roll from status, it did not start over
    expect(b.lines().some((l) => l.msg.startsWith(`deleted pod ${NAME}-0`))).toBe(true);
    expect(b.lines().some((l) => l.msg.startsWith(`deleted pod ${NAME}-2`))).toBe(false);
    await verify(producer, "r2");
  });

  it("a drain that cannot finish blocks the roll (RollBlocked), deletes no other pod, and resumes once it drains", async () => {
    const sampler = new PodSampler(() => 3, pods, log);
    const producer = new LoadProducer({ tag: "r3", topic: TOPIC, ips: () => sampler.readyIps, headers });
    // Stage the new template while paused, so the roll starts the moment we unpause.
    const gen = ((await cluster())?.metadata.generation ?? 0) + 2;
    const fromRevision = (await cluster())?.status?.updateRevision ?? "";
    await patch({ image: IMAGE("0.1.3"), rollout: { paused: true } });
    await waitFor(async () => cond(await cluster(), "Progressing")?.reason === "RolloutPaused", {
      timeoutMs: 60_000,
      what: "Progressing=RolloutPaused",
      intervalMs: 300,
    });
    const frozenPod = `${NAME}-0`; // owner of some of ${NAME}-2's records; rolled last
    const frozenIp = (await pods()).find((p) => p.name === frozenPod)!.ip!;
    producer.exclude.add(frozenIp);
    await sleep(1_000); // let requests already sent to it finish
    const pid = await brokerPid(frozenPod);
    process.kill(pid, "SIGSTOP");
    let resumedAt = 0;
    try {
      await patch({ rollout: { paused: false } });
      const blocked = await waitFor(
        async () => {
          const c = cond(await cluster(), "Progressing");
          return c?.reason === "RollBlocked" ? c : undefined;
        },
        { timeoutMs: 60_000, what: "Progressing=RollBlocked", intervalMs: 300 },
      );
      console.log(`roll-e2e: blocked: ${blocked.message}`);
      expect(blocked.status).toBe("False");
      expect(blocked.message).toMatch(/drain of roll-2 not finished .*: [1-9][0-9]* WAL record\(s\) pending/);
      const c = await cluster();
      expect(c?.status?.roll?.podInFlight).toBe(`${NAME}-2`);
      expect(cond(c, "Degraded")?.reason).toBe("RollBlocked");
      const uids = (await pods()).map((p) => `${p.name}/${p.uid}`).sort();
      await sleep(6_000); // a would-be second disruption has time to happen
      expect((await pods()).map((p) => `${p.name}/${p.uid}`).sort()).toEqual(uids);
      expect(sampler.deleted.size).toBe(0);
      const events = await platform.kubectl([
        "-n",
        NS,
        "get",
        "events",
        "--field-selector",
        "reason=RollBlocked",
        "-o",
        "json",
      ]);
      expect(events.stdout).toContain("WAL record(s) pending");
    } finally {
      process.kill(pid, "SIGCONT");
      resumedAt = Date.now();
      producer.exclude.delete(frozenIp);
    }
    await waitRolled(gen, fromRevision, 150_000);
    console.log(
      `roll-e2e: blocked roll finished ${((Date.now() - resumedAt) / 1000).toFixed(1)} s after the frozen broker was resumed; produce: ${producer.summary()}`,
    );
    await producer.stop();
    await sampler.stop();
    await verify(producer, "r3");
  });
});
