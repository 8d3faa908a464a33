// The operator on real kubelets (a kind cluster, e2e/kind/up.sh): helm
// install of charts/narad-operator, a small NaradCluster -> Ready with its
// brokers in real containers, the narad CLI in a client pod producing and
// consuming through the Service's DNS name with the operator-generated
// credentials, the securityContext enforced by the container runtime, and
// kill -9 of a broker's container process -> Down -> reroute -> Active with
// every acknowledged record read back exactly once.
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
import {
  BROKER_PORT,
  checkLedger,
  type HeaderSource,
  LoadProducer,
  listBrokerPods,
  type PodInfo,
  PodSampler,
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

  it("kill -9 of a broker's container process → Down → reroute → Active; every acknowledged record read back once", async () => {
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
    const rerouted = async () =>
      (
        await Promise.all(survivorIps.map((ip) => metricSum(ip, "narad_dispatch_rerouted_records_total")))
      ).reduce((a, b) => a + b, 0);
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
      await p.waitFor(async () => crash.kills > 0, {
        timeoutMs: 30_000,
        what: "the first kill -9",
        intervalMs: 100,
      });
      const down = await p.waitFor(
        async () => {
          const c = await cluster();
          return member(c, VICTIM)?.state === "Down" ? c : undefined;
        },
        { timeoutMs: 120_000, what: `${VICTIM} Down`, intervalMs: 250 },
      );
      const tDown = Date.now();
      expect(down.status?.membershipEpoch ?? 0).toBeGreaterThan(epoch0);
      expect(tDown - t0).toBeGreaterThanOrEqual(DOWN_GRACE_SECONDS * 1000 - 1000);
      await p.waitFor(async () => (await rerouted()) > reroutedBefore, {
        timeoutMs: 60_000,
        what: "the survivors to reroute",
        intervalMs: 500,
      });
      const tReroute = Date.now();
      const windowStart = producer.acked.size;
      await sleep(5_000); // produce while Down
      const window = [...producer.acked].slice(windowStart);
      const meantForVictim = window.filter((id) =>
        owned.includes(partitionForKey(new TextEncoder().encode(id), PARTITIONS)),
      );
      expect(meantForVictim.length).toBeGreaterThan(0);
      expect(member(await cluster(), VICTIM)?.state).toBe("Down");

      await crash.stop();
      released = true;
      const tRelease = Date.now();
      await p.waitFor(async () => member(await cluster(), VICTIM)?.state === "Active", {
        timeoutMs: 600_000,
        what: `${VICTIM} Active again (after the kubelet's crash-loop back-off)`,
        intervalMs: 500,
      });
      const tActive = Date.now();
      await p.waitFor(async () => cond(await cluster(), "Ready")?.status === "True", {
        timeoutMs: 120_000,
        what: "the cluster Ready again",
        intervalMs: 500,
      });
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
        `operator-kind: kill -9 of ${VICTIM} (${crash.kills} kills in the crash loop, grace ${DOWN_GRACE_SECONDS} s): Down after ${s(tDown - t0)}, rerouting ${s(tReroute - tDown)} later, ${window.length} acked while Down (${meantForVictim.length} keyed to its partitions [${owned.join(",")}]); released → Active after ${s(tActive - tRelease)}; ${producer.summary()}`,
      );
    } finally {
      if (!released) await crash.stop();
      await producer.stop();
      await sampler.stop();
    }

    const ips = (await pods()).filter((x) => x.ready && x.ip).map((x) => x.ip as string);
    const report = await checkLedger(producer, {
      ip: ips[0] ?? "",
      topic: TOPIC,
      partitions: PARTITIONS,
      headers,
      timeoutMs: 120_000,
    });
    console.log(`operator-kind: ${report.line}`);
    expect(report.acked).toBeGreaterThan(0);
    expect(report.lost.slice(0, 10)).toEqual([]);
    expect(report.duplicated.slice(0, 10)).toEqual([]);
    expect(report.unknown.slice(0, 10)).toEqual([]);
  });
  it("a spec change rolls the brokers one at a time with the operator pod kill -9ed mid-roll: ≤1 unavailable, PVCs kept, nothing lost", async () => {
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
      // Every broker pod was replaced, and each new pod mounted the same claim.
      const after = await pods();
      for (const b of before) expect(after.find((x) => x.name === b.name)?.uid).not.toBe(b.uid);
      expect(await pvcUids()).toEqual(pvcs);
    } finally {
      await producer.stop();
      await sampler.stop();
    }
    const ips = (await pods()).filter((x) => x.ready && x.ip).map((x) => x.ip as string);
    const report = await checkLedger(producer, {
      ip: ips[0] ?? "",
      topic: TOPIC,
      partitions: PARTITIONS,
      headers,
      timeoutMs: 120_000,
    });
    console.log(`operator-kind: ${report.line}`);
    expect(report.acked).toBeGreaterThan(0);
    expect(report.lost.slice(0, 10)).toEqual([]);
    expect(report.duplicated.slice(0, 10)).toEqual([]);
    expect(report.unknown.slice(0, 10)).toEqual([]);
  });
  it("scale 3 → 5 → 2 under load: new members take partitions, three decommissions one at a time, nothing lost", async () => {
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
    } finally {
      await producer.stop();
      await sampler.stop();
    }
    const ips = (await pods()).filter((x) => x.ready && x.ip).map((x) => x.ip as string);
    const report = await checkLedger(producer, {
      ip: ips[0] ?? "",
      topic: TOPIC,
      partitions: PARTITIONS,
      headers,
      timeoutMs: 120_000,
    });
    console.log(`operator-kind: ${report.line}`);
    expect(report.acked).toBeGreaterThan(0);
    expect(report.lost.slice(0, 10)).toEqual([]);
    expect(report.duplicated.slice(0, 10)).toEqual([]);
    expect(report.unknown.slice(0, 10)).toEqual([]);
  });
});
