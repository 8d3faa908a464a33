// What an operator e2e suite about one NaradCluster starts from: the
// platform, one operator holding the lease, the cluster applied and Ready,
// the admin credentials, and (optionally) a topic; and the reads those suites
// make of it (StatefulSet size, partition owners, events, a broker's pid,
// "settled at n"). Every suite on one cluster (roll, scale, decommission,
// stuck replacement, stalled move) starts from it instead of repeating the
// setup; readTopic, metricSum and the ledger live in load.ts, the ledger's
// assertions in expect-ledger.ts.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { type CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import type { NaradCluster } from "../../packages/api/src/v1alpha1/types.ts";
import type { Log } from "../platform/log.ts";
import type { Platform } from "../platform/platform.ts";
import { clusterCredentials } from "./credentials.ts";
import { getJson, type OperatorProcess, startOperator, startSuitePlatform, waitFor } from "./harness.ts";
import { BROKER_PORT, type HeaderSource, listBrokerPods, type PodInfo } from "./load.ts";

export const LEASE_NS = "narad-system";

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

/** The part of a NaradCluster these suites read. */
export interface ClusterView {
  metadata?: { generation?: number };
  spec?: { replicas?: number };
  status?: {
    phase?: string;
    observedGeneration?: number;
    updateRevision?: string;
    membershipEpoch?: number;
    conditions?: Condition[];
    members?: Array<{ id: string; state: string }>;
    roll?: { podInFlight: string; startedAt?: string; reason?: string; podReadyAtStart?: boolean };
    scale?: {
      decommissioning?: string;
      moves?: Array<{
        topic: string;
        partition: number;
        from: string;
        to: string;
        state: string;
        aborting?: { reason: string; attempts: number };
      }>;
      moveRetries?: Array<{ topic: string; partition: number; attempts: number; avoid: string }>;
    };
  };
}

export interface SuiteCluster {
  platform: Platform;
  core: CoreV1Api;
  logDir: string;
  /** The first operator, the one that took the lease before the cluster was applied. */
  op: OperatorProcess;
  /** Every operator started for this suite, the first included; stop() kills them all. */
  operators: OperatorProcess[];
  /** Starts one more operator (not waiting for it to lead), killed by stop(). */
  startOperator(identity: string): Promise<OperatorProcess>;
  /** Admin credentials of the cluster. */
  headers: HeaderSource;
  cluster(): Promise<ClusterView | undefined>;
  /** The NaradCluster through the API client: faster than kubectl, for tight polls. */
  resource(): Promise<NaradCluster>;
  pods(): Promise<PodInfo[]>;
  /** kubectl -n <namespace> patch naradcluster <name> --type=merge with this spec. */
  patchSpec(spec: Record<string, unknown>): Promise<void>;
  /** spec.replicas of the cluster's StatefulSet. */
  stsReplicas(): Promise<number | undefined>;
  /** The owner of every assigned partition of every NaradTopic of the namespace. */
  owners(): Promise<string[]>;
  /** The pid of a broker pod's process on the local platform (to SIGSTOP it). */
  brokerPid(pod: string): Promise<number>;
  /** `kubectl get events --field-selector reason=<reason>` of the namespace, as printed. */
  eventText(reason: string): Promise<string>;
  /**
   * Waits until the cluster has settled at n brokers: StatefulSet n, exactly
   * members 0..n-1 all Active, no scale work left, n Ready pods, Ready=True.
   */
  waitSettled(n: number, timeoutMs: number, what: string): Promise<ClusterView>;
  /** Waits until `member` owns at least one partition and no scale work is left (the rebalance onto it done). */
  waitOwnsPartitions(member: string, timeoutMs: number, what?: string): Promise<void>;
  stop(): Promise<void>;
}

export const condition = (c: ClusterView | undefined, type: string): Condition | undefined =>
  c?.status?.conditions?.find((x) => x.type === type);
export const memberOf = (c: ClusterView | undefined, id: string) =>
  c?.status?.members?.find((m) => m.id === id);

