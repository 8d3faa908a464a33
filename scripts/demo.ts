// `npm run demo`: a 3-broker Narad cluster on the embedded local Kubernetes
// platform. Starts the platform (the first run builds etcd and Kubernetes
// from source, ~20 min), applies crds/, installs the operator from
// charts/narad-operator (it runs as a pod under the node agent), applies
// examples/naradcluster.yaml, waits for 3 Ready brokers and prints their
// addresses and curl lines. Ctrl-C (SIGINT/SIGTERM) stops everything and
// removes the platform dir. Progress goes to stderr, the result to stdout.
//
// NARAD_KEEP=1 keeps the platform dir (component and pod logs) on exit.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { stderrLog } from "../e2e/platform/log.ts";
import { type Platform, startPlatform, waitFor } from "../e2e/platform/platform.ts";

const REPO = resolve(import.meta.dirname, "..");
const NAMESPACE = "default";
const OPERATOR_NAMESPACE = "narad-system";
const CLUSTER = "demo";
const REPLICAS = 3;
const BROKER_IMAGE = "ghcr.io/narad/narad:0.1.0";
const HTTP_PORT = 7942;
const READY_TIMEOUT_MS = 300_000;

const log = stderrLog("demo");
const keep = process.env["NARAD_KEEP"] === "1";

interface PodList {
  items: Array<{
    metadata: { name: string };
    status?: { podIP?: string; conditions?: Array<{ type: string; status: string }> };
  }>;
}

let platform: Platform | undefined;
let stopping: Promise<void> | undefined;
// Holds the event loop open while the demo waits for Ctrl-C.
const keepAlive = setInterval(() => {}, 1 << 30);

