// A partition move whose destination stops mid-move, against a real API
// server and real brokers (issue #21 item 10). A scale-down 3 → 2 plans its
// moves in status before starting them; the moment one is planned, its
// destination's broker is stopped with SIGSTOP (a hung process: its
// connections stay open, nothing answers). Then:
//   - past spec.moves.stallTimeoutSeconds the operator aborts the move: the
//     cluster is Degraded, reason MoveStuck, naming the partition; a Warning
//     Event MoveAborted; narad_operator_move_aborts_total counts it;
//   - the cancel cannot reach the stopped broker, so it is repeated every
//     pass (status.scale.moves[].aborting) while nothing else is planned for
//     that partition;
//   - SIGCONT: the broker wakes up with the operator's earlier requests in
//     its socket buffers (it may start the move now, a zombie); the repeated
//     cancel ends it, the partition waits out its backoff and is moved to
//     the other member; the decommission finishes;
//   - under continuous produce throughout: every acknowledged record is
//     readable exactly once.
// Numbers are printed with "move-stall-e2e:".
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import { waitFor } from "./harness.ts";
import { checkLedger, LoadProducer, PodSampler } from "./load.ts";
import { type ClusterView, condition, eventsOf, type SuiteCluster, startSuiteCluster } from "./suite.ts";

const log = stderrLog("move-stall-e2e");
const NS = "movestall";
const NAME = "ms";
const TOPIC = "events";
const PARTITIONS = 6;
const STALL_SECONDS = 10;
const BACKOFF_SECONDS = 5;

let s: SuiteCluster;

async function brokerPid(pod: string): Promise<number> {
  return Number(
    (await readFile(join(s.platform.dir, "node", "pods", `${NS}_${pod}`, "narad.pid"), "utf8")).trim(),
  );
}

beforeAll(async () => {
  s = await startSuiteCluster({
    suite: "move-stall",
    log,
    namespace: NS,
    name: NAME,
    spec: {
      replicas: 3,
      storage: { reclaimPolicy: { whenScaled: "Delete" } },
      // The stopped broker must not go Down meanwhile: this is about the move.
      rollout: { downGraceSeconds: 300 },
      moves: { stallTimeoutSeconds: STALL_SECONDS, retryBackoffSeconds: BACKOFF_SECONDS },
      security: { auth: { enabled: true } },
    },
    // One copy: this suite is about single-copy partitions (a 3-broker cluster defaults to 3).
    topic: { name: TOPIC, partitions: PARTITIONS, replicationFactor: 1 },
  });
}, 600_000);

afterAll(async () => {
  await s?.stop();
});

