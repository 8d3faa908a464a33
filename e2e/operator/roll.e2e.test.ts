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
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import { type Platform, startPlatform } from "../platform/platform.ts";
import { ensureBinaries } from "../platform/tools.ts";
import { getJson, type OperatorProcess, prepareCluster, startOperator, waitFor } from "./harness.ts";

const log = stderrLog("roll-e2e");
const REPO = resolve(import.meta.dirname, "../..");
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
interface PodInfo {
  name: string;
  uid: string;
  ip: string | undefined;
  ready: boolean;
  terminating: boolean;
  revision: string | undefined;
}

let platform: Platform;
let core: CoreV1Api;
let logDir: string;
const operators: OperatorProcess[] = [];

async function cluster(): Promise<Cluster | undefined> {
  return getJson<Cluster>(platform.kubectl, ["-n", NS, "naradcluster", NAME]);
}
const cond = (c: Cluster | undefined, type: string) => c?.status?.conditions?.find((x) => x.type === type);

async function pods(): Promise<PodInfo[]> {
  const list = await core.listNamespacedPod({ namespace: NS, labelSelector: `narad.dev/cluster=${NAME}` });
  return list.items.map((p) => ({
    name: p.metadata?.name ?? "",
    uid: p.metadata?.uid ?? "",
    ip: p.status?.podIP || undefined,
    ready:
      p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true &&
      !p.metadata?.deletionTimestamp,
    terminating: Boolean(p.metadata?.deletionTimestamp),
    revision: p.metadata?.labels?.["controller-revision-hash"],
  }));
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

/** Samples pods every 200 ms: the most that were unavailable (missing, not Ready, terminating) at once. */
class Sampler {
  maxUnavailable = 0;
  samples = 0;
  worst: string[] = [];
  readyIps: string[] = [];
  deleted = new Set<string>();
  #uids = new Map<string, string>();
  #running = true;
  #loop: Promise<void>;
  constructor(replicas: number) {
    this.#loop = (async () => {
      while (this.#running) {
        try {
          const list = await pods();
          const ready = list.filter((p) => p.ready);
          const unavailable = replicas - ready.length;
          this.samples++;
          if (unavailable > this.maxUnavailable) {
            this.maxUnavailable = unavailable;
            this.worst = list.map(
              (p) => `${p.name}:${p.ready ? "Ready" : p.terminating ? "Terminating" : "NotReady"}`,
            );
          }
          this.readyIps = ready.map((p) => p.ip).filter((ip): ip is string => ip !== undefined);
          for (const p of list) {
            const was = this.#uids.get(p.name);
            if (was !== undefined && was !== p.uid) this.deleted.add(`${p.name}/${was}`);
            this.#uids.set(p.name, p.uid);
          }
        } catch (err) {
          log(`sampler: ${String(err)}`);
        }
        await sleep(200);
      }
    })();
  }
  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
  }
}

/**
 * Continuous producer over the Ready brokers' pod IPs (as a client of the
 * Service would). A 503/429/5xx or a refused connection never reached the WAL:
 * retried on another broker with the same id. A timeout or reset is
 * ambiguous: the id is set aside (may appear at most once) and not retried.
 */
class Producer {
  readonly acked = new Set<string>();
  readonly ambiguous = new Set<string>();
  attempts = 0;
  errors = 0;
  readonly errorKinds = new Map<string, number>();
  exclude = new Set<string>();
  #running = true;
  #rr = 0;
  #workers: Promise<void>[];
  readonly tag: string;
  readonly ips: () => string[];
  constructor(tag: string, ips: () => string[], workers = 3) {
    this.tag = tag;
    this.ips = ips;
    this.#workers = Array.from({ length: workers }, (_, w) => this.#work(w));
  }
  #pick(): string | undefined {
    const ips = this.ips().filter((ip) => !this.exclude.has(ip));
    if (ips.length === 0) return undefined;
    return ips[this.#rr++ % ips.length];
  }
  #err(kind: string): void {
    this.errors++;
    this.errorKinds.set(kind, (this.errorKinds.get(kind) ?? 0) + 1);
  }
  async #work(w: number): Promise<void> {
    let n = 0;
    while (this.#running) {
      const id = `${this.tag}-w${w}-${n++}`;
      for (;;) {
        const ip = this.#pick();
        if (ip === undefined) {
          await sleep(100);
          continue;
        }
        this.attempts++;
        try {
          const r = await fetch(`http://${ip}:7942/v1/topics/${TOPIC}/produce?key=${id}`, {
            method: "POST",
            body: JSON.stringify({ id }),
            signal: AbortSignal.timeout(5_000),
          });
          await r.body?.cancel();
          if (r.status === 202) {
            this.acked.add(id);
            break;
          }
          this.#err(`HTTP ${r.status}`);
          await sleep(50);
        } catch (err) {
          const code = (err as { cause?: { code?: string } }).cause?.code;
          if (code === "ECONNREFUSED") {
            this.#err("ECONNREFUSED");
            await sleep(50);
            continue;
          }
          this.#err(code ?? (err as Error).name);
          this.ambiguous.add(id);
          break;
        }
      }
      await sleep(20);
    }
  }
  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#workers);
  }
  summary(): string {
    const rate = this.attempts === 0 ? 0 : (100 * this.errors) / this.attempts;
    return `${this.acked.size} acked (202) of ${this.attempts} attempts; ${this.errors} errors (${rate.toFixed(2)}%: ${[...this.errorKinds].map(([k, v]) => `${k}×${v}`).join(", ") || "none"}); ${this.ambiguous.size} ambiguous`;
  }
}

