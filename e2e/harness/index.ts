// Platform selection for e2e suites: one handle whether the cluster is the
// local platform (etcd + kube-apiserver + kcm + the process node agent) or a
// kind cluster.
//
//   E2E_PLATFORM=local (default)  start a local platform per suite in a temp dir,
//                                 or attach to E2E_KUBECONFIG when it is set
//                                 (e.g. from `npm run platform -- up`)
//   E2E_PLATFORM=kind             attach to `kind get kubeconfig --name ${KIND_CLUSTER:-narad-e2e}`;
//                                 images must already be loaded (e2e/kind/run.sh does it)
//
// NARAD_KEEP=1 keeps a local platform's dir (component and pod logs).
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import type { KubeConfig } from "@kubernetes/client-node";
import { type Log, stderrLog } from "../platform/log.ts";
import { isAlive, podProcessPid } from "../platform/node-agent/pids.ts";
import {
  attachPlatform,
  type CommandRunner,
  type PlatformClient,
  startPlatform,
  waitFor,
} from "../platform/platform.ts";

const execFileAsync = promisify(execFile);

export type PlatformName = "local" | "kind";

export interface E2EPlatform {
  name: PlatformName;
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  kubectl: CommandRunner;
  /** The kubectl binary, for long-running commands such as port-forward. */
  kubectlBinary: string;
  helm: CommandRunner;
  /** Server-side apply of a (multi-document) YAML or JSON string. */
  applyYaml(yaml: string): Promise<string>;
  waitFor: typeof waitFor;
  /** The pod's IP (suites dial pods directly: there is no Service routing on the local platform). */
  podAddress(namespace: string, pod: string): Promise<string>;
  /** SIGKILLs the main process of a pod's container (a crash, not a deletion) and returns once it is gone. */
  killPodProcess(namespace: string, pod: string, container: string): Promise<void>;
  /** Stops what this handle started (nothing when it attached to a cluster someone else runs). */
  stop(): Promise<void>;
}

export function platformName(env: NodeJS.ProcessEnv = process.env): PlatformName {
  const value = env["E2E_PLATFORM"] ?? "local";
  if (value !== "local" && value !== "kind")
    throw new Error(`E2E_PLATFORM must be local or kind, not ${value}`);
  return value;
}

export async function getPlatform(suiteName: string): Promise<E2EPlatform> {
  const log = stderrLog(suiteName);
  return platformName() === "kind" ? getKind(log) : getLocal(suiteName, log);
}

async function podIp(client: PlatformClient, namespace: string, pod: string): Promise<string> {
  const result = await client.kubectl(["-n", namespace, "get", "pod", pod, "-o", "jsonpath={.status.podIP}"]);
  const ip = result.stdout.trim();
  if (ip === "") throw new Error(`pod ${namespace}/${pod} has no IP yet`);
  return ip;
}

function handle(
  name: PlatformName,
  client: PlatformClient,
  killPodProcess: E2EPlatform["killPodProcess"],
  stop: () => Promise<void>,
): E2EPlatform {
  return {
    name,
    kubeconfigPath: client.kubeconfigPath,
    kubeConfig: client.kubeConfig,
    kubectl: client.kubectl,
    kubectlBinary: client.kubectlBinary,
    helm: client.helm,
    applyYaml: client.applyYaml,
    waitFor,
    podAddress: (namespace, pod) => podIp(client, namespace, pod),
    killPodProcess,
    stop,
  };
}

/** Local platform: pod processes are found through the node agent's pidfiles. */
function localKiller(nodeStateDir: string): E2EPlatform["killPodProcess"] {
  return async (namespace, pod, container) => {
    const pid = podProcessPid(nodeStateDir, namespace, pod, container);
    if (pid === null)
      throw new Error(`no running process for ${namespace}/${pod}/${container} in ${nodeStateDir}`);
    process.kill(pid, "SIGKILL");
    while (isAlive(pid)) await sleep(50);
  };
}

async function getLocal(suiteName: string, log: Log): Promise<E2EPlatform> {
  const keep = process.env["NARAD_KEEP"] === "1";
  const attached = process.env["E2E_KUBECONFIG"];
  if (attached !== undefined && attached !== "") {
    // `npm run platform -- up` keeps admin.kubeconfig beside the node agent's state dir `node/`.
    const nodeStateDir = process.env["E2E_NODE_STATE_DIR"] ?? join(dirname(attached), "node");
    const client = await attachPlatform(attached, log);
    log(`attached to ${attached}`);
    return handle("local", client, localKiller(nodeStateDir), async () => {});
  }
  const safe = suiteName.replace(/[^A-Za-z0-9_.-]/g, "-");
  const dir = await mkdtemp(join(tmpdir(), `narad-e2e-${safe}-`));
  const platform = await startPlatform({ dir, log, keep });
  return handle("local", platform, localKiller(join(platform.dir, "node")), async () => {
    await platform.stop({ keep });
    if (keep) log(`kept ${dir}`);
  });
}

/** kind: the kind CLI writes the kubeconfig; pod processes are killed from the node container. */
async function getKind(log: Log): Promise<E2EPlatform> {
  const cluster = process.env["KIND_CLUSTER"] ?? "narad-e2e";
  const { stdout } = await execFileAsync("kind", ["get", "kubeconfig", "--name", cluster]);
  const dir = await mkdtemp(join(tmpdir(), "narad-e2e-kind-"));
  const kubeconfigPath = join(dir, "kubeconfig");
  await writeFile(kubeconfigPath, stdout, { mode: 0o600 });
  const client = await attachPlatform(kubeconfigPath, log);
  log(`attached to kind cluster ${cluster}`);
  return handle("kind", client, kindKiller(client), async () => {
    await rm(dir, { recursive: true, force: true });
  });
}

// `kubectl exec … kill -9 1` does not work: the kernel drops SIGKILL sent to
// a PID namespace's init from inside that namespace, and the container's main
// process is that init. The kind node container is an ancestor namespace, so
// the process is killed from there, found through crictl.
const CRICTL_KILL = `set -eu
p=$(crictl pods -q --state ready --namespace "$1" --name "^$2\\$" | head -n1)
[ -n "$p" ] || { echo "no ready sandbox for $1/$2" >&2; exit 1; }
c=$(crictl ps -q --pod "$p" --name "^$3\\$" | head -n1)
[ -n "$c" ] || { echo "no running container $3 in $1/$2" >&2; exit 1; }
pid=$(crictl inspect --output go-template --template '{{.info.pid}}' "$c")
kill -9 "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done`;

function kindKiller(client: PlatformClient): E2EPlatform["killPodProcess"] {
  return async (namespace, pod, container) => {
    const node = (
      await client.kubectl(["-n", namespace, "get", "pod", pod, "-o", "jsonpath={.spec.nodeName}"])
    ).stdout.trim();
    if (node === "") throw new Error(`pod ${namespace}/${pod} is not on a node`);
    // kind names each node container after its Node.
    await execFileAsync("docker", ["exec", node, "sh", "-c", CRICTL_KILL, "sh", namespace, pod, container]);
  };
}
