// The operator on real kubelets (a kind cluster, e2e/kind/up.sh): helm
// install of charts/narad-operator, a small NaradCluster -> Ready with its
// brokers in real containers, the narad CLI in a client pod producing and
// consuming through the Service's DNS name with the operator-generated
// credentials, the securityContext enforced by the container runtime,
// port-forwards from the host, and under a continuous producer whose every
// 202 is read back:
//   - kill -9 of a broker's container process (a crash loop): held within
//     the grace, then Down (Event, Degraded, epoch), reroute, Active;
//   - a drained roll with the operator's own container kill -9ed mid-roll:
//     one eviction per pod, highest ordinal first, ≤1 unavailable, ≤0.1 %
//     produce errors, PVCs kept;
//   - scale 3 → 5 → 2: rebalance, three decommissions one at a time, the
//     removed members' PVCs deleted.
// These are the only runs of those three scenarios (the local platform keeps
// the variants that freeze a broker: e2e/operator/{roll,scale}.e2e.test.ts).
//
// The tests run in order and share the cluster (each builds on the last).

import { spawn } from "node:child_process";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { partitionForKey } from "../../broker/src/core/partitioner.ts";
import { type E2EPlatform, getPlatform } from "../harness/index.ts";
import { clusterCredentials } from "../operator/credentials.ts";
import { expectEveryAckReadableOnce } from "../operator/expect-ledger.ts";
import {
  BROKER_PORT,
  type HeaderSource,
  LoadProducer,
  listBrokerPods,
  type PodInfo,
  PodSampler,
  readTopic,
} from "../operator/load.ts";
import { createKindCluster, type KindCluster } from "./cluster.ts";
import { brokerImage, docker, repoRoot } from "./docker.ts";

const NS = "narad-kind";
const CLUSTER = "kindtest";
const REPLICAS = 3;
const TOPIC = "events";
const PARTITIONS = 6;
const VICTIM = `${CLUSTER}-1`;
/** Short for the test; the kubelet's first restart comes within it, so the crash loop keeps the broker down. */
const DOWN_GRACE_SECONDS = 10;
const NARAD = ["/usr/local/bin/node", "/app/broker/src/entry.ts"];
let kind: KindCluster | undefined;
let p: E2EPlatform;
let core: CoreV1Api;
let headers: HeaderSource = () => ({});

interface Member {
  id: string;
  state: string;
}
interface Cluster {
  metadata?: { generation?: number };
  status?: {
    phase?: string;
    conditions?: Array<{ type: string; status: string; reason?: string }>;
    members?: Member[];
    membershipEpoch?: number;
    observedGeneration?: number;
    updateRevision?: string;
    roll?: { podInFlight?: string };
    scale?: unknown;
  };
}

async function cluster(): Promise<Cluster> {
  const out = await p.kubectl(["-n", NS, "get", "naradcluster", CLUSTER, "-o", "json"]);
  return JSON.parse(out.stdout) as Cluster;
}
const member = (c: Cluster, id: string) => c.status?.members?.find((m) => m.id === id);
const cond = (c: Cluster, type: string) => c.status?.conditions?.find((x) => x.type === type);
const pods = (): Promise<PodInfo[]> => listBrokerPods(core, NS, CLUSTER);

interface KubeEvent {
  metadata: { name: string };
  reason?: string;
  message?: string;
  count?: number;
}
/** The namespace's Events with this reason, oldest first (the operator names them by creation time). */
async function events(reason: string): Promise<KubeEvent[]> {
  const out = await p.kubectl([
    "-n",
    NS,
    "get",
    "events",
    "--field-selector",
    `reason=${reason}`,
    "-o",
    "json",
  ]);
  // `<object>.<creation ms, hex><sequence, 3 hex digits>` (operator/src/kube/events.ts)
  const created = (e: KubeEvent) => BigInt(`0x${e.metadata.name.split(".").pop() ?? "0"}`);
  return (JSON.parse(out.stdout) as { items: KubeEvent[] }).items.sort((a, b) =>
    created(a) < created(b) ? -1 : created(a) > created(b) ? 1 : 0,
  );
}
const eventText = async (reason: string) => (await events(reason)).map((e) => e.message ?? "").join("\n");

/** `kubectl exec` in a pod's container; the exit code is returned, not thrown. */
async function exec(pod: string, container: string, argv: string[], allowFailure = false) {
  return p.kubectl(["-n", NS, "exec", pod, "-c", container, "--", ...argv], { allowFailure });
}

async function metricSum(ip: string, name: string): Promise<number> {
  const r = await fetch(`http://${ip}:${BROKER_PORT}/metrics`, {
    headers: headers(),
    signal: AbortSignal.timeout(5_000),
  });
  let sum = 0;
  for (const line of (await r.text()).split("\n"))
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.split(" ").pop());
  return sum;
}

