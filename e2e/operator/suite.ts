// What an operator e2e suite about one NaradCluster starts from: the
// platform, one operator holding the lease, the cluster applied and Ready,
// the admin credentials, and (optionally) a topic. The suites that test one
// failure mode each (stuck replacement, stalled move) share it instead of
// repeating the setup; readTopic, metricSum and the ledger live in load.ts.
import type { CoreV1Api } from "@kubernetes/client-node";
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
  status?: {
    phase?: string;
    conditions?: Condition[];
    members?: Array<{ id: string; state: string }>;
    roll?: { podInFlight: string };
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
  op: OperatorProcess;
  /** Admin credentials of the cluster. */
  headers: HeaderSource;
  cluster(): Promise<ClusterView | undefined>;
  pods(): Promise<PodInfo[]>;
  /** kubectl -n <namespace> patch naradcluster <name> --type=merge with this spec. */
  patchSpec(spec: Record<string, unknown>): Promise<void>;
  stop(): Promise<void>;
}

export const condition = (c: ClusterView | undefined, type: string): Condition | undefined =>
  c?.status?.conditions?.find((x) => x.type === type);
export const memberOf = (c: ClusterView | undefined, id: string) =>
  c?.status?.members?.find((m) => m.id === id);

export async function startSuiteCluster(o: {
  suite: string;
  log: Log;
  namespace: string;
  name: string;
  spec: Record<string, unknown>;
  topic?: { name: string; partitions: number };
}): Promise<SuiteCluster> {
  const { logDir, platform, core } = await startSuitePlatform(o.suite, o.log, [o.namespace, LEASE_NS]);
  const op = await startOperator({ kubeconfig: platform.kubeconfigPath, identity: `${o.suite}-a`, logDir });
  await op.waitForLine((l) => l.msg === "leading: reconciling", "leadership");
  await platform.applyYaml(
    JSON.stringify({
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradCluster",
      metadata: { name: o.name, namespace: o.namespace },
      spec: o.spec,
    }),
  );
  const cluster = () => getJson<ClusterView>(platform.kubectl, ["-n", o.namespace, "naradcluster", o.name]);
  const pods = () => listBrokerPods(core, o.namespace, o.name);
  await waitFor(
    async () => {
      const c = await cluster();
      return condition(c, "Ready")?.status === "True" && c?.status?.phase === "Running";
    },
    { timeoutMs: 180_000, what: "the cluster to be Ready", intervalMs: 1000 },
  );
  const headers = await clusterCredentials(platform.kubectl, o.namespace, o.name);
  if (o.topic !== undefined) {
    const ip = (await pods())[0]!.ip!;
    const created = await fetch(`http://${ip}:${BROKER_PORT}/v1/topics`, {
      method: "POST",
      headers: { ...headers(), "content-type": "application/json" },
      body: JSON.stringify({ name: o.topic.name, partitions: o.topic.partitions }),
    });
    if (created.status !== 201) throw new Error(`creating topic ${o.topic.name}: HTTP ${created.status}`);
  }
  return {
    platform,
    core,
    logDir,
    op,
    headers,
    cluster,
    pods,
    patchSpec: async (spec) => {
      await platform.kubectl([
        "-n",
        o.namespace,
        "patch",
        "naradcluster",
        o.name,
        "--type=merge",
        "-p",
        JSON.stringify({ spec }),
      ]);
    },
    stop: async () => {
      await op.kill("SIGKILL");
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
