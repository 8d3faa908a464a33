// A 1-broker NaradCluster rolled onto a new image, against a real API server
// (the local platform, whose kube-controller-manager computes the budget's
// status). With one pod, maxUnavailable 1 gives the PodDisruptionBudget
// desiredHealthy 0, and the API server lets a pod that is not Ready past a
// budget only when desiredHealthy is above 0 (or the budget says
// unhealthyPodEvictionPolicy: AlwaysAllow). The drain turns the broker not
// Ready by design, so its Eviction used to be refused for good and the
// cluster stayed on its old image. Now the single broker's budget carries
// AlwaysAllow, and the roll:
//   - drains the broker and waits until its WAL has nothing pending;
//   - evicts it (accepted downtime: a Warning RollingUpdate says so), with
//     no EvictionRefused on the way;
//   - finishes once the replacement is Ready on the new image, with every
//     record acknowledged before and during the roll readable after it,
//     none twice, and the PVC kept.
// Numbers are printed with "single-broker-roll-e2e:".
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import { getJson, waitFor } from "./harness.ts";
import { checkLedger, LoadProducer, PodSampler } from "./load.ts";
import { condition as cond, eventsOf, type SuiteCluster, startSuiteCluster } from "./suite.ts";

const log = stderrLog("single-broker-roll-e2e");
const NS = "single";
const NAME = "solo";
const TOPIC = "events";
const PARTITIONS = 3;
const IMAGE = (tag: string) => `ghcr.io/narad/narad:${tag}`;

interface Budget {
  spec?: { maxUnavailable?: number; unhealthyPodEvictionPolicy?: string };
  status?: {
    expectedPods?: number;
    desiredHealthy?: number;
    currentHealthy?: number;
    disruptionsAllowed?: number;
  };
}

let s: SuiteCluster;
const budget = () => getJson<Budget>(s.platform.kubectl, ["-n", NS, "poddisruptionbudget", NAME]);
const imageOf = async (pod: string) =>
  (await s.platform.kubectl(["-n", NS, "get", "pod", pod, "-o", "jsonpath={.spec.containers[0].image}"]))
    .stdout;
const pvcUid = async () =>
  (await s.platform.kubectl(["-n", NS, "get", "pvc", `data-${NAME}-0`, "-o", "jsonpath={.metadata.uid}"]))
    .stdout;

beforeAll(async () => {
  s = await startSuiteCluster({
    suite: "single-broker-roll",
    log,
    namespace: NS,
    name: NAME,
    spec: {
      replicas: 1,
      image: IMAGE("0.1.0"),
      rollout: { drainTimeoutSeconds: 60 },
      security: { auth: { enabled: true } },
    },
    topic: { name: TOPIC, partitions: PARTITIONS },
  });
}, 1_500_000);

afterAll(async () => {
  await s?.stop();
});

