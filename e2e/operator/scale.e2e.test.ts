// Scaling against a real API server (the local platform) with the real
// operator and brokers, under a continuous producer and a verifier that
// reads every record back (e2e/operator/load.ts), the cases that need a
// broker frozen (SIGSTOP) or a scale changed mid-decommission:
//   1. scaling back up while a member is being decommissioned cancels it;
//   2. an unsafe scale-down (a remaining broker not Ready) is refused with
//      Degraded=ScaleDownBlocked and a Warning, the StatefulSet unchanged;
//      it proceeds once the broker is back; replicas 0 is refused by the CRD;
//   3. #21 item 1: the leaving member's broker stops answering right after
//      its last partition moved and its pod is force-deleted: it is not
//      Removed on its stale WAL count, its PVC survives, the recreated pod
//      goes through the removal gate; zero lost.
// The plain 3 → 5 → 2 under load (rebalance onto the new members, three
// decommissions highest ordinal first, PVCs deleted per whenScaled: Delete,
// zero lost) runs on real kubelets: e2e/kind/operator.kind.test.ts.
// All on one cluster, in order. Numbers go to console.log ("scale-e2e:").
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import { expectEveryAckReadableOnce } from "./expect-ledger.ts";
import { waitFor } from "./harness.ts";
import { LoadProducer, PodSampler } from "./load.ts";
import {
  type ClusterView,
  condition as cond,
  memberOf,
  type SuiteCluster,
  startSuiteCluster,
} from "./suite.ts";

const log = stderrLog("scale-e2e");
const NS = "scaling";
const NAME = "sc";
const TOPIC = "events";
const PARTITIONS = 6;

let s: SuiteCluster;
const state = (c: ClusterView | undefined, id: string) => memberOf(c, id)?.state;

/** Every acked id readable exactly once, through each remaining broker. */
const verify = (producer: LoadProducer) =>
  expectEveryAckReadableOnce(producer, {
    pods: s.pods,
    topic: TOPIC,
    partitions: PARTITIONS,
    headers: s.headers,
    logPrefix: "scale-e2e",
    timeoutMs: 90_000,
    throughOthers: "all",
  });