// Run inside the kind node container: SIGKILL the container's main process
// now and every time the kubelet restarts it (a broker that crashes at
// startup), until the stop file appears. One line per kill on stdout. From
// the node because a PID namespace's init ignores SIGKILL sent from inside.
const CRASH_LOOP = `set -u
ns=$1 pod=$2 ctr=$3 stop=$4
rm -f "$stop"
while [ ! -e "$stop" ]; do
  s=$(crictl pods -q --namespace "$ns" --name "^$pod\\$" --state ready | head -n1)
  c=""; [ -n "$s" ] && c=$(crictl ps -q --pod "$s" --name "^$ctr\\$" --state running | head -n1)
  if [ -n "$c" ]; then
    pid=$(crictl inspect --output go-template --template '{{.info.pid}}' "$c" 2>/dev/null || true)
    if [ -n "$pid" ] && [ "$pid" != 0 ] && kill -9 "$pid" 2>/dev/null; then echo "killed $pid"; fi
  fi
  sleep 0.2
done
echo stopped`;

class CrashLoop {
  kills = 0;
  readonly #node: string;
  readonly #stopFile = "/tmp/narad-crash-loop.stop";
  readonly #done: Promise<void>;

  constructor(node: string, pod: string) {
    this.#node = node;
    const child = spawn(
      "docker",
      ["exec", node, "bash", "-c", CRASH_LOOP, "sh", NS, pod, "narad", this.#stopFile],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    child.stdout.on("data", (d: Buffer) => {
      this.kills += d
        .toString()
        .split("\n")
        .filter((l) => l.startsWith("killed")).length;
    });
    this.#done = new Promise((resolve) => child.on("close", () => resolve()));
  }

  async stop(): Promise<void> {
    await docker(["exec", this.#node, "touch", this.#stopFile]);
    await this.#done;
  }
}

/** A port-forward child process (kubectl's or the plugin's), up once it printed its local port. */
class PortForward {
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly match: RegExpExecArray;
  readonly #child: ReturnType<typeof spawn>;
  readonly #exited: Promise<void>;

  private constructor(child: ReturnType<typeof spawn>, match: RegExpExecArray, exited: Promise<void>) {
    this.#child = child;
    this.match = match;
    this.#exited = exited;
  }

  get url(): string {
    return `http://127.0.0.1:${this.match[1]}`;
  }

  static async start(
    binary: string,
    args: string[],
    ready: RegExp,
    env: NodeJS.ProcessEnv = {},
  ): Promise<PortForward> {
    const child = spawn(binary, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      err += d;
    });
    let handle: PortForward | undefined;
    const exited = new Promise<void>((resolve) =>
      child.on("exit", (code, signal) => {
        if (handle !== undefined) handle.exit = { code, signal };
        resolve();
      }),
    );
    try {
      const match = await p.waitFor(async () => ready.exec(out) ?? undefined, {
        timeoutMs: 60_000,
        intervalMs: 200,
        what: `${binary} ${args.join(" ")} to listen (stdout ${JSON.stringify(out)}, stderr ${JSON.stringify(err)})`,
      });
      handle = new PortForward(child, match, exited);
      return handle;
    } catch (e) {
      child.kill("SIGKILL");
      throw e;
    }
  }

  /** SIGINT (Ctrl-C), as a user stops it; SIGKILL if it has not exited within 10 s. */
  async stop(): Promise<void> {
    this.#child.kill("SIGINT");
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), 10_000);
    await this.#exited;
    clearTimeout(timer);
  }
}