describe("a 1-broker cluster", () => {
  it("is rolled onto a new image: drained first, evicted, every acknowledged record readable after", async () => {
    // The budget as the API server sees it: nothing to spare but one pod.
    const before = await waitFor(
      async () => {
        const b = await budget();
        return b?.status?.expectedPods === 1 && b.status.currentHealthy === 1 ? b : undefined;
      },
      { timeoutMs: 60_000, what: "the PodDisruptionBudget status", intervalMs: 500 },
    );
    log(`budget before: ${JSON.stringify(before.spec)} ${JSON.stringify(before.status)}`);
    expect(before.spec).toMatchObject({ maxUnavailable: 1, unhealthyPodEvictionPolicy: "AlwaysAllow" });
    expect(before.status).toMatchObject({ desiredHealthy: 0, disruptionsAllowed: 1 });

    const [first] = await s.pods();
    expect(first?.name).toBe(`${NAME}-0`);
    const pvc = await pvcUid();
    expect(pvc).not.toBe("");
    const sampler = new PodSampler(() => 1, s.pods, log);
    const producer = new LoadProducer({
      tag: "solo",
      topic: TOPIC,
      ips: () => sampler.readyIps,
      headers: s.headers,
    });
    await waitFor(async () => producer.acked.size >= 300, {
      timeoutMs: 60_000,
      what: "300 records acknowledged before the roll",
      intervalMs: 200,
    });
    const ackedBefore = new Set(producer.acked);

    // While the roll is in flight: the least the budget allowed (0 once the drained pod is not Ready).
    let minAllowed = Number.POSITIVE_INFINITY;
    let watching = true;
    const watchBudget = (async () => {
      while (watching) {
        const b = await budget();
        const allowed = b?.status?.disruptionsAllowed;
        if (allowed !== undefined) minAllowed = Math.min(minAllowed, allowed);
        await sleep(250);
      }
    })();

    const fromRevision = await revision();
    const t0 = Date.now();
    await s.patchSpec({ image: IMAGE("0.1.1") });
    const done = await waitFor(
      async () => {
        const c = await s.cluster();
        const list = await s.pods();
        const p = list[0];
        const rev = await revision();
        const ok =
          c?.status?.roll === undefined &&
          rev !== fromRevision &&
          cond(c, "Progressing")?.reason === "UpToDate" &&
          cond(c, "Ready")?.status === "True" &&
          list.length === 1 &&
          p?.ready === true &&
          p.uid !== first?.uid &&
          p.revision === rev;
        return ok ? p : undefined;
      },
      { timeoutMs: 240_000, what: "the 1-broker roll to finish", intervalMs: 500 },
    );
    const rollMs = Date.now() - t0;
    watching = false;
    await watchBudget;
    await sleep(1_000); // traffic after the roll
    await producer.stop();
    await sampler.stop();
    expect(await imageOf(done.name)).toBe(IMAGE("0.1.1"));
    expect(await pvcUid()).toBe(pvc);

    // The broker was drained to an empty WAL before it went, and the eviction was never refused.
    const opLines = s.op.lines();
    const evicted = opLines.filter((l) => l.msg.startsWith(`evicted pod ${NAME}-0`));
    expect(evicted).toHaveLength(1);
    expect(evicted[0]?.msg).toContain("drained (0 WAL records pending)");
    expect(evicted[0]?.msg).toContain("the only broker");
    expect(opLines.filter((l) => l.msg.includes("PodDisruptionBudget refuses"))).toEqual([]);
    expect(await eventsOf(s.platform, NS, "EvictionRefused")).toEqual([]);
    const rolling = await eventsOf(s.platform, NS, "RollingUpdate");
    expect(rolling.some((e) => e.type === "Warning" && e.message.includes("only broker"))).toBe(true);
    expect((await eventsOf(s.platform, NS, "RollComplete")).length).toBe(1);

    const ip = done.ip;
    expect(ip).toBeDefined();
    const report = await checkLedger(producer, {
      ip: ip!,
      topic: TOPIC,
      partitions: PARTITIONS,
      headers: s.headers,
    });
    console.log(
      `single-broker-roll-e2e: roll took ${(rollMs / 1000).toFixed(1)} s; budget disruptionsAllowed went down to ${minAllowed} while in flight; max unavailable ${sampler.maxUnavailable}; produce: ${producer.summary()}; ${report.line}; acked before the roll ${ackedBefore.size}`,
    );
    expect([...ackedBefore].filter((id) => report.lost.includes(id))).toEqual([]);
    expect(report.lost.slice(0, 10)).toEqual([]);
    expect(report.duplicated.slice(0, 10)).toEqual([]);
    expect(report.unknown.slice(0, 10)).toEqual([]);
    expect(report.acked).toBeGreaterThan(ackedBefore.size);
  });
});

async function revision(): Promise<string> {
  const sts = await getJson<{ status?: { updateRevision?: string } }>(s.platform.kubectl, [
    "-n",
    NS,
    "statefulset",
    NAME,
  ]);
  return sts?.status?.updateRevision ?? "";
}
