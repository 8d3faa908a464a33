// The operator on real kubelets: helm install of charts/narad-operator, a
// NaradCluster -> Ready with its brokers in real containers, a client pod
// that produces and reads back through the Service's DNS name, and the
// securityContext enforced by the container runtime (non-root, read-only root).
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type E2EPlatform, getPlatform } from "../harness/index.ts";
import { createKindCluster, type KindCluster } from "./cluster.ts";
import { brokerImage, repoRoot } from "./docker.ts";

const NS = "narad-kind";
const CLUSTER = "kindtest";
const REPLICAS = 3;
let kind: KindCluster | undefined;
let p: E2EPlatform;

interface Pod {
  metadata: { name: string };
  spec: {
    containers: { name: string; securityContext?: Record<string, unknown> }[];
    securityContext?: Record<string, unknown>;
  };
  status?: { phase?: string; podIP?: string; conditions?: { type: string; status: string }[] };
}

async function brokerPods(): Promise<Pod[]> {
  const out = await p.kubectl(["-n", NS, "get", "pods", "-l", `narad.dev/cluster=${CLUSTER}`, "-o", "json"]);
  return (JSON.parse(out.stdout) as { items: Pod[] }).items;
}

describe("operator on kind", () => {
  beforeAll(async () => {
    kind = await createKindCluster(process.env["KIND_CLUSTER"] ?? "narad-e2e");
    process.env["E2E_PLATFORM"] = "kind";
    p = await getPlatform("operator-kind");
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
        "install",
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
  imagePullPolicy: Never
`);
    await p.waitFor(
      async () => {
        const ready = await p.kubectl([
          "-n",
          NS,
          "get",
          "naradcluster",
          CLUSTER,
          "-o",
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        ]);
        if (ready.stdout.trim() !== "True") return undefined;
        const pods = await brokerPods();
        const readyPods = pods.filter((pod) =>
          pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
        );
        return readyPods.length === REPLICAS ? true : undefined;
      },
      {
        timeoutMs: 600_000,
        what: `NaradCluster ${CLUSTER} Ready with ${REPLICAS} Ready brokers`,
        intervalMs: 2000,
      },
    );
    process.stderr.write(`[operator-kind] NaradCluster Ready in ${Date.now() - t0} ms\n`);
    // Real containers: each broker runs under containerd on the kind node.
    const pod = (await brokerPods())[0];
    expect(pod).toBeDefined();
    const cs = await p.kubectl([
      "-n",
      NS,
      "get",
      "pod",
      pod?.metadata.name ?? "",
      "-o",
      "jsonpath={.status.containerStatuses[0].containerID}",
    ]);
    expect(cs.stdout).toMatch(/^containerd:\/\//);
  });

  it("securityContext is enforced: non-root uid, read-only root file system", async () => {
    const pod = (await brokerPods())[0]?.metadata.name ?? "";
    const probe = await p.kubectl([
      "-n",
      NS,
      "exec",
      pod,
      "-c",
      "narad",
      "--",
      "/usr/local/bin/node",
      "-e",
      "let ro='no';try{require('fs').writeFileSync('/probe','x')}catch(e){ro=e.code}console.log(JSON.stringify({uid:process.getuid(),gid:process.getgid(),ro}))",
    ]);
    const r = JSON.parse(probe.stdout.trim()) as { uid: number; gid: number; ro: string };
    expect(r.uid).not.toBe(0);
    expect(r.ro).toBe("EROFS");
  });

  it("a client pod produces and reads back through the Service DNS name", async () => {
    const url = `http://${CLUSTER}.${NS}.svc.cluster.local:7942`;
    const script = `
const url = process.env.URL;
const auth = process.env.NARAD_USER ? { authorization: "Basic " + Buffer.from(process.env.NARAD_USER + ":" + process.env.NARAD_PASSWORD).toString("base64") } : {};
const j = { "content-type": "application/json", ...auth };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  let res;
  for (let i = 0; i < 60; i++) {
    try { res = await fetch(url + "/v1/topics", { method: "POST", headers: j, body: JSON.stringify({ name: "kind-smoke", partitions: 1 }) }); if (res.status < 500) break; } catch (e) { console.error(String(e)); }
    await sleep(1000);
  }
  console.log("create", res && res.status);
  const prod = await fetch(url + "/v1/topics/kind-smoke/produce?partition=0", { method: "POST", headers: auth, body: "hello from a pod" });
  console.log("produce", prod.status);
  for (let i = 0; i < 60; i++) {
    const r = await fetch(url + "/v1/topics/kind-smoke/records?partition=0&offset=0", { headers: auth });
    const t = await r.text();
    if (t.includes("hello from a pod")) { console.log("read-back ok"); return; }
    await sleep(500);
  }
  console.log("read-back missing"); process.exit(1);
})().catch((e) => { console.error(e); process.exit(1); });`;
    const users = await p.kubectl(["-n", NS, "get", "secret", `${CLUSTER}-users`, "-o", "name"], {
      allowFailure: true,
    });
    const authEnv =
      users.code === 0
        ? `
        - name: NARAD_USER
          valueFrom: { secretKeyRef: { name: ${CLUSTER}-users, key: username } }
        - name: NARAD_PASSWORD
          valueFrom: { secretKeyRef: { name: ${CLUSTER}-users, key: password } }`
        : "";
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
      command: ["/usr/local/bin/node", "-e", ${JSON.stringify(script)}]
      securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: [ALL] } }
      env:
        - name: URL
          value: ${url}${authEnv}
`);
    const phase = await p.waitFor(
      async () => {
        const out = await p.kubectl(["-n", NS, "get", "pod", "client", "-o", "jsonpath={.status.phase}"]);
        const ph = out.stdout.trim();
        return ph === "Succeeded" || ph === "Failed" ? ph : undefined;
      },
      { timeoutMs: 300_000, what: "client pod to finish", intervalMs: 2000 },
    );
    const logs = await p.kubectl(["-n", NS, "logs", "client"]);
    process.stderr.write(`[operator-kind] client pod: ${logs.stdout}\n`);
    expect(phase).toBe("Succeeded");
    expect(logs.stdout).toContain("produce 202");
    expect(logs.stdout).toContain("read-back ok");
  });
});