describe("operator on kind", () => {
  beforeAll(async () => {
    kind = await createKindCluster(process.env["KIND_CLUSTER"] ?? "narad-e2e");
    process.env["E2E_PLATFORM"] = "kind";
    p = await getPlatform("operator-kind");
    core = p.kubeConfig.makeApiClient(CoreV1Api);
    const t0 = Date.now();
    await p.kubectl(["apply", "--server-side", "-f", join(repoRoot, "crds")]);
    await p.kubectl([
      "wait",
      "--for=condition=Established",
      "crd/naradclusters.narad.dev",
      "crd/naradtopics.narad.dev",
    ]);
    await p.helm(
      [
        "upgrade",
        "--install",
        "narad-operator",
        join(repoRoot, "charts/narad-operator"),
        "-n",
        "narad-system",
        "--create-namespace",
        "--set",
        "replicas=1",
        "--set",
        "image.pullPolicy=Never",
        "--set",
        `brokerImage=${brokerImage}`,
        "--wait",
        "--timeout",
        "300s",
      ],
      { timeoutMs: 360_000 },
    );
    process.stderr.write(`[operator-kind] operator installed in ${Date.now() - t0} ms\n`);
    // A kept cluster (NARAD_KIND_KEEP=1) may hold a previous run's namespace.
    await p.kubectl(["delete", "namespace", NS, "--ignore-not-found", "--wait", "--timeout=300s"], {
      timeoutMs: 320_000,
    });
    await p.kubectl(["create", "namespace", NS]);
  }, 3_600_000);

  afterAll(async () => {
    // The run's next kind suite may share the cluster: free its node of this suite's brokers.
    await p?.kubectl(["delete", "namespace", NS, "--ignore-not-found", "--wait=false"], {
      allowFailure: true,
    });
    await p?.stop();
    await kind?.delete();
  }, 600_000);

  it("a NaradCluster becomes Ready with its brokers in real containers", async () => {
    const t0 = Date.now();
    await p.applyYaml(`apiVersion: narad.dev/v1alpha1
kind: NaradCluster
metadata:
  name: ${CLUSTER}
  namespace: ${NS}
spec:
  replicas: ${REPLICAS}
  rollout: { downGraceSeconds: ${DOWN_GRACE_SECONDS} }
  storage: { reclaimPolicy: { whenScaled: Delete } }
`);
    await p.waitFor(
      async () => {
        const c = await cluster();
        if (cond(c, "Ready")?.status !== "True") return undefined;
        const ready = (await pods()).filter((x) => x.ready);
        return ready.length === REPLICAS ? true : undefined;
      },
      {
        timeoutMs: 600_000,
        what: `NaradCluster ${CLUSTER} Ready with ${REPLICAS} Ready brokers`,
        intervalMs: 2000,
      },
    );
    process.stderr.write(`[operator-kind] NaradCluster Ready in ${Date.now() - t0} ms\n`);
    // Real containers: each broker runs under containerd on the kind node, on a PVC.
    const pod = (await pods())[0]?.name ?? "";
    const cs = await p.kubectl([
      "-n",
      NS,
      "get",
      "pod",
      pod,
      "-o",
      "jsonpath={.status.containerStatuses[0].containerID}",
    ]);
    expect(cs.stdout).toMatch(/^containerd:\/\//);
    const pvc = await p.kubectl(["-n", NS, "get", "pvc", `data-${pod}`, "-o", "jsonpath={.status.phase}"]);
    expect(pvc.stdout).toBe("Bound");
    // Installed from the chart, the operator reconciles from inside the
    // cluster: its pod holds the lease, and the brokers run the chart's brokerImage.
    const op = await p.kubectl([
      "-n",
      "narad-system",
      "get",
      "deployment",
      "narad-operator",
      "-o",
      "jsonpath={.status.readyReplicas}",
    ]);
    expect(op.stdout).toBe("1");
    const holder = await p.kubectl([
      "-n",
      "narad-system",
      "get",
      "lease",
      "narad-operator",
      "-o",
      "jsonpath={.spec.holderIdentity}",
    ]);
    expect(holder.stdout).toMatch(/^narad-operator-/);
    const image = await p.kubectl([
      "-n",
      NS,
      "get",
      "statefulset",
      CLUSTER,
      "-o",
      "jsonpath={.spec.template.spec.containers[0].image}",
    ]);
    expect(image.stdout).toBe(brokerImage);
    expect((await cluster()).status?.members?.every((m) => m.state === "Active")).toBe(true);
    headers = await clusterCredentials(p.kubectl, NS, CLUSTER);
  });

  it("securityContext is enforced: non-root, no capabilities, read-only root; the data volume is writable", async () => {
    const pod = (await pods())[0]?.name ?? "";
    const probe = await exec(pod, "narad", [
      "/usr/local/bin/node",
      "-e",
      `const fs = require("fs");
const tryWrite = (f) => { try { fs.writeFileSync(f, "x"); fs.unlinkSync(f); return "ok"; } catch (e) { return e.code; } };
const st = fs.readFileSync("/proc/self/status", "utf8");
const field = (k) => st.split("\\n").find((l) => l.startsWith(k + ":")).split(/\\s+/)[1];
console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), capEff: field("CapEff"), noNewPrivs: field("NoNewPrivs"),
  root: tryWrite("/probe"), app: tryWrite("/app/probe"), tmp: tryWrite("/tmp/probe"), data: tryWrite("/var/lib/narad/probe") }));`,
    ]);
    const r = JSON.parse(probe.stdout.trim()) as Record<string, string | number>;
    process.stderr.write(`[operator-kind] inside ${pod}: ${probe.stdout.trim()}\n`);
    expect(r["uid"]).toBe(10001);
    expect(r["capEff"]).toBe("0000000000000000");
    expect(r["noNewPrivs"]).toBe("1");
    // Anything outside the volumes is the image's root file system: read-only.
    expect(r["root"]).toBe("EROFS");
    expect(r["app"]).toBe("EROFS");
    expect(r["tmp"]).toBe("EROFS");
    expect(r["data"]).toBe("ok");
  });

  it("the narad CLI in a client pod produces and consumes through the Service DNS name with the generated credentials", async () => {
    const url = `http://${CLUSTER}.${NS}.svc.cluster.local:${BROKER_PORT}`;
    await p.applyYaml(`apiVersion: v1
kind: Pod
metadata:
  name: client
  namespace: ${NS}
spec:
  restartPolicy: Never
  securityContext: { runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: RuntimeDefault } }
  containers:
    - name: client
      image: ${brokerImage}
      imagePullPolicy: Never
      # No shell in the image: an idle Node process keeps the pod up for kubectl exec.
      command: ["/usr/local/bin/node", "-e", "setInterval(() => {}, 1 << 30)"]
      securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: [ALL] } }
      env:
        - { name: NARAD_URL, value: "${url}" }
        - name: NARAD_USER
          valueFrom: { secretKeyRef: { name: ${CLUSTER}-users, key: username } }
        - name: NARAD_PASSWORD
          valueFrom: { secretKeyRef: { name: ${CLUSTER}-users, key: password } }
`);
    await p.kubectl(["-n", NS, "wait", "--for=condition=Ready", "pod/client", "--timeout=300s"], {
      timeoutMs: 320_000,
    });
    const cli = (args: string[], allowFailure = false) =>
      exec("client", "client", [...NARAD, ...args], allowFailure);
    // Without credentials the Service answers 401: the CLI exits 1.
    const anon = await exec("client", "client", [
      "/usr/local/bin/node",
      "-e",
      `fetch("${url}/v1/topics").then((r) => console.log(r.status))`,
    ]);
    expect(anon.stdout.trim()).toBe("401");
    await cli(["topic", "add", "kind-smoke", "--partitions", "3"]);
    const ls = await cli(["topic", "ls", "--json"]);
    expect(ls.stdout).toContain("kind-smoke");
    for (let i = 0; i < 5; i++) await cli(["pub", "kind-smoke", `hello-${i}`, "--key", `k${i}`]);
    const sub = await cli([
      "sub",
      "kind-smoke",
      "--group",
      "kind-client",
      "--count",
      "5",
      "--json",
      "--idle-ms",
      "30000",
    ]);
    const got = sub.stdout
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => {
        const m = JSON.parse(l) as { payload: string; payload_encoding?: string };
        return m.payload_encoding === "base64"
          ? Buffer.from(m.payload, "base64").toString("utf8")
          : m.payload;
      });
    process.stderr.write(`[operator-kind] consumed in the client pod: ${JSON.stringify(got)}\n`);
    expect(got.sort()).toEqual(["hello-0", "hello-1", "hello-2", "hello-3", "hello-4"]);
  });

  it("kubectl port-forward and kubectl narad port-forward stream produce and consume from the host", async () => {
    const pf = "pf-smoke";
    const auth = { ...headers(), "content-type": "application/json" };
    // The standard route first: kubectl port-forward to the Service (kubectl picks one of its pods).
    const svc = await PortForward.start(
      p.kubectlBinary,
      ["--kubeconfig", p.kubeconfigPath, "-n", NS, "port-forward", `svc/${CLUSTER}`, `:${BROKER_PORT}`],
      /Forwarding from 127\.0\.0\.1:(\d+) -> \d+/,
    );
    try {
      const created = await fetch(`${svc.url}/v1/topics`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ name: pf, partitions: 2 }),
      });
      expect(created.status, await created.text()).toBe(201);
      for (let i = 0; i < 20; i++) {
        const r = await fetch(`${svc.url}/v1/topics/${pf}/produce?key=pf-${i}`, {
          method: "POST",
          headers: headers(),
          body: `through-kubectl-${i}`,
        });
        expect(r.status).toBe(202);
      }
    } finally {
      await svc.stop();
    }
    expect(svc.exit).toEqual({ code: 0, signal: null });

    // Then the plugin (client-node's port-forward, no kubectl needed): consume all 20 with receipt handles.
    const plugin = await PortForward.start(
      process.execPath,
      [join(repoRoot, "bin/kubectl-narad.js"), "port-forward", CLUSTER, "0", "-n", NS],
      /Forwarding http:\/\/127\.0\.0\.1:(\d+) -> (\S+)/,
      { KUBECONFIG: p.kubeconfigPath },
    );
    const got: string[] = [];
    try {
      expect(plugin.match[2]).toMatch(new RegExp(`^${NS}/${CLUSTER}-\\d+:${BROKER_PORT}$`));
      const deadline = Date.now() + 120_000;
      while (got.length < 20 && Date.now() < deadline) {
        const r = await fetch(`${plugin.url}/v1/topics/${pf}/consume?group=pf&wait=2s`, {
          headers: headers(),
        });
        if (r.status === 204) continue;
        expect(r.status).toBe(200);
        const m = (await r.json()) as { payload: string; receipt_handle: string; payload_encoding?: string };
        got.push(
          m.payload_encoding === "base64" ? Buffer.from(m.payload, "base64").toString("utf8") : m.payload,
        );
        const ack = await fetch(
          `${plugin.url}/v1/topics/${pf}/ack?receipt_handle=${encodeURIComponent(m.receipt_handle)}`,
          { method: "POST", headers: headers() },
        );
        expect(ack.status).toBe(204);
      }
    } finally {
      await plugin.stop();
    }
    process.stderr.write(`[operator-kind] through port-forward: 20 produced, ${got.length} consumed\n`);
    expect(got.sort()).toEqual([...Array(20).keys()].map((i) => `through-kubectl-${i}`).sort());
    // The plugin stops on SIGINT with 0, as its docs say.
    expect(plugin.exit).toEqual({ code: 0, signal: null });
  });

  it("kill -9 of a broker's container process: held within the grace → Down (MemberDown, Degraded) → reroute → Active; every acknowledged record read back once", async () => {
    const ip0 = (await pods()).find((x) => x.ready)?.ip ?? "";
    const created = await fetch(`http://${ip0}:${BROKER_PORT}/v1/topics`, {
      method: "POST",
      headers: { ...headers(), "content-type": "application/json" },
      body: JSON.stringify({ name: TOPIC, partitions: PARTITIONS }),
    });
    expect(created.status).toBe(201);
    const owned = await p.waitFor(
      async () => {
        const t = await p.kubectl(["-n", NS, "get", "naradtopic", TOPIC, "-o", "json"]);
        const a = (
          JSON.parse(t.stdout) as { status?: { assignments?: { partition: number; owner: string }[] } }
        ).status?.assignments;
        if (a === undefined || a.length < PARTITIONS) return undefined;
        return a.filter((x) => x.owner === VICTIM).map((x) => x.partition);
      },
      { timeoutMs: 60_000, what: `assignments of ${TOPIC}`, intervalMs: 500 },
    );
    expect(owned.length).toBeGreaterThan(0);
    const survivorPartitions = [...Array(PARTITIONS).keys()].filter((x) => !owned.includes(x));
    const before = await cluster();
    expect(member(before, VICTIM)?.state).toBe("Active");
    const epoch0 = before.status?.membershipEpoch ?? 0;

    const sampler = new PodSampler(
      () => REPLICAS,
      pods,
      (l) => process.stderr.write(`[operator-kind] ${l}\n`),
    );
    const producer = new LoadProducer({ tag: "kind", topic: TOPIC, ips: () => sampler.readyIps, headers });
    const survivorIps = (await pods()).filter((x) => x.name !== VICTIM && x.ready).map((x) => x.ip as string);
    expect(survivorIps).toHaveLength(REPLICAS - 1);
    const survivorSum = async (metric: string) =>
      (await Promise.all(survivorIps.map((ip) => metricSum(ip, metric)))).reduce((a, b) => a + b, 0);
    const rerouted = () => survivorSum("narad_dispatch_rerouted_records_total");
    await p.waitFor(async () => producer.acked.size >= 50, {
      timeoutMs: 60_000,
      what: "traffic before the kill",
    });
    const reroutedBefore = await rerouted();
    const node = (
      await p.kubectl(["-n", NS, "get", "pod", VICTIM, "-o", "jsonpath={.spec.nodeName}"])
    ).stdout.trim();

    const t0 = Date.now();
    const crash = new CrashLoop(node, VICTIM);
    let released = false;
    try {
      // The first kill, seen here within ~100 ms of it: the clock of the checks below.
      await p.waitFor(async () => crash.kills > 0, {
        timeoutMs: 30_000,
        what: "the first kill -9",
        intervalMs: 100,
      });
      const tKill = Date.now();
      // Records acknowledged from a second after the kill on can not have
      // been dispatched to the dead owner: the window of the reroute check.
      await sleep(Math.max(0, tKill + 1_000 - Date.now()));
      const windowStart = producer.acked.size;

      // Within the grace the member stays Active: the survivors hold the
      // records meant for its partitions in their WALs (retrying the owner)
      // and reroute none. Sampled every 250 ms from 4 s after the kill until
      // 2 s before the grace ends (one slow scrape cannot decide it).
      await sleep(Math.max(0, tKill + 4_000 - Date.now()));
      let pendingInGrace = 0;
      let reroutedInGrace = reroutedBefore;
      let stateInGrace: string | undefined;
      for (;;) {
        const state = member(await cluster(), VICTIM)?.state;
        // A read that returns after the grace ended may rightly say Down (the
        // grace starts from a timestamp with one-second resolution).
        if (Date.now() >= tKill + (DOWN_GRACE_SECONDS - 1) * 1000) break;
        stateInGrace = state;
        pendingInGrace = Math.max(pendingInGrace, await survivorSum("narad_wal_pending_records"));
        reroutedInGrace = await rerouted();
        if (stateInGrace !== "Active" || reroutedInGrace !== reroutedBefore) break;
        if (Date.now() >= tKill + (DOWN_GRACE_SECONDS - 2) * 1000) break;
        await sleep(250);
      }
      const tInGrace = Date.now();
      expect(stateInGrace).toBe("Active");
      expect(reroutedInGrace).toBe(reroutedBefore);
      expect(pendingInGrace).toBeGreaterThan(0);

      // Down after the grace: epoch bumped, Degraded, a MemberDown Event.
      const down = await p.waitFor(
        async () => {
          const c = await cluster();
          return member(c, VICTIM)?.state === "Down" ? c : undefined;
        },
        { timeoutMs: 120_000, what: `${VICTIM} Down`, intervalMs: 250 },
      );
      const tDown = Date.now();
      const epochDown = down.status?.membershipEpoch ?? 0;
      expect(epochDown).toBeGreaterThan(epoch0);
      expect(tDown - t0).toBeGreaterThanOrEqual(DOWN_GRACE_SECONDS * 1000 - 1000);
      // Written by the operator beside the member change, not necessarily in the same write.
      await p.waitFor(async () => cond(await cluster(), "Degraded")?.status === "True", {
        timeoutMs: 30_000,
        what: "Degraded=True while a member is Down",
        intervalMs: 250,
      });
      await p.waitFor(async () => (await eventText("MemberDown")).includes(`${VICTIM}: Active → Down`), {
        timeoutMs: 30_000,
        what: `a MemberDown Event for ${VICTIM}`,
        intervalMs: 500,
      });

      // The survivors reroute: their rerouted counter moves.
      await p.waitFor(async () => (await rerouted()) > reroutedBefore, {
        timeoutMs: 60_000,
        what: "the survivors to reroute",
        intervalMs: 500,
      });
      const tReroute = Date.now();
      await sleep(5_000); // produce while Down
      const window = [...producer.acked].slice(windowStart);
      const meantForVictim = window.filter((id) =>
        owned.includes(partitionForKey(new TextEncoder().encode(id), PARTITIONS)),
      );
      expect(meantForVictim.length).toBeGreaterThan(0);
      // Every record acknowledged while the owner was dead is readable from
      // the survivors' partitions while it is still Down: the ones meant for
      // its partitions went to siblings.
      let missing: string[] = window;
      try {
        await p.waitFor(
          async () => {
            const seen = await readTopic(survivorIps[0] ?? "", TOPIC, survivorPartitions, headers);
            if (seen === undefined) return false;
            missing = window.filter((id) => !seen.has(id));
            return missing.length === 0;
          },
          { timeoutMs: 30_000, what: "every record acked while Down on the survivors", intervalMs: 1000 },
        );
      } catch {
        // the assertion below shows what is missing
      }
      expect(missing.slice(0, 10)).toEqual([]);
      expect(member(await cluster(), VICTIM)?.state).toBe("Down");

      await crash.stop();
      released = true;
      const tRelease = Date.now();
      const up = await p.waitFor(
        async () => {
          const c = await cluster();
          return member(c, VICTIM)?.state === "Active" ? c : undefined;
        },
        {
          timeoutMs: 600_000,
          what: `${VICTIM} Active again (after the kubelet's crash-loop back-off)`,
          intervalMs: 500,
        },
      );
      const tActive = Date.now();
      expect(up.status?.membershipEpoch ?? 0).toBeGreaterThan(epochDown);
      await p.waitFor(async () => cond(await cluster(), "Ready")?.status === "True", {
        timeoutMs: 120_000,
        what: "the cluster Ready again",
        intervalMs: 500,
      });
      expect(await eventText("MemberChanged")).toContain(`${VICTIM}: Down → Active`);
      await p.waitFor(async () => sampler.readyIps.length === REPLICAS, {
        timeoutMs: 120_000,
        what: `${REPLICAS} Ready brokers`,
        intervalMs: 500,
      });
      await sleep(2_000); // traffic after the recovery
      await producer.stop();
      await sampler.stop();
      const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
      console.log(
        `operator-kind: kill -9 of ${VICTIM} (${crash.kills} kills in the crash loop, grace ${DOWN_GRACE_SECONDS} s): ${pendingInGrace} records pending in the survivors' WALs and none rerouted ${s(tInGrace - tKill)} after the kill; Down after ${s(tDown - t0)} (epoch ${epoch0} → ${epochDown}), rerouting ${s(tReroute - tDown)} later, ${window.length} acked while dead (${meantForVictim.length} keyed to its partitions [${owned.join(",")}], all on sibling partitions); released → Active after ${s(tActive - tRelease)} (epoch ${up.status?.membershipEpoch}); ${producer.summary()}`,
      );
    } finally {
      if (!released) await crash.stop();
      await producer.stop();
      await sampler.stop();
    }

    // Every 202 read back exactly once, through two brokers. A commit in
    // flight to the owner at the kill has an unknown outcome: the survivors
    // hold such records for it (never rerouted), so none is stored twice.
    await expectEveryAckReadableOnce(producer, {
      pods,
      topic: TOPIC,
      partitions: PARTITIONS,
      headers,
      logPrefix: "operator-kind",
      timeoutMs: 120_000,
      throughOthers: "second",
    });
  });
  it("a spec change rolls the brokers one at a time, highest ordinal first, with the operator pod kill -9ed mid-roll and resuming (not restarting) it: ≤1 unavailable, ≤0.1 % produce errors, PVCs kept, nothing lost", async () => {
    const pvcUids = async () =>
      Object.fromEntries(
        (await core.listNamespacedPersistentVolumeClaim({ namespace: NS })).items.map((c) => [
          c.metadata?.name ?? "",
          c.metadata?.uid ?? "",
        ]),
      );
    const pvcs = await pvcUids();
    expect(Object.keys(pvcs)).toHaveLength(REPLICAS);
    const before = await pods();
    const c0 = await cluster();
    const gen = (c0.metadata?.generation ?? 0) + 1;
    const fromRevision = c0.status?.updateRevision ?? "";
    const sampler = new PodSampler(
      () => REPLICAS,
      pods,
      (l) => process.stderr.write(`[operator-kind] ${l}\n`),
    );
    const producer = new LoadProducer({ tag: "roll", topic: TOPIC, ips: () => sampler.readyIps, headers });
    let opKilledAt = 0;
    let restartsBefore = 0;
    try {
      await p.waitFor(async () => producer.acked.size >= 50, {
        timeoutMs: 60_000,
        what: "traffic before the roll",
      });
      const t0 = Date.now();
      // A pod-template change (an annotation): the operator drains and replaces each broker.
      await p.kubectl([
        "-n",
        NS,
        "patch",
        "naradcluster",
        CLUSTER,
        "--type=merge",
        "-p",
        JSON.stringify({ spec: { pod: { annotations: { "e2e.narad.dev/roll": String(t0) } } } }),
      ]);
      // The operator's own pod, SIGKILLed (from the node) once the roll has moved past its first pod.
      await p.waitFor(
        async () => {
          const inFlight = (await cluster()).status?.roll?.podInFlight;
          return inFlight !== undefined && inFlight !== `${CLUSTER}-${REPLICAS - 1}` ? inFlight : undefined;
        },
        { timeoutMs: 300_000, what: "the roll past its first pod", intervalMs: 250 },
      );
      const op = await p.kubectl([
        "-n",
        "narad-system",
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/name=narad-operator",
        "-o",
        "jsonpath={.items[0].metadata.name}",
      ]);
      const restartCount = async () =>
        Number(
          (
            await p.kubectl([
              "-n",
              "narad-system",
              "get",
              "pod",
              op.stdout.trim(),
              "-o",
              "jsonpath={.status.containerStatuses[0].restartCount}",
            ])
          ).stdout,
        );
      restartsBefore = await restartCount();
      await p.killPodProcess("narad-system", op.stdout.trim(), "operator");
      opKilledAt = Date.now();
      await p.waitFor(
        async () => {
          const c = await cluster();
          const list = await pods();
          const rev = c.status?.updateRevision;
          return (
            c.status?.observedGeneration === gen &&
            rev !== undefined &&
            rev !== fromRevision &&
            c.status?.roll === undefined &&
            cond(c, "Progressing")?.reason === "UpToDate" &&
            cond(c, "Ready")?.status === "True" &&
            list.length === REPLICAS &&
            list.every((x) => x.ready && x.revision === rev)
          );
        },
        { timeoutMs: 600_000, what: `the roll at generation ${gen} to finish`, intervalMs: 500 },
      );
      const rollMs = Date.now() - t0;
      await sleep(2_000); // traffic after the roll
      await producer.stop();
      await sampler.stop();
      const restarts = await p.kubectl([
        "-n",
        "narad-system",
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/name=narad-operator",
        "-o",
        "jsonpath={.items[0].status.containerStatuses[0].restartCount}",
      ]);
      console.log(
        `operator-kind: roll of ${REPLICAS} brokers took ${(rollMs / 1000).toFixed(1)} s (operator kill -9ed ${((opKilledAt - t0) / 1000).toFixed(1)} s in, restarts ${restarts.stdout}); max unavailable ${sampler.maxUnavailable} over ${sampler.samples} samples; ${producer.summary()}`,
      );
      // The kubelet restarted the operator's container (the kill was real), and the roll finished.
      expect(Number(restarts.stdout)).toBeGreaterThan(restartsBefore);
      expect(sampler.maxUnavailable, `worst sample: ${sampler.worst.join(" ")}`).toBeLessThanOrEqual(1);
      // A planned restart costs clients nothing: the draining broker forwards
      // produce to a peer's WAL, and its pod turns not Ready before it goes.
      // Refused connections (the pod gone before the readiness sampler
      // noticed, nothing sent, retried at once) are counted in the summary.
      expect(producer.applicationErrors(), producer.summary()).toBeLessThanOrEqual(
        Math.floor(producer.attempts / 1000),
      );
      // Every broker pod was replaced, and each new pod mounted the same claim.
      const after = await pods();
      for (const b of before) expect(after.find((x) => x.name === b.name)?.uid).not.toBe(b.uid);
      expect(await pvcUids()).toEqual(pvcs);
      // One eviction per pod, highest ordinal first: the restarted operator
      // picked the roll up from status.roll, it did not start over.
      const evictions = (await events("RollingUpdate"))
        .filter((e) => e.message?.startsWith("evicted pod ") === true)
        .flatMap((e) => Array<string>(e.count ?? 1).fill(e.message?.split(" ")[2] ?? ""));
      expect(evictions).toEqual([`${CLUSTER}-2`, `${CLUSTER}-1`, `${CLUSTER}-0`]);
      expect(await eventText("RollComplete")).toContain("every pod runs it now");
    } finally {
      await producer.stop();
      await sampler.stop();
    }
    await expectEveryAckReadableOnce(producer, {
      pods,
      topic: TOPIC,
      partitions: PARTITIONS,
      headers,
      logPrefix: "operator-kind",
      timeoutMs: 120_000,
      throughOthers: "second",
    });
  });
  it("scale 3 → 5 → 2 under load: new members take partitions, three decommissions one at a time (highest ordinal first), their PVCs deleted, nothing lost", async () => {
    const owners = async () => {
      const t = await p.kubectl(["-n", NS, "get", "naradtopic", TOPIC, "-o", "json"]);
      const a = (JSON.parse(t.stdout) as { status?: { assignments?: { owner: string }[] } }).status
        ?.assignments;
      return [...new Set((a ?? []).map((x) => x.owner))].sort();
    };
    const stsReplicas = async () =>
      Number((await p.kubectl(["-n", NS, "get", "sts", CLUSTER, "-o", "jsonpath={.spec.replicas}"])).stdout);
    const settled = (n: number, timeoutMs: number) =>
      p.waitFor(
        async () => {
          const c = await cluster();
          const list = await pods();
          const ids = (c.status?.members ?? []).map((m) => m.id).sort();
          const want = Array.from({ length: n }, (_, i) => `${CLUSTER}-${i}`).sort();
          return (
            (await stsReplicas()) === n &&
            JSON.stringify(ids) === JSON.stringify(want) &&
            (c.status?.members ?? []).every((m) => m.state === "Active") &&
            c.status?.scale === undefined &&
            list.length === n &&
            list.every((x) => x.ready) &&
            cond(c, "Ready")?.status === "True"
          );
        },
        { timeoutMs, what: `the cluster settled at ${n} brokers`, intervalMs: 1000 },
      );
    // spec.rebalance: new members take partitions (off by default: a scale-up alone moves nothing).
    const patchReplicas = (n: number) =>
      p.kubectl([
        "-n",
        NS,
        "patch",
        "naradcluster",
        CLUSTER,
        "--type=merge",
        "-p",
        JSON.stringify({ spec: { replicas: n, rebalance: true } }),
      ]);
    let replicas = REPLICAS;
    const sampler = new PodSampler(
      () => replicas,
      pods,
      (l) => process.stderr.write(`[operator-kind] ${l}\n`),
    );
    const producer = new LoadProducer({ tag: "scale", topic: TOPIC, ips: () => sampler.readyIps, headers });
    let leavingAtOnce = 0;
    try {
      await p.waitFor(async () => producer.acked.size >= 50, {
        timeoutMs: 60_000,
        what: "traffic before scaling",
      });
      const t0 = Date.now();
      replicas = 5;
      await patchReplicas(5);
      await settled(5, 600_000);
      await p.waitFor(
        async () => {
          const o = await owners();
          return (
            o.includes(`${CLUSTER}-3`) &&
            o.includes(`${CLUSTER}-4`) &&
            (await cluster()).status?.scale === undefined
          );
        },
        { timeoutMs: 300_000, what: "partitions rebalanced onto the new members", intervalMs: 1000 },
      );
      const upMs = Date.now() - t0;
      expect(await eventText("Rebalanced")).toContain("partitions balanced over 5 member(s)");
      const t1 = Date.now();
      replicas = 2;
      await patchReplicas(2);
      await p.waitFor(
        async () => {
          const c = await cluster();
          leavingAtOnce = Math.max(
            leavingAtOnce,
            (c.status?.members ?? []).filter((m) => m.state === "Decommissioning").length,
          );
          return (await stsReplicas()) === 2 && c.status?.scale === undefined;
        },
        { timeoutMs: 900_000, what: "the scale-down to 2", intervalMs: 500 },
      );
      await settled(2, 300_000);
      const downMs = Date.now() - t1;
      await sleep(2_000); // traffic on 2
      await producer.stop();
      await sampler.stop();
      console.log(
        `operator-kind: scale 3 → 5 with rebalance ${(upMs / 1000).toFixed(1)} s, 5 → 2 ${(downMs / 1000).toFixed(1)} s (at most ${leavingAtOnce} decommissioning at once); ${producer.summary()}`,
      );
      expect(leavingAtOnce).toBeLessThanOrEqual(1);
      expect(await owners()).toEqual([`${CLUSTER}-0`, `${CLUSTER}-1`]);
      // Removed one at a time, highest ordinal first.
      const removed = (await events("MemberRemoved")).map((e) => e.message?.split(" ")[0]);
      expect(removed).toEqual([`${CLUSTER}-4`, `${CLUSTER}-3`, `${CLUSTER}-2`]);
      for (const reason of ["Decommissioning", "MovePlanned", "PartitionMoved"])
        expect(await eventText(reason), reason).not.toBe("");
      expect(await eventText("OwnerSwapped")).toContain("destination ready");
      // whenScaled: Delete → the removed members' PVCs go (the kubelet lets go of them first).
      await p.waitFor(
        async () => {
          const claims = (await core.listNamespacedPersistentVolumeClaim({ namespace: NS })).items
            .filter((c) => c.metadata?.deletionTimestamp === undefined)
            .map((c) => c.metadata?.name ?? "")
            .sort();
          return JSON.stringify(claims) === JSON.stringify([`data-${CLUSTER}-0`, `data-${CLUSTER}-1`]);
        },
        { timeoutMs: 120_000, what: "the PVCs of the removed members deleted", intervalMs: 1000 },
      );
    } finally {
      await producer.stop();
      await sampler.stop();
    }
    await expectEveryAckReadableOnce(producer, {
      pods,
      topic: TOPIC,
      partitions: PARTITIONS,
      headers,
      logPrefix: "operator-kind",
      timeoutMs: 120_000,
      throughOthers: "all",
    });
  });
});