export interface SuiteClusterOptions {
  suite: string;
  log: Log;
  namespace: string;
  name: string;
  spec: Record<string, unknown>;
  /** The first operator's identity (its lease holder name); `<suite>-a` unless given. */
  operatorIdentity?: string;
  /** How long the first operator may take to lead (a loaded machine can need minutes). */
  leadershipTimeoutMs?: number;
  /** Objects (JSON) applied after the namespaces exist and before the operator starts, e.g. a users Secret. */
  applyFirst?: object[];
  /**
   * What "the cluster is up" means before the suite starts: by default
   * Ready=True and phase Running within 180 s; with `settled`, waitSettled at
   * that many brokers within `timeoutMs`.
   */
  ready?: { settled: number; timeoutMs: number };
  /** The suite's own credentials (its own users Secret); the operator-generated admin's otherwise. */
  headers?: HeaderSource;
  /**
   * A topic created through the first broker; with `assigned`, also waits up
   * to 60 s for every partition to have an owner. With `replicationFactor`
   * it is applied as a NaradTopic with that factor instead (suites about
   * single-copy behaviour pin 1: a cluster of 3 brokers defaults to 3), and
   * every broker is waited for to know it; with `known`, so is a topic
   * created through the first broker.
   */
  topic?: {
    name: string;
    partitions: number;
    assigned?: boolean;
    replicationFactor?: number;
    known?: boolean;
  };
}

/**
 * The platform with the suite's namespaces, one operator holding the lease,
 * the NaradCluster applied and up, its credentials, and optionally a topic.
 */
