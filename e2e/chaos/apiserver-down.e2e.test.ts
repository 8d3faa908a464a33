// The Kubernetes API server down (NARAD_APISERVER_DOWN_SECONDS, default 75)
// under a 3-broker cluster run by the real operator, with continuous produce
// and queue consumption through every broker. The outage outlasts the two
// clocks it could trip: the operator's Down grace (30 s by default, so an
// operator that trusted its stale view would mark members Down) and
// kube-controller-manager's node-monitor grace (50 s: the node's lease goes
// stale; the pods it may then mark not Ready are logged, "pods seen
// Ready=False"). 120 s (the earlier default) measured the same.
//   - the data plane keeps serving: produce 202s, consume and ack work, every
//     broker stays ready (brokers serve from their watch-fed replica); the
//     topic has the default 3 copies, so each 202 is an acks=all commit on
//     the ISR, which needs no API server while the ISR does not change;
//   - topic changes are refused with a 503 while the metastore is unreachable;
//   - no member is ever marked Down (during, or after the API server returns);
//   - nothing acknowledged is lost or stored twice, and everything acknowledged
//     is delivered to the consumer.
// Numbers are printed with "apiserver-down-e2e:" for the README.
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getJson } from "../operator/harness.ts";
import { BROKER_PORT, LoadProducer, QueueConsumer } from "../operator/load.ts";
import { type SuiteCluster, startSuiteCluster } from "../operator/suite.ts";
import { stderrLog } from "../platform/log.ts";
import { ledgerAndDeliveries, topicCopies } from "./suite.ts";

const log = stderrLog("apiserver-down-e2e");
const NS = "apidown";
const NAME = "apidown";
const TOPIC = "events";
const PARTITIONS = 6;
const DOWN_SECONDS = Number(process.env["NARAD_APISERVER_DOWN_SECONDS"] ?? "75");

let s: SuiteCluster;
/** The three brokers' IPs, read before the outage. */
let ips: string[] = [];

beforeAll(async () => {
  s = await startSuiteCluster({
    suite: "apidown",
    log,
    namespace: NS,
    name: NAME,
    spec: { replicas: 3, image: "ghcr.io/narad/narad:0.1.0" },
    // Ready with 3 Active members.
    ready: { settled: 3, timeoutMs: 180_000 },
    // Every broker's replica has the topic before the outage.
    topic: { name: TOPIC, partitions: PARTITIONS, known: true },
  });
  ips = (await s.pods()).map((p) => p.ip).filter((ip): ip is string => ip !== undefined);
  expect(ips).toHaveLength(3);
  // No factor given: on 3 brokers the default, 3 copies with at least 2 in
  // sync; produce (no acks named) is acks=all, answered once on the ISR.
  expect(await topicCopies(ips[0]!, TOPIC, s.headers)).toEqual([3, 2]);
}, 600_000);

afterAll(async () => {
  await s?.platform.controlPlane.startApiserver().catch(() => undefined);
  await s?.stop();
});