function shutdown(signal: string): Promise<void> {
  stopping ??= (async () => {
    log(`${signal}: stopping the brokers, the operator and the platform`);
    clearInterval(keepAlive);
    try {
      await platform?.stop({ keep });
      if (platform !== undefined) log(keep ? `kept ${platform.dir}` : `removed ${platform.dir}`);
    } catch (error) {
      log(`stop failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exitCode = 1;
    }
  })();
  return stopping;
}

async function readyBrokers(p: Platform): Promise<PodList["items"] | undefined> {
  const out = await p.kubectl([
    "-n",
    NAMESPACE,
    "get",
    "pods",
    "-l",
    `narad.dev/cluster=${CLUSTER}`,
    "-o",
    "json",
  ]);
  const pods = (JSON.parse(out.stdout) as PodList).items.filter(
    (pod) =>
      pod.status?.podIP !== undefined &&
      pod.status.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true,
  );
  return pods.length === REPLICAS
    ? pods.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
    : undefined;
}

async function clusterReady(p: Platform): Promise<boolean> {
  const out = await p.kubectl([
    "-n",
    NAMESPACE,
    "get",
    "naradcluster",
    CLUSTER,
    "-o",
    'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
  ]);
  return out.stdout.trim() === "True";
}

/**
 * Whether the operator starts brokers on the shared kubernetes metastore. Until
 * it does, each broker is a single node with its own file metastore and a
 * topic exists only on the broker that created it.
 */
async function sharedMetastore(p: Platform): Promise<boolean> {
  const sts = await p.kubectl(["-n", NAMESPACE, "get", "statefulset", CLUSTER, "-o", "json"]);
  const cm = await p.kubectl(["-n", NAMESPACE, "get", "configmap", `${CLUSTER}-config`, "-o", "json"], {
    allowFailure: true,
  });
  const text = `${sts.stdout}\n${cm.stdout}`;
  return /metastore[=" :\\]+kubernetes|NARAD_METASTORE[^}]*kubernetes/.test(text);
}

/**
 * curl's `-u user:password` for the cluster's operator-created users Secret
 * (auth is on by default in cluster mode), or "" when the cluster has none.
 */
async function curlCredentials(p: Platform): Promise<string> {
  const secret = await p.kubectl(["-n", NAMESPACE, "get", "secret", `${CLUSTER}-users`, "-o", "json"], {
    allowFailure: true,
  });
  if (secret.code !== 0) return "";
  const data = (JSON.parse(secret.stdout) as { data?: Record<string, string> }).data ?? {};
  const decode = (v: string | undefined) =>
    v === undefined ? undefined : Buffer.from(v, "base64").toString();
  const user = decode(data.username);
  const password = decode(data.password);
  return user !== undefined && password !== undefined ? ` -u '${user}:${password}'` : "";
}

async function main(): Promise<void> {
  const started = Date.now();
  const dir = await mkdtemp(join(tmpdir(), "narad-demo-"));
  log(`starting the local platform in ${dir} (a first run builds Kubernetes from source: ~20 min)`);
  const p = await startPlatform({ dir, log, keep });
  if (stopping !== undefined) {
    // A signal arrived while the platform was starting.
    await p.stop({ keep });
    return;
  }
  platform = p;

  log("applying crds/");
  await p.kubectl(["apply", "--server-side", "-f", join(REPO, "crds")]);
  await p.kubectl([
    "wait",
    "--for=condition=Established",
    "crd/naradclusters.narad.dev",
    "crd/naradtopics.narad.dev",
  ]);

  log("installing the operator from charts/narad-operator (a Deployment run by the node agent)");
  await p.helm(
    [
      "install",
      "narad-operator",
      join(REPO, "charts/narad-operator"),
      "-n",
      OPERATOR_NAMESPACE,
      "--create-namespace",
      "--set",
      "replicas=1",
      "--set",
      `brokerImage=${BROKER_IMAGE}`,
      "--wait",
      "--timeout",
      "180s",
    ],
    { timeoutMs: 240_000 },
  );

  log("applying examples/naradcluster.yaml");
  await p.kubectl([
    "-n",
    NAMESPACE,
    "apply",
    "--server-side",
    "-f",
    join(REPO, "examples/naradcluster.yaml"),
  ]);
  const pods = await waitFor(async () => ((await clusterReady(p)) ? readyBrokers(p) : undefined), {
    timeoutMs: READY_TIMEOUT_MS,
    what: `NaradCluster ${CLUSTER} Ready with ${REPLICAS} Ready broker pods`,
    intervalMs: 1000,
  });
  log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const urls = pods.map((pod) => `http://${pod.status?.podIP}:${HTTP_PORT}`);
  const shared = await sharedMetastore(p);
  const u = await curlCredentials(p);
  const [first = "", second = first, third = first] = shared ? urls : [urls[0], urls[0], urls[0]];
  const how = shared
    ? "Try it (any broker accepts any request; reads are routed to the partition's owner):"
    : [
        "Try it. NOTE: the operator does not start brokers with --metastore=kubernetes yet, so each broker",
        "is a standalone node (file metastore): a topic exists only on the broker that created it.",
      ].join("\n");
  const lines = [
    "",
    `NaradCluster ${NAMESPACE}/${CLUSTER}: ${REPLICAS} brokers (operator: ${OPERATOR_NAMESPACE}/narad-operator)`,
    ...pods.map((pod, i) => `  ${pod.metadata.name}  ${urls[i]}`),
    "",
    how,
    `  curl -sS${u} -X POST ${first}/v1/topics -H 'content-type: application/json' -d '{"name":"orders","partitions":3}'`,
    `  curl -sS${u} -X POST '${second}/v1/topics/orders/produce?partition=0' --data-binary 'hello narad' -w '%{http_code}\\n'`,
    `  curl -sS${u} '${third}/v1/topics/orders/records?partition=0&offset=0'`,
    `  curl -sS${u} ${first}/v1/topics/orders`,
    "",
    "kubectl:",
    `  export KUBECONFIG=${p.kubeconfigPath}`,
    "  kubectl get naradclusters,naradtopics,pods -A",
    "",
    `Logs: ${join(p.dir, "logs")} (control plane), ${join(p.dir, "node", "pods")} (pods)`,
    "Ctrl-C stops everything.",
    "",
  ];
  process.stdout.write(lines.join("\n"));
}

// `on`, not `once`: Ctrl-C under npm delivers SIGINT twice (the terminal's and
// npm's forwarded copy); a second default SIGINT would exit mid-teardown.
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));

main().then(
  async () => {
    // Keep running until a signal; shutdown() then ends the process.
    if (stopping !== undefined) await stopping;
  },
  async (error: unknown) => {
    if (stopping === undefined) log(`failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
    await shutdown("error");
  },
);