export async function startSuiteCluster(o: SuiteClusterOptions): Promise<SuiteCluster> {
  const { logDir, platform, core } = await startSuitePlatform(o.suite, o.log, [o.namespace, LEASE_NS]);
  for (const obj of o.applyFirst ?? []) await platform.applyYaml(JSON.stringify(obj));
  const operators: OperatorProcess[] = [];
  const startOne = async (identity: string): Promise<OperatorProcess> => {
    const op = await startOperator({ kubeconfig: platform.kubeconfigPath, identity, logDir });
    operators.push(op);
    return op;
  };
  const op = await startOne(o.operatorIdentity ?? `${o.suite}-a`);
  await op.waitForLine((l) => l.msg === "leading: reconciling", "leadership", o.leadershipTimeoutMs);
  await platform.applyYaml(
    JSON.stringify({
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradCluster",
      metadata: { name: o.name, namespace: o.namespace },
      spec: o.spec,
    }),
  );
  const ns = o.namespace;
  const cluster = () => getJson<ClusterView>(platform.kubectl, ["-n", ns, "naradcluster", o.name]);
  const pods = () => listBrokerPods(core, ns, o.name);
  const stsReplicas = async () =>
    (await getJson<{ spec?: { replicas?: number } }>(platform.kubectl, ["-n", ns, "statefulset", o.name]))
      ?.spec?.replicas;
  const owners = async () => {
    const list = await getJson<{ items: Array<{ status?: { assignments?: Array<{ owner: string }> } }> }>(
      platform.kubectl,
      ["-n", ns, "naradtopics"],
    );
    return (list?.items ?? []).flatMap((t) => (t.status?.assignments ?? []).map((a) => a.owner));
  };
  const waitSettled = (n: number, timeoutMs: number, what: string): Promise<ClusterView> =>
    waitFor(
      async () => {
        const c = await cluster();
        const list = await pods();
        const ids = (c?.status?.members ?? []).map((m) => m.id).sort();
        const want = Array.from({ length: n }, (_, i) => `${o.name}-${i}`).sort();
        const ok =
          (await stsReplicas()) === n &&
          JSON.stringify(ids) === JSON.stringify(want) &&
          (c?.status?.members ?? []).every((m) => m.state === "Active") &&
          c?.status?.scale === undefined &&
          list.length === n &&
          list.every((p) => p.ready) &&
          condition(c, "Ready")?.status === "True";
        return ok ? c : undefined;
      },
      { timeoutMs, what, intervalMs: 500 },
    );
  if (o.ready === undefined)
    await waitFor(
      async () => {
        const c = await cluster();
        return condition(c, "Ready")?.status === "True" && c?.status?.phase === "Running";
      },
      { timeoutMs: 180_000, what: "the cluster to be Ready", intervalMs: 1000 },
    );
  else await waitSettled(o.ready.settled, o.ready.timeoutMs, `the cluster to be Ready at ${o.ready.settled}`);
  const headers = o.headers ?? (await clusterCredentials(platform.kubectl, ns, o.name));
  if (o.topic !== undefined) {
    const topic = o.topic;
    const waitTopicKnown = () =>
      waitFor(
        async () => {
          for (const p of await pods()) {
            const r = await fetch(
              `http://${p.ip}:${BROKER_PORT}/v1/topics/${encodeURIComponent(topic.name)}`,
              {
                headers: headers(),
                signal: AbortSignal.timeout(5_000),
              },
            ).catch(() => undefined);
            await r?.body?.cancel();
            if (r?.status !== 200) return false;
          }
          return true;
        },
        { timeoutMs: 60_000, what: "every broker to know the topic", intervalMs: 250 },
      );
    if (topic.replicationFactor !== undefined) {
      await platform.applyYaml(
        JSON.stringify({
          apiVersion: "narad.dev/v1alpha1",
          kind: "NaradTopic",
          metadata: { name: topic.name, namespace: ns },
          spec: { cluster: o.name, partitions: topic.partitions, replicationFactor: topic.replicationFactor },
        }),
      );
      // Like POST /v1/topics, which answers once the operator has assigned
      // it; and every broker knows it before the suite produces.
      await waitFor(async () => (await owners()).length === topic.partitions, {
        timeoutMs: 60_000,
        what: "the topic's partitions to be assigned",
        intervalMs: 250,
      });
      await waitTopicKnown();
    } else {
      const ip = (await pods())[0]!.ip!;
      const created = await fetch(`http://${ip}:${BROKER_PORT}/v1/topics`, {
        method: "POST",
        headers: { ...headers(), "content-type": "application/json" },
        body: JSON.stringify({ name: topic.name, partitions: topic.partitions }),
      });
      if (created.status !== 201) throw new Error(`creating topic ${topic.name}: HTTP ${created.status}`);
      if (topic.known === true) await waitTopicKnown();
    }
    if (topic.assigned === true)
      await waitFor(async () => (await owners()).length === topic.partitions, {
        timeoutMs: 60_000,
        what: "the topic's partitions to be assigned",
        intervalMs: 500,
      });
  }
  const custom = platform.kubeConfig.makeApiClient(CustomObjectsApi);
  return {
    platform,
    core,
    logDir,
    op,
    operators,
    startOperator: startOne,
    headers,
    cluster,
    resource: async () =>
      (await custom.getNamespacedCustomObject({
        group: "narad.dev",
        version: "v1alpha1",
        namespace: ns,
        plural: "naradclusters",
        name: o.name,
      })) as NaradCluster,
    pods,
    patchSpec: async (spec) => {
      await platform.kubectl([
        "-n",
        ns,
        "patch",
        "naradcluster",
        o.name,
        "--type=merge",
        "-p",
        JSON.stringify({ spec }),
      ]);
    },
    stsReplicas,
    owners,
    brokerPid: async (pod) =>
      Number(
        (await readFile(join(platform.dir, "node", "pods", `${ns}_${pod}`, "narad.pid"), "utf8")).trim(),
      ),
    eventText: async (reason) =>
      (await platform.kubectl(["-n", ns, "get", "events", "--field-selector", `reason=${reason}`])).stdout,
    waitSettled,
    waitOwnsPartitions: async (member, timeoutMs, what = `partitions rebalanced onto ${member}`) => {
      await waitFor(
        async () => (await owners()).includes(member) && (await cluster())?.status?.scale === undefined,
        { timeoutMs, what, intervalMs: 500 },
      );
    },
    stop: async () => {
      for (const x of operators) await x.kill("SIGKILL");
      const keep = process.env["NARAD_KEEP"] === "1";
      if (keep) o.log(`kept ${logDir} (operator logs, platform state)`);
      await platform.stop({ keep });
    },
  };
}

/** Events of the namespace with this reason (type and message). */
export async function eventsOf(
  platform: Platform,
  namespace: string,
  reason: string,
): Promise<Array<{ type: string; message: string }>> {
  const ev = await getJson<{ items: Array<{ type: string; reason: string; message: string }> }>(
    platform.kubectl,
    ["-n", namespace, "events"],
  );
  return (ev?.items ?? []).filter((e) => e.reason === reason);
}