/** Every record of the topic, read from one broker across all partitions: key → count. */
async function readAll(ip: string): Promise<Map<string, number> | undefined> {
  const seen = new Map<string, number>();
  for (let p = 0; p < PARTITIONS; p++) {
    let offset = 0;
    for (;;) {
      const r = await fetch(
        `http://${ip}:7942/v1/topics/${TOPIC}/records?partition=${p}&offset=${offset}&limit=1000`,
      );
      if (r.status !== 200) {
        await r.body?.cancel();
        return undefined;
      }
      const body = (await r.json()) as { next_offset: number; records: Array<{ key: string }> };
      for (const rec of body.records) seen.set(rec.key, (seen.get(rec.key) ?? 0) + 1);
      if (body.records.length === 0) break;
      offset = body.next_offset;
    }
  }
  return seen;
}

/** Waits until every acked id is readable, then checks: none lost, none twice. */
async function verify(producer: Producer, prefix: string): Promise<void> {
  const ips = (await pods()).filter((p) => p.ready && p.ip).map((p) => p.ip as string);
  let last: Map<string, number> | undefined;
  try {
    await waitFor(
      async () => {
        last = await readAll(ips[0]!);
        if (last === undefined) return false;
        return [...producer.acked].every((id) => last!.has(id));
      },
      { timeoutMs: 60_000, what: `every acked ${prefix} record to be readable`, intervalMs: 1000 },
    );
  } catch {
    // fall through to the precise assertion below
  }
  const seen = last ?? new Map<string, number>();
  const mine = [...seen].filter(([k]) => k.startsWith(`${prefix}-`));
  const lost = [...producer.acked].filter((id) => !seen.has(id));
  const dups = mine.filter(([, n]) => n > 1).map(([k, n]) => `${k}×${n}`);
  const unknown = mine.filter(([k]) => !producer.acked.has(k) && !producer.ambiguous.has(k)).map(([k]) => k);
  console.log(
    `roll-e2e: ${prefix}: ${producer.acked.size} acked, ${mine.length} distinct read back, lost ${lost.length}, duplicated ${dups.length}, ambiguous ${producer.ambiguous.size} (of which present ${[...producer.ambiguous].filter((k) => seen.has(k)).length})`,
  );
  expect(lost.slice(0, 10)).toEqual([]);
  expect(dups.slice(0, 10)).toEqual([]);
  expect(unknown.slice(0, 10)).toEqual([]);
  // the same through another broker (reads cross the cluster RPC)
  const other = await readAll(ips[1]!);
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
  const binaries = await ensureBinaries(log);
  logDir = await mkdtemp(join(tmpdir(), "narad-roll-e2e-"));
  platform = await startPlatform({ dir: logDir, log, binaries, keep: process.env["NARAD_KEEP"] === "1" });
  core = platform.kubeConfig.makeApiClient(CoreV1Api);
  await prepareCluster(platform.kubectl, REPO, [NS, LEASE_NS]);
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
  const ip = (await pods())[0]!.ip!;
  const created = await fetch(`http://${ip}:7942/v1/topics`, {
    method: "POST",
    headers: { "content-type": "application/json" },
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
    const sampler = new Sampler(3);
    const producer = new Producer("r1", () => sampler.readyIps);
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
    const sampler = new Sampler(3);
    const producer = new Producer("r2", () => sampler.readyIps);
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
    const sampler = new Sampler(3);
    const producer = new Producer("r3", () => sampler.readyIps);
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