describe("a partition move whose destination is stopped", () => {
  it("is aborted past stallTimeoutSeconds (Degraded MoveStuck, Event, metric), cancelled until confirmed, retried elsewhere; nothing lost", async () => {
    const custom = s.platform.kubeConfig.makeApiClient(CustomObjectsApi);
    // Straight from the API server, not kubectl: the window between a move
    // being planned and started is about a second.
    const fast = async () =>
      (await custom.getNamespacedCustomObject({
        group: "narad.dev",
        version: "v1alpha1",
        namespace: NS,
        plural: "naradclusters",
        name: NAME,
      })) as ClusterView;
    const sampler = new PodSampler(() => 3, s.pods, log);
    const producer = new LoadProducer({
      tag: "m1",
      topic: TOPIC,
      ips: () => sampler.readyIps,
      headers: s.headers,
    });
    await sleep(2_000);
    const t0 = Date.now();
    await s.patchSpec({ replicas: 2 });

    let stoppedPid: number | undefined;
    let tAborted = 0;
    let stuck: { topic: string; partition: number; to: string } | undefined;
    try {
      stuck = await waitFor(
        async () => {
          const m = (await fast()).status?.scale?.moves?.[0];
          if (m === undefined) return undefined;
          stoppedPid = await brokerPid(m.to);
          process.kill(stoppedPid, "SIGSTOP");
          return { topic: m.topic, partition: m.partition, to: m.to };
        },
        { timeoutMs: 120_000, what: "a move to be planned", intervalMs: 50 },
      );
      const key = `${stuck.topic}/${stuck.partition}`;
      log(`stopped ${stuck.to} (pid ${stoppedPid}) as the move of ${key} was planned`);

      const degraded = await waitFor(
        async () => {
          const d = condition(await s.cluster(), "Degraded");
          return d?.status === "True" && d.reason === "MoveStuck" ? d : undefined;
        },
        { timeoutMs: 120_000, what: "Degraded=True reason MoveStuck", intervalMs: 500 },
      );
      tAborted = Date.now();
      log(`Degraded after ${((tAborted - t0) / 1000).toFixed(1)} s: ${degraded.message}`);
      expect(degraded.message).toContain(`move of ${key} from ${NAME}-2 to ${stuck.to} aborted`);
      const aborted = await eventsOf(s.platform, NS, "MoveAborted");
      expect(aborted[0]?.type).toBe("Warning");
      expect(aborted[0]?.message).toContain(key);
      const metrics = await (await fetch(`${s.op.metricsUrl}/metrics`)).text();
      expect(metrics).toMatch(
        /narad_operator_move_aborts_total\{[^}]*cause="(unreachable|no_progress)"[^}]*\} [1-9]/,
      );

      // Still stopped: the abort stays, its cancel repeated; the partition is not planned elsewhere.
      const held = await waitFor(
        async () => {
          const m = (await s.cluster())?.status?.scale?.moves?.find(
            (x) => `${x.topic}/${x.partition}` === key,
          );
          return (m?.aborting?.attempts ?? 0) > 1 ? m : undefined;
        },
        { timeoutMs: 60_000, what: "the cancel to be repeated", intervalMs: 500 },
      );
      expect(held.to).toBe(stuck.to);
    } finally {
      if (stoppedPid !== undefined) process.kill(stoppedPid, "SIGCONT");
    }
    const tResumed = Date.now();

    // The decommission finishes: StatefulSet at 2, the partition moved to the other member.
    const done = await waitFor(
      async () => {
        const c = await s.cluster();
        const sts = await s.platform.kubectl([
          "-n",
          NS,
          "get",
          "statefulset",
          NAME,
          "-o",
          "jsonpath={.spec.replicas}",
        ]);
        const ok =
          sts.stdout.trim() === "2" &&
          c?.status?.scale === undefined &&
          condition(c, "Degraded")?.status === "False" &&
          condition(c, "Ready")?.status === "True";
        return ok ? c : undefined;
      },
      { timeoutMs: 240_000, what: "the decommission to finish after the abort", intervalMs: 1000 },
    );
    const tDone = Date.now();
    expect(done.status?.members?.map((m) => m.id).sort()).toEqual([`${NAME}-0`, `${NAME}-1`]);
    const cancelled = await eventsOf(s.platform, NS, "MoveCancelled");
    expect(cancelled.map((e) => e.message).join("\n")).toMatch(/moved again after/);
    const topic = JSON.parse(
      (await s.platform.kubectl(["-n", NS, "get", "naradtopic", TOPIC, "-o", "json"])).stdout,
    ) as { status?: { assignments?: Array<{ partition: number; owner: string }> } };
    const owner = topic.status?.assignments?.find((a) => a.partition === stuck?.partition)?.owner;
    expect([`${NAME}-0`, `${NAME}-1`]).toContain(owner);

    await sleep(1_000);
    await producer.stop();
    await sampler.stop();
    const ip = (await s.pods()).find((p) => p.ready && p.ip)?.ip as string;
    const report = await checkLedger(producer, {
      ip,
      topic: TOPIC,
      partitions: PARTITIONS,
      headers: s.headers,
      timeoutMs: 90_000,
    });
    console.log(
      `move-stall-e2e: destination stopped as the move was planned; Degraded (MoveStuck) ${((tAborted - t0) / 1000).toFixed(1)} s after the scale-down (bound ${STALL_SECONDS} s); SIGCONT after ${((tResumed - t0) / 1000).toFixed(1)} s; then the decommission finished in ${((tDone - tResumed) / 1000).toFixed(1)} s (partition now on ${owner}); produce ${producer.summary()}; ${report.line}`,
    );
    expect(report.lost.slice(0, 10)).toEqual([]);
    expect(report.duplicated.slice(0, 10)).toEqual([]);
    expect(report.unknown.slice(0, 10)).toEqual([]);
  }, 600_000);
});
