// The NetworkPolicy the operator ships (spec.security.networkPolicy), enforced
// on real kubelets: a kind cluster with the NetworkPolicy agent e2e/kind/up.sh
// deploys (kube-network-policies, e2e/kind/netpol/). Every connection is made
// from inside a pod (kubectl exec, Node's net), never from the host, so the
// suite needs no route to the pod CIDR (NARAD_KIND_ROUTE=0 works).
//
// The policy promises (operator/src/specs/network-policy.ts):
//   - API port 7942: from the allowFrom peers and the cluster's own brokers;
//   - cluster port 7943: only from the cluster's own brokers.
// allowFrom here: the operator's namespace, pods labelled narad-client=true in
// the cluster's namespace, and every pod of namespaces labelled
// narad-access=allowed. The probes cover each peer kind on both sides of the
// rule, the data path over the cluster RPC, and a control: with the policy
// switched off, the refused pods reach both ports, so the refusals were the
// policy's and not a broken network.

import { join } from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type E2EPlatform, getPlatform } from "../harness/index.ts";
import { adminCredentials } from "../operator/credentials.ts";
import { listBrokerPods } from "../operator/load.ts";
import { createKindCluster, type KindCluster } from "./cluster.ts";
import { brokerImage, repoRoot } from "./docker.ts";
import { classify, parseReach, REACH_SCRIPT, type Reachability, type ReachTarget } from "./reach.ts";

const NS = "np-brokers";
const NS_ALLOWED = "np-allowed";
const NS_OTHER = "np-other";
const OPERATOR_NS = "narad-system";
const CLUSTER = "guarded";
const API = 7942;
const RPC = 7943;
const NODE = "/usr/local/bin/node";
const NARAD = [NODE, "/app/broker/src/entry.ts"];
const SVC = `${CLUSTER}.${NS}.svc.cluster.local`;

let kind: KindCluster | undefined;
let p: E2EPlatform;
let core: CoreV1Api;
let brokerIps: string[] = [];

interface Cluster {
  status?: {
    conditions?: Array<{ type: string; status: string }>;
    members?: Array<{ id: string; state: string; walPendingRecords?: number }>;
  };
}

async function naradCluster(): Promise<Cluster> {
  const out = await p.kubectl(["-n", NS, "get", "naradcluster", CLUSTER, "-o", "json"]);
  return JSON.parse(out.stdout) as Cluster;
}

/** A pod running the broker image idle (no shell in it), for kubectl exec. */
function probePod(ns: string, name: string, labels: Record<string, string>): string {
  const lbl = Object.entries({ "narad-test": "netpol", ...labels })
    .map(([k, v]) => `    ${k}: "${v}"`)
    .join("\n");
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: ${ns}
  labels:
${lbl}
spec:
  restartPolicy: Never
  securityContext: { runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: RuntimeDefault } }
  containers:
    - name: probe
      image: ${brokerImage}
      imagePullPolicy: Never
      command: ["${NODE}", "-e", "setInterval(() => {}, 1 << 30)"]
      securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: [ALL] } }
      env:
        - name: NARAD_USER
          valueFrom: { secretKeyRef: { name: ${CLUSTER}-users, key: username, optional: true } }
        - name: NARAD_PASSWORD
          valueFrom: { secretKeyRef: { name: ${CLUSTER}-users, key: password, optional: true } }