describe("API server down", () => {
  it(`for ${DOWN_SECONDS} s: produce and consume keep working, nobody goes Down, nothing is lost`, async () => {
    const producer = new LoadProducer({
      tag: "apidown",
      topic: TOPIC,
      ips: () => ips,
      headers: s.headers,
      workers: 3,
    });
    const consumer = new QueueConsumer({ topic: TOPIC, group: "g", ips: () => ips, headers: s.headers });
    const downSeen: string[] = [];
    const memberStates = new Set<string>();
    // Pod Ready=False observations after the outage, split by who wrote them:
    // the node lifecycle controller (ContainersReady still True) or the kubelet.
    const podFlips = new Set<string>();
    let watching = true;
    const watchPods = (async () => {
      while (watching) {
        try {
          const pods = await getJson<{
            items: Array<{
              metadata: { name: string };
              status?: { conditions?: Array<{ type: string; status: string; reason?: string }> };
            }>;
          }>(s.platform.kubectl, ["-n", NS, "pods"]);
          for (const p of pods?.items ?? []) {
            const c = p.status?.conditions ?? [];
            if (c.find((x) => x.type === "Ready")?.status !== "False") continue;
            const byNode = c.find((x) => x.type === "ContainersReady")?.status === "True";
            podFlips.add(`${p.metadata.name}:${byNode ? "node-controller" : "kubelet"}`);
          }
        } catch {
          // API server down
        }
        await sleep(2000);
      }
    })();
    const watch = (async () => {
      while (watching) {
        try {
          for (const m of (await s.cluster())?.status?.members ?? []) {
            memberStates.add(`${m.id}:${m.state}`);
            if (m.state === "Down") downSeen.push(`${new Date().toISOString()} ${m.id}`);
          }
        } catch {
          // API server down
        }
        await sleep(2000);
      }
    })();
    let notReady = 0;
    let readyProbes = 0;
    let probing = false;
    const probe = (async () => {
      for (;;) {
        if (probing)
          for (const ip of ips) {
            readyProbes++;
            try {
              const r = await fetch(`http://${ip}:${BROKER_PORT}/readyz`, {
                signal: AbortSignal.timeout(5000),
              });
              await r.body?.cancel();
              if (r.status !== 200) notReady++;
            } catch {
              notReady++;
            }
          }
        if (!watching) return;
        await sleep(1000);
      }
    })();

    await sleep(10_000); // traffic before
    const beforeAcked = producer.acked.size;
    const beforeDelivered = consumer.delivered.size;
    const beforeErrors = producer.errors;
    await s.platform.controlPlane.stopApiserver();
    const downAt = Date.now();
    probing = true;
    await sleep(5_000);
    // Topic changes need the metastore: refused with a clear 503.
    const create = await fetch(`http://${ips[1]}:${BROKER_PORT}/v1/topics`, {
      method: "POST",
      headers: { ...s.headers(), "content-type": "application/json" },
      body: JSON.stringify({ name: "during-outage", partitions: 1 }),
      signal: AbortSignal.timeout(60_000),
    });
    const createStatus = create.status;
    const createBody = (await create.json()) as { error?: string };
    await sleep(Math.max(0, DOWN_SECONDS * 1000 - (Date.now() - downAt)));
    const duringAcked = producer.acked.size - beforeAcked;
    const duringDelivered = consumer.delivered.size - beforeDelivered;
    const duringErrors = producer.errors - beforeErrors;
    probing = false;
    await s.platform.controlPlane.startApiserver();
    const upAt = Date.now();
    // Keep going for a minute after the API server is back: long enough for a
    // false "not ready" to turn into Down past the 30 s grace.
    await sleep(60_000);
    await producer.stop();
    const { report, undelivered } = await ledgerAndDeliveries(producer, consumer, {
      ip: ips[2]!,
      topic: TOPIC,
      partitions: PARTITIONS,
      headers: s.headers,
      readTimeoutMs: 120_000,
      deliverTimeoutMs: 120_000,
    });
    watching = false;
    await watch;
    await watchPods;
    await probe;
    // The cause, not only the outcome: the operator never decided Down (no
    // MemberDown Event, no "→ Down" transition in its log), whatever the pods'
    // Ready conditions said.
    const events = await getJson<{ items: Array<{ reason?: string; message?: string }> }>(
      s.platform.kubectl,
      ["-n", NS, "events"],
    );
    const memberDownEvents = (events?.items ?? []).filter((e) => e.reason === "MemberDown");
    const downTransitions = s.op.lines().filter((l) => typeof l.msg === "string" && l.msg.includes("→ Down"));
    const untrusted = s.op
      .lines()
      .filter((l) => l.msg === "pod readiness not trusted: no member is marked Down").length;

    console.log(
      `apiserver-down-e2e: API server down ${((upAt - downAt) / 1000).toFixed(0)} s: during it ${duringAcked} produced (202), ${duringErrors} produce errors, ${duringDelivered} consumed, readyz failures ${notReady}/${readyProbes}, topic create ${createStatus} "${createBody.error}"; members seen ${[...memberStates].sort().join(" ")}, Down ${downSeen.length}`,
    );
    console.log(
      `apiserver-down-e2e: pods seen Ready=False: ${[...podFlips].sort().join(" ") || "none"}; operator passes with readiness untrusted ${untrusted}; MemberDown Events ${memberDownEvents.length}; Down transitions logged ${downTransitions.length}`,
    );
    console.log(
      `apiserver-down-e2e: ${report.line}; consume ${consumer.summary()}; produce ${producer.summary()}`,
    );
    expect(duringAcked).toBeGreaterThan(100);
    expect(duringDelivered).toBeGreaterThan(50);
    expect(notReady).toBe(0);
    expect(createStatus).toBe(503);
    expect(memberDownEvents.map((e) => e.message)).toEqual([]);
    expect(downTransitions.map((l) => l.msg)).toEqual([]);
    expect(downSeen).toEqual([]);
    expect(report.lost.slice(0, 10)).toEqual([]);
    expect(report.duplicated.slice(0, 10)).toEqual([]);
    expect(undelivered.slice(0, 10)).toEqual([]);
  }, 900_000);
});