// Part of `npm test` (also alone: npm run e2e:scale). The 3 → 5 → 2
// scenario, when it ran here, lost one acknowledged record in each of two
// runs before the move and removal-gate fixes: a data loss in these suites
// must fail CI, never be retried into green.
describe("scaling", () => {
  beforeAll(async () => {
    s = await startSuiteCluster({
      suite: "scale",
      log,
      namespace: NS,
      name: NAME,
      spec: {
        replicas: 3,
        image: "ghcr.io/narad/narad:0.1.0",
        rebalance: true,
        storage: { reclaimPolicy: { whenScaled: "Delete" } },
        rollout: { downGraceSeconds: 120 },
      },
      ready: { settled: 3, timeoutMs: 180_000 },
      // One copy: partition moves are for single-copy partitions (a 3-broker cluster defaults to 3).
      topic: { name: TOPIC, partitions: PARTITIONS, assigned: true, replicationFactor: 1 },
    });
  }, 600_000);

  afterAll(async () => {
    await s?.stop();
  });

  it("scaling back up during a decommission cancels it cleanly", async () => {
    await s.patchSpec({ replicas: 3 });
    await s.waitSettled(3, 180_000, "3 Active members");
    await s.waitOwnsPartitions(`${NAME}-2`, 120_000);
    const sampler = new PodSampler(() => 3, s.pods, log);
    const live = new LoadProducer({
      tag: "s2",
      topic: TOPIC,
      ips: () => sampler.readyIps,
      headers: s.headers,
    });
    await s.patchSpec({ replicas: 2 });
    // wait until moves are in flight (persisted), so the cancel has something to cancel
    await waitFor(
      async () => {
        const c = await s.cluster();
        return state(c, `${NAME}-2`) === "Decommissioning" && (c?.status?.scale?.moves ?? []).length > 0;
      },
      { timeoutMs: 60_000, what: `${NAME}-2 Decommissioning with moves in flight`, intervalMs: 100 },
    );
    const c = await s.cluster();
    console.log(
      `scale-e2e: cancelling with moves in flight: ${JSON.stringify(c?.status?.scale?.moves ?? [])}`,
    );
    await s.patchSpec({ replicas: 3 });
    await waitFor(
      async () =>
        (await s.eventText("DecommissionCancelled")).includes(`decommission of ${NAME}-2 cancelled`),
      {
        timeoutMs: 60_000,
        what: "DecommissionCancelled",
        intervalMs: 300,
      },
    );
    await s.waitSettled(3, 120_000, "back to 3 Active members");
    await live.stop();
    await sampler.stop();
    console.log(`scale-e2e: cancel: produce: ${live.summary()}`);
    expect(sampler.deleted.size).toBe(0);
    await verify(live);
  });

  it("an unsafe scale-down is refused (Degraded=ScaleDownBlocked, StatefulSet unchanged) and proceeds once safe", async () => {
    const bad = await s.platform.kubectl(
      [
        "-n",
        NS,
        "patch",
        "naradcluster",
        NAME,
        "--type=merge",
        "-p",
        JSON.stringify({ spec: { replicas: 0 } }),
      ],
      { allowFailure: true },
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/replicas/);

    const stopped = `${NAME}-1`;
    const pid = await s.brokerPid(stopped);
    process.kill(pid, "SIGSTOP");
    try {
      await waitFor(async () => (await s.pods()).find((p) => p.name === stopped)?.ready === false, {
        timeoutMs: 60_000,
        what: `${stopped} not Ready`,
        intervalMs: 300,
      });
      await s.patchSpec({ replicas: 2 });
      const blocked = await waitFor(
        async () => {
          const d = cond(await s.cluster(), "Degraded");
          return d?.reason === "ScaleDownBlocked" ? d : undefined;
        },
        { timeoutMs: 60_000, what: "Degraded=ScaleDownBlocked", intervalMs: 300 },
      );
      console.log(`scale-e2e: refused: ${blocked.message}`);
      expect(blocked.message).toContain(`${stopped}'s pod is not Ready`);
      await sleep(3_000);
      expect(await s.stsReplicas()).toBe(3);
      expect(state(await s.cluster(), `${NAME}-2`)).toBe("Active");
      expect(await s.eventText("ScaleDownBlocked")).toContain("scale-down to 2 refused");
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await s.waitSettled(2, 240_000, "the scale-down to finish once every remaining broker is back");
    expect(new Set(await s.owners())).toEqual(new Set([`${NAME}-0`, `${NAME}-1`]));
  });

  it("#21.1: a decommissioning member whose pod is force-deleted after its moves is not Removed until its new pod passes the gate; its PVC survives", async () => {
    await s.patchSpec({ replicas: 3 });
    await s.waitOwnsPartitions(`${NAME}-2`, 180_000, `${NAME}-2 back with partitions rebalanced onto it`);
    const leaving = `${NAME}-2`;
    const pvc = `data-${leaving}`;
    const pvcUid = async () =>
      (await s.core.listNamespacedPersistentVolumeClaim({ namespace: NS })).items.find(
        (p) => p.metadata?.name === pvc && !p.metadata?.deletionTimestamp,
      )?.metadata?.uid;
    const uid = await pvcUid();
    expect(uid).toBeDefined();
    const sampler = new PodSampler(() => 2, s.pods, log);
    const producer = new LoadProducer({
      tag: "s4",
      topic: TOPIC,
      ips: () => sampler.readyIps,
      headers: s.headers,
    });
    await sleep(2_000);
    const pid = await s.brokerPid(leaving);
    await s.patchSpec({ replicas: 2 });
    // The moment its last partition has moved: freeze it (so no pass can
    // confirm its WAL), then force-delete its pod, as a lost node would.
    let frozen = false;
    const t0 = Date.now();
    try {
      await waitFor(
        async () => {
          const c = await s.resource();
          const moved =
            c.status?.scale?.decommissioning === leaving &&
            (c.status.scale.moves ?? []).length === 0 &&
            !(await s.owners()).includes(leaving);
          if (!moved && state(c, leaving) !== "Removed") return undefined;
          process.kill(pid, "SIGSTOP");
          frozen = true;
          return state(c, leaving) ?? "gone";
        },
        { timeoutMs: 180_000, what: `${leaving}'s partitions to move away`, intervalMs: 50 },
      );
      const at = await s.cluster();
      console.log(
        `scale-e2e: ${leaving} frozen ${((Date.now() - t0) / 1000).toFixed(1)} s after the scale-down, member ${state(at, leaving)}`,
      );
      expect(state(at, leaving), "froze too late: the removal gate had already passed").toBe(
        "Decommissioning",
      );
      await s.platform.kubectl([
        "-n",
        NS,
        "delete",
        "pod",
        leaving,
        "--force",
        "--grace-period=0",
        "--wait=false",
      ]);
      const deletedAt = Date.now();
      // While its pod is missing or not yet answering: still Decommissioning, StatefulSet 3, PVC the same.
      const seen = new Set<string>();
      while (Date.now() - deletedAt < 8_000) {
        const c = await s.cluster();
        seen.add(cond(c, "Progressing")?.message ?? "");
        expect(state(c, leaving)).toBe("Decommissioning");
        expect(await s.stsReplicas()).toBe(3);
        expect(await pvcUid()).toBe(uid);
        await sleep(500);
      }
      console.log(
        `scale-e2e: while ${leaving} was away: ${[...seen].filter((m) => m.includes(leaving)).join(" | ")}`,
      );
    } finally {
      if (frozen)
        try {
          process.kill(pid, "SIGCONT");
        } catch {
          // the force-deleted pod's process is gone
        }
    }
    await s.waitSettled(2, 240_000, `${leaving} removed through its recreated pod`);
    console.log(
      `scale-e2e: force-deleted decommission finished in ${((Date.now() - t0) / 1000).toFixed(1)} s; produce: ${producer.summary()}`,
    );
    const removed = await s.eventText("MemberRemoved");
    expect(removed).toMatch(new RegExp(`${leaving} decommissioned \\(`));
    // neither the old stale-count shortcut nor the never-ran one took it
    expect(removed).not.toContain(`${leaving} decommissioned (no pod`);
    expect(removed).not.toContain(`${leaving} decommissioned (its broker never ran`);
    await producer.stop();
    await sampler.stop();
    await verify(producer);
  });
});