`;
}

/** Where each probe runs: a pod's container in a namespace. */
interface Source {
  label: string;
  ns: string;
  pod: string;
  container: string;
}
const SOURCES = {
  labelled: { label: "np-brokers, narad-client=true", ns: NS, pod: "labelled", container: "probe" },
  unlabelled: { label: "np-brokers, no label", ns: NS, pod: "unlabelled", container: "probe" },
  allowedNs: {
    label: "np-allowed (namespace label), no pod label",
    ns: NS_ALLOWED,
    pod: "any",
    container: "probe",
  },
  otherNs: { label: "np-other, narad-client=true", ns: NS_OTHER, pod: "labelled", container: "probe" },
} satisfies Record<string, Source>;

async function reach(src: Source, targets: ReachTarget[]): Promise<Record<string, Reachability>> {
  const r = await p.kubectl(
    [
      "-n",
      src.ns,
      "exec",
      src.pod,
      "-c",
      src.container,
      "--",
      NODE,
      "-e",
      REACH_SCRIPT,
      JSON.stringify(targets),
    ],
    { timeoutMs: 60_000 },
  );
  const outcomes = parseReach(r.stdout);
  process.stderr.write(`[netpol-kind] from ${src.label}: ${JSON.stringify(outcomes)}\n`);
  return Object.fromEntries(Object.entries(outcomes).map(([k, v]) => [k, classify(v)]));
}

/** broker-0's two ports and the Service's API port. */
function brokerTargets(): ReachTarget[] {
  const ip = brokerIps[0] ?? "";
  return [
    { name: "broker:7942", host: ip, port: API, http: true },
    { name: "broker:7943", host: ip, port: RPC },
    { name: "service:7942", host: SVC, port: API, http: true },
  ];
}

async function operatorPod(): Promise<Source> {
  const r = await p.kubectl([
    "-n",
    OPERATOR_NS,
    "get",
    "pods",
    "-l",
    "app.kubernetes.io/name=narad-operator",
    "-o",
    "jsonpath={.items[0].metadata.name}",
  ]);
  return {
    label: "the operator (narad-system)",
    ns: OPERATOR_NS,
    pod: r.stdout.trim(),
    container: "operator",
  };
}

describe("NetworkPolicy on kind", () => {
  beforeAll(async () => {
    kind = await createKindCluster(process.env["KIND_CLUSTER"] ?? "narad-e2e");
    process.env["E2E_PLATFORM"] = "kind";
    p = await getPlatform("netpol-kind");
    core = p.kubeConfig.makeApiClient(CoreV1Api);
    // The agent is what this suite is about: without it every "blocked" below
    // would fail, so say so first.
    await p.kubectl(
      ["-n", "kube-system", "rollout", "status", "ds/kube-network-policies", "--timeout=120s"],
      {
        timeoutMs: 130_000,
      },
    );
    await p.kubectl(["apply", "--server-side", "-f", join(repoRoot, "crds")]);
    await p.kubectl(["wait", "--for=condition=Established", "crd/naradclusters.narad.dev"]);
    await p.helm(
      [
        "upgrade",
        "--install",
        "narad-operator",
        join(repoRoot, "charts/narad-operator"),
        "-n",
        OPERATOR_NS,
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
    for (const ns of [NS, NS_ALLOWED, NS_OTHER]) {
      await p.kubectl(["delete", "namespace", ns, "--ignore-not-found", "--wait", "--timeout=300s"], {
        timeoutMs: 320_000,
      });
      await p.kubectl(["create", "namespace", ns]);
    }
    await p.kubectl(["label", "namespace", NS_ALLOWED, "narad-access=allowed"]);
    await p.applyYaml(
      JSON.stringify({
        apiVersion: "narad.dev/v1alpha1",
        kind: "NaradCluster",
        metadata: { name: CLUSTER, namespace: NS },
        spec: {
          replicas: 2,
          security: {
            networkPolicy: {
              enabled: true,
              allowFrom: [
                { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": OPERATOR_NS } } },
                { podSelector: { matchLabels: { "narad-client": "true" } } },
                { namespaceSelector: { matchLabels: { "narad-access": "allowed" } } },
              ],
            },
          },
        },
      }),
    );
    await p.applyYaml(
      [
        probePod(NS, "labelled", { "narad-client": "true" }),
        probePod(NS, "unlabelled", {}),
        probePod(NS_ALLOWED, "any", {}),
        probePod(NS_OTHER, "labelled", { "narad-client": "true" }),
      ].join("---\n"),
    );
    const t0 = Date.now();
    await p.waitFor(
      async () => {
        const c = await naradCluster();
        if (c.status?.conditions?.find((x) => x.type === "Ready")?.status !== "True") return undefined;
        const pods = (await listBrokerPods(core, NS, CLUSTER)).filter((x) => x.ready);
        return pods.length === 2 ? true : undefined;
      },
      { timeoutMs: 600_000, what: `NaradCluster ${CLUSTER} Ready with 2 brokers`, intervalMs: 2000 },
    );
    process.stderr.write(`[netpol-kind] NaradCluster Ready in ${Date.now() - t0} ms\n`);
    for (const [ns, pod] of [
      [NS, "labelled"],
      [NS, "unlabelled"],
      [NS_ALLOWED, "any"],
      [NS_OTHER, "labelled"],
    ] as const)
      await p.kubectl(["-n", ns, "wait", "--for=condition=Ready", `pod/${pod}`, "--timeout=300s"], {
        timeoutMs: 320_000,
      });
    const pods = await listBrokerPods(core, NS, CLUSTER);
    brokerIps = [`${CLUSTER}-0`, `${CLUSTER}-1`].map((n) => pods.find((x) => x.name === n)?.ip ?? "");
    expect(brokerIps.every((ip) => ip !== "")).toBe(true);
  }, 3_600_000);

  afterAll(async () => {
    // The run's next kind suite may share the cluster: free its node of this suite's pods.
    for (const ns of [NS, NS_ALLOWED, NS_OTHER])
      await p?.kubectl(["delete", "namespace", ns, "--ignore-not-found", "--wait=false"], {
        allowFailure: true,
      });
    await p?.stop();
    await kind?.delete();
  }, 600_000);

  it("the operator stored the policy the spec asks for", async () => {
    const out = await p.kubectl(["-n", NS, "get", "networkpolicy", `${CLUSTER}-brokers`, "-o", "json"]);
    const np = JSON.parse(out.stdout) as {
      spec: { policyTypes: string[]; ingress: Array<{ ports: Array<{ port: number }>; from?: unknown[] }> };
    };
    expect(np.spec.policyTypes).toEqual(["Ingress"]);
    const byPort = (port: number) => np.spec.ingress.find((r) => r.ports.some((x) => x.port === port));
    // 7942: the brokers plus the three allowFrom peers; 7943: the brokers only.
    expect(byPort(API)?.from).toHaveLength(4);
    expect(byPort(RPC)?.from).toHaveLength(1);
  });

  it("allowed peers reach the API port and never the cluster port", async () => {
    for (const src of [SOURCES.labelled, SOURCES.allowedNs, await operatorPod()])
      expect(await reach(src, brokerTargets()), src.label).toEqual({
        "broker:7942": "reached",
        "broker:7943": "blocked",
        "service:7942": "reached",
      });
  });

  it("pods without the label, or with it in another namespace, reach neither port", async () => {
    for (const src of [SOURCES.unlabelled, SOURCES.otherNs])
      expect(await reach(src, brokerTargets()), src.label).toEqual({
        "broker:7942": "blocked",
        "broker:7943": "blocked",
        "service:7942": "blocked",
      });
  });

  it("brokers reach each other on both ports: the cluster RPC carries produce and consume across brokers", async () => {
    const broker0: Source = { label: `${CLUSTER}-0`, ns: NS, pod: `${CLUSTER}-0`, container: "narad" };
    const ip1 = brokerIps[1] ?? "";
    expect(
      await reach(broker0, [
        { name: "peer:7942", host: ip1, port: API, http: true },
        { name: "peer:7943", host: ip1, port: RPC },
      ]),
    ).toEqual({ "peer:7942": "reached", "peer:7943": "reached" });

    // Produce through broker-0 and consume through broker-1, from the allowed
    // client: records keyed to broker-1's partitions go over the RPC, and
    // broker-1 fetches broker-0's partitions over it.
    // The users Secret may not have existed when the probe pods started
    // (their env refs are optional): pass the admin's credentials explicitly.
    const creds = await adminCredentials(p.kubectl, NS, CLUSTER);
    const auth = ["--user", creds.username, "--password", creds.password];
    const cli = (url: string, args: string[]) =>
      p.kubectl(
        ["-n", NS, "exec", "labelled", "-c", "probe", "--", ...NARAD, ...args, "--url", url, ...auth],
        {
          timeoutMs: 120_000,
        },
      );
    const url0 = `http://${brokerIps[0]}:${API}`;
    const url1 = `http://${ip1}:${API}`;
    await cli(url0, ["topic", "add", "np-rpc", "--partitions", "4"]);
    const owners = await p.waitFor(
      async () => {
        const t = await p.kubectl(["-n", NS, "get", "naradtopic", "np-rpc", "-o", "json"], {
          allowFailure: true,
        });
        if (t.code !== 0) return undefined;
        const a = (JSON.parse(t.stdout) as { status?: { assignments?: Array<{ owner: string }> } }).status
          ?.assignments;
        return a !== undefined && a.length === 4 ? new Set(a.map((x) => x.owner)) : undefined;
      },
      { timeoutMs: 60_000, what: "np-rpc assignments", intervalMs: 500 },
    );
    expect(owners.size, "partitions on both brokers").toBe(2);
    const sent = Array.from({ length: 12 }, (_, i) => `m-${i}`);
    for (const [i, m] of sent.entries()) await cli(url0, ["pub", "np-rpc", m, "--key", `k${i}`]);
    const sub = await cli(url1, [
      "sub",
      "np-rpc",
      "--group",
      "np",
      "--count",
      String(sent.length),
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
    expect(got.sort()).toEqual([...sent].sort());
  });

  it("the operator's admin calls get through: WAL counts in the status", async () => {
    const c = await p.waitFor(
      async () => {
        const x = await naradCluster();
        const m = x.status?.members ?? [];
        return m.length === 2 && m.every((y) => y.walPendingRecords !== undefined) ? x : undefined;
      },
      { timeoutMs: 120_000, what: "WAL counts from the operator's status calls", intervalMs: 1000 },
    );
    expect(c.status?.members?.map((m) => m.state)).toEqual(["Active", "Active"]);
  });

  it("control: with the policy switched off, the refused pods reach both ports", async () => {
    await p.kubectl([
      "-n",
      NS,
      "patch",
      "naradcluster",
      CLUSTER,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { security: { networkPolicy: { enabled: false } } } }),
    ]);
    await p.waitFor(
      async () => {
        const r = await p.kubectl(["-n", NS, "get", "networkpolicy", `${CLUSTER}-brokers`], {
          allowFailure: true,
        });
        return r.code !== 0 && /NotFound|not found/.test(r.stderr);
      },
      { timeoutMs: 120_000, what: "the NetworkPolicy deleted", intervalMs: 1000 },
    );
    const open = { "broker:7942": "reached", "broker:7943": "reached", "service:7942": "reached" };
    // The agent sees the deletion through its informer: give it a moment.
    for (const src of [SOURCES.unlabelled, SOURCES.otherNs])
      await p.waitFor(
        async () => {
          const r = await reach(src, brokerTargets());
          return JSON.stringify(r) === JSON.stringify(open) ? r : undefined;
        },
        { timeoutMs: 60_000, what: `${src.label} reaching both ports`, intervalMs: 1000 },
      );
  });
});
