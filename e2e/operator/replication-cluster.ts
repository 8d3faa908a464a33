// The replicated cluster the replication suites start from (local platform,
// real operator, real brokers): startSuiteCluster with a NaradTopic at factor
// 3, plus the reads those suites make of it: the topic's records, member
// volume ids, the Ready brokers' IPs (polled, for producers and consumers),
// a broker's process and data dir, "every partition fully in sync".
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { NaradTopic, PartitionAssignment } from "../../packages/api/src/v1alpha1/types.ts";
import type { Log } from "../platform/log.ts";
import { podProcessPid } from "../platform/node-agent/pids.ts";
import { getJson, waitFor } from "./harness.ts";
import { brokerDataDir } from "./replication-ledger.ts";
import { type SuiteCluster, startSuiteCluster } from "./suite.ts";

export interface ReplicatedCluster {
  s: SuiteCluster;
  ns: string;
  name: string;
  topic: string;
  partitions: number;
  /** The topic's NaradTopic as the API server has it now. */
  naradTopic(): Promise<NaradTopic | undefined>;
  records(): Promise<PartitionAssignment[]>;
  volumeIds(): Promise<Map<string, string | undefined>>;
  /** The Ready brokers' IPs as last polled (every 300 ms). */
  readyIps(): string[];
  /** pod name → IP as last polled. */
  ipOf(pod: string): string | undefined;
  /** The live pid of a broker pod's process, or null. */
  pid(pod: string): number | null;
  dataDir(pod: string): Promise<string>;
  /**
   * kill -9 of the broker and its volume's contents deleted, as one step: the
   * process is stopped first so nothing more is written, then the data dir
   * goes, then SIGKILL (the node agent restarts it on the empty volume).
   */
  killAndWipe(pod: string): Promise<void>;
  /** kill -9 of the broker now and of every process the node agent restarts for it, until stopped. */
  crashLoop(pod: string): { kills: number[]; stop(): Promise<void> };
  /** Every partition: a leader, ISR = every replica on its current volume; 0 under-replicated. */
  fullyInSync(): Promise<boolean>;
  waitFullyInSync(timeoutMs: number, what: string): Promise<void>;
  /** The JSON lines of a broker pod's log (all its restarts) whose msg is `msg`. */
  brokerLogLines(pod: string, msg: string): Promise<Array<Record<string, unknown>>>;
  stop(): Promise<void>;
}

export async function startReplicatedCluster(o: {
  suite: string;
  log: Log;
  namespace: string;
  name: string;
  topic: string;
  partitions: number;
  brokers?: number;
  downGraceSeconds: number;
}): Promise<ReplicatedCluster> {
  const brokers = o.brokers ?? 3;
  const s = await startSuiteCluster({
    suite: o.suite,
    log: o.log,
    namespace: o.namespace,
    name: o.name,
    spec: { replicas: brokers, rollout: { downGraceSeconds: o.downGraceSeconds } },
    ready: { settled: brokers, timeoutMs: 300_000 },
    topic: { name: o.topic, partitions: o.partitions, replicationFactor: 3 },
  });
  const ns = o.namespace;
  const naradTopic = () => getJson<NaradTopic>(s.platform.kubectl, ["-n", ns, "naradtopic", o.topic]);
  const records = async () => (await naradTopic())?.status?.assignments ?? [];
  const volumeIds = async () =>
    new Map(((await s.resource()).status?.members ?? []).map((m) => [m.id, m.volumeId]));
  let ready: string[] = [];
  const ips = new Map<string, string>();
  let polling = true;
  const poll = (async () => {
    while (polling) {
      try {
        const list = await s.pods();
        ready = list.filter((p) => p.ready && p.ip !== undefined).map((p) => p.ip as string);
        for (const p of list) if (p.ip !== undefined) ips.set(p.name, p.ip);
      } catch {
        // keep the last list
      }
      await sleep(300);
    }
  })();
  while (ready.length < brokers) await sleep(100);
  const dirs = new Map<string, string>();
  const dataDir = async (pod: string) => {
    let d = dirs.get(pod);
    if (d === undefined) {
      d = await brokerDataDir(s.core, ns, pod);
      dirs.set(pod, d);
    }
    return d;
  };
  const pid = (pod: string) => podProcessPid(join(s.platform.dir, "node"), ns, pod, "narad");
  const fullyInSync = async () => {
    const t = await naradTopic();
    const vols = await volumeIds();
    const recs = t?.status?.assignments ?? [];
    return (
      recs.length === o.partitions &&
      t?.status?.underReplicatedPartitions === 0 &&
      recs.every(
        (a) =>
          a.leader !== null &&
          a.leader !== undefined &&
          (a.replicas ?? []).length === 3 &&
          (a.replicas ?? []).every((m) => a.isr?.some((e) => e.member === m && e.volumeId === vols.get(m))),
      )
    );
  };
  const killAndWipe = async (pod: string) => {
    const dir = await dataDir(pod);
    const p = pid(pod);
    if (p === null) throw new Error(`${pod} has no process`);
    process.kill(p, "SIGSTOP");
    await rm(dir, { recursive: true, force: true });
    process.kill(p, "SIGKILL");
  };
  return {
    s,
    ns,
    name: o.name,
    topic: o.topic,
    partitions: o.partitions,
    naradTopic,
    records,
    volumeIds,
    readyIps: () => ready,
    ipOf: (pod) => ips.get(pod),
    pid,
    dataDir,
    killAndWipe,
    crashLoop: (pod) => {
      const kills: number[] = [];
      let running = true;
      const loop = (async () => {
        while (running) {
          const p = pid(pod);
          if (p !== null) {
            try {
              process.kill(p, "SIGKILL");
              kills.push(Date.now());
            } catch {
              // exited meanwhile
            }
          }
          await sleep(25);
        }
      })();
      return {
        kills,
        stop: async () => {
          running = false;
          await loop;
        },
      };
    },
    fullyInSync,
    brokerLogLines: async (pod, msg) => {
      const text = await readFile(
        join(s.platform.dir, "node", "pods", `${ns}_${pod}`, "narad.log"),
        "utf8",
      ).catch(() => "");
      return text
        .split("\n")
        .filter((l) => l.includes(msg))
        .flatMap((l) => {
          try {
            const j = JSON.parse(l) as Record<string, unknown>;
            return j["msg"] === msg ? [j] : [];
          } catch {
            return []; // not JSON
          }
        });
    },
    waitFullyInSync: async (timeoutMs, what) => {
      await waitFor(fullyInSync, { timeoutMs, what, intervalMs: 250 });
    },
    stop: async () => {
      polling = false;
      await poll;
      await s.stop();
    },
  };
}
