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
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import { getJson, waitFor } from "./harness.ts";
import { LoadProducer, metricSum, PodSampler, readTopic } from "./load.ts";
import {
  condition as cond,
  eventsOf,
  memberOf as member,
  type SuiteCluster,
  startSuiteCluster,
} from "./suite.ts";

const log = stderrLog("stuck-replacement-e2e");
const NS = "stuckrepl";
const NAME = "stuck";
const TOPIC = "events";
const PARTITIONS = 6;
const DOWN_GRACE_SECONDS = 10;
const REPLACEMENT_TIMEOUT_SECONDS = 20;
const BROKEN_IMAGE = "ghcr.io/narad/narad-typo:0.2.0";

let s: SuiteCluster;
const cluster = () => s.cluster();
const pods = () => s.pods();
const sumOver = async (ips: string[], name: string) =>
  (await Promise.all(ips.map((ip) => metricSum(ip, name, s.headers)))).reduce((a, b) => a + b, 0);

beforeAll(async () => {
  s = await startSuiteCluster({
    suite: "stuck-replacement",
    log,
    namespace: NS,
    name: NAME,
    spec: {
      replicas: 3,
      rollout: {
        downGraceSeconds: DOWN_GRACE_SECONDS,
        replacementTimeoutSeconds: REPLACEMENT_TIMEOUT_SECONDS,
        drainTimeoutSeconds: 5,
      },
      security: { auth: { enabled: true } },
    },
    // One copy: this suite is about single-copy partitions (a 3-broker cluster defaults to 3).
    topic: { name: TOPIC, partitions: PARTITIONS, replicationFactor: 1 },
  });
}, 1_500_000);

afterAll(async () => {
  await s?.stop();
});

describe("a bad image in a rolling restart", () => {
  it("→ Degraded (ReplacementNotReady, pod named) → Warning Event → member Down → records flow again", async () => {
    const sampler = new PodSampler(() => 3, pods, log);
    const producer = new LoadProducer({
      tag: "s1",
      topic: TOPIC,
      ips: () => sampler.readyIps,
      headers: s.headers,
    });
    await sleep(3_000);
    const t0 = Date.now();
    await s.patchSpec({ image: BROKEN_IMAGE });

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
        const found = await eventsOf(s.platform, NS, "ReplacementNotReady");
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
          s.platform.kubectl,
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
        const seen = await readTopic(survivorIps[0]!, TOPIC, survivorPartitions, s.headers);
        return seen !== undefined && window.every((id) => seen.has(id)) ? seen : undefined;
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
