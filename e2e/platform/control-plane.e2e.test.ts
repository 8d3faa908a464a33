// Starts real control planes (etcd, kube-apiserver, kube-controller-manager)
// and checks what the e2e suites rely on: version, CRUD through the admin
// kubeconfig, RBAC with TokenRequest tokens, the controllers, kubectl and helm,
// side-by-side instances, and a clean stop (and cleanup when the owner dies).
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiException, AppsV1Api, CoreV1Api, KubeConfig, VersionApi } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, startControlPlane } from "./control-plane.ts";
import { commandRunner, waitFor } from "./helpers.ts";
import { cmdlineMentions, isAlive, listInstances, reapStaleInstances } from "./instances.ts";
import { stderrLog } from "./log.ts";
import { type Binaries, ensureBinaries, K8S_VERSION } from "./tools.ts";

const log = stderrLog("control-plane-test");
const NAMESPACE = "cp-test";

function adminConfig(cp: ControlPlane): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  return kc;
}

/** Who listens on a TCP port (from `ss`), or "" when nobody does. */
function listenerOn(port: number): string {
  const out = spawnSync("ss", ["-ltnpH", `sport = :${port}`], { encoding: "utf8" });
  return out.stdout.trim();
}

/** Asserts a stopped control plane left no process, port or directory behind. */
async function expectGone(cp: ControlPlane, pids: number[]): Promise<void> {
  for (const pid of pids) expect(await cmdlineMentions(pid, cp.dir), `pid ${pid} still runs`).toBe(false);
  for (const port of Object.values(cp.ports)) expect(listenerOn(port), `port ${port} still open`).toBe("");
  expect(existsSync(cp.dir)).toBe(false);
  expect((await listInstances()).some((r) => r.dir === cp.dir)).toBe(false);
}

async function newDir(name: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `narad-${name}-`));
}

describe("local control plane", () => {
  let binaries: Binaries;
  let cp: ControlPlane;

  beforeAll(async () => {
    binaries = await ensureBinaries(log);
    const started = Date.now();
    cp = await startControlPlane({ dir: await newDir("cp"), log, binaries });
    log(`warm start took ${Date.now() - started} ms`);
  });

  afterAll(async () => {
    await cp?.stop();
  });

  it("reports the pinned Kubernetes version", async () => {
    const version = await adminConfig(cp).makeApiClient(VersionApi).getCode();
    expect(version.gitVersion).toBe(`v${K8S_VERSION}`);
    expect(version.minor).toBe(K8S_VERSION.split(".")[1]);
  });

  it("stores objects through the admin kubeconfig", async () => {
    const core = adminConfig(cp).makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
    await core.createNamespacedConfigMap({
      namespace: NAMESPACE,
      body: { metadata: { name: "hello" }, data: { greeting: "namaste" } },
    });
    const read = await core.readNamespacedConfigMap({ namespace: NAMESPACE, name: "hello" });
    expect(read.data?.["greeting"]).toBe("namaste");
    // kcm's root-ca-cert-publisher fills every namespace with the cluster CA.
    const rootCa = await waitFor(
      () => core.readNamespacedConfigMap({ namespace: NAMESPACE, name: "kube-root-ca.crt" }),
      { timeoutMs: 30_000, what: "kube-root-ca.crt in the test namespace" },
    );
    expect(rootCa.data?.["ca.crt"]).toContain("BEGIN CERTIFICATE");
  });

  it("enforces RBAC on TokenRequest service-account tokens", async () => {
    const admin = adminConfig(cp);
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespacedServiceAccount({
      namespace: NAMESPACE,
      body: { metadata: { name: "nobody" } },
    });
    const tokenRequest = await core.createNamespacedServiceAccountToken({
      name: "nobody",
      namespace: NAMESPACE,
      body: { spec: { audiences: [cp.serviceAccountIssuer], expirationSeconds: 600 } },
    });
    const token = tokenRequest.status?.token;
    expect(token).toBeTruthy();

    const asNobody = new KubeConfig();
    asNobody.loadFromOptions({
      clusters: [{ name: "c", server: cp.server, caFile: cp.caCertPath }],
      users: [{ name: "nobody", token }],
      contexts: [{ name: "nobody", cluster: "c", user: "nobody" }],
      currentContext: "nobody",
    });
    const error = await asNobody
      .makeApiClient(CoreV1Api)
      .listNamespacedSecret({ namespace: NAMESPACE })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(ApiException);
    // 403, not 401: the token authenticated and RBAC refused it.
    expect((error as ApiException<unknown>).code).toBe(403);
    expect(String((error as ApiException<unknown>).body)).toContain(
      `system:serviceaccount:${NAMESPACE}:nobody`,
    );
  });

  it("runs the controllers: a Deployment gets a ReplicaSet and a Pod", async () => {
    const kc = adminConfig(cp);
    const labels = { app: "web" };
    await kc.makeApiClient(AppsV1Api).createNamespacedDeployment({
      namespace: NAMESPACE,
      body: {
        metadata: { name: "web" },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: "web", image: "example/web:1" }] } },
        },
      },
    });
    const replicaSet = await waitFor(
      async () =>
        (await kc.makeApiClient(AppsV1Api).listNamespacedReplicaSet({ namespace: NAMESPACE })).items[0],
      { timeoutMs: 30_000, what: "the Deployment's ReplicaSet" },
    );
    expect(replicaSet.metadata?.ownerReferences?.[0]?.name).toBe("web");
    const pod = await waitFor(
      async () => (await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: NAMESPACE })).items[0],
      { timeoutMs: 30_000, what: "the ReplicaSet's Pod" },
    );
    // No scheduler and no node agent here.
    expect(pod.status?.phase).toBe("Pending");
  });

  it("serves kubectl and helm", async () => {
    const kubectl = commandRunner(binaries.kubectl, cp.kubeconfigPath);
    const version = JSON.parse((await kubectl(["version", "-o", "json"])).stdout) as {
      clientVersion: { gitVersion: string };
      serverVersion: { gitVersion: string };
    };
    expect(version.serverVersion.gitVersion).toBe(`v${K8S_VERSION}`);
    log(`kubectl client ${version.clientVersion.gitVersion} (${binaries.kubectl})`);
    const configMaps = await kubectl([
      "get",
      "configmap",
      "hello",
      "-n",
      NAMESPACE,
      "-o",
      "jsonpath={.data.greeting}",
    ]);
    expect(configMaps.stdout).toBe("namaste");

    const helm = commandRunner(binaries.helm, cp.kubeconfigPath);
    expect((await helm(["version", "--short"])).stdout).toMatch(/^v\d+\./);
    // A chart that records the cluster version helm sees (.Capabilities).
    const chart = join(cp.dir, "chart");
    await mkdir(join(chart, "templates"), { recursive: true });
    await writeFile(
      join(chart, "Chart.yaml"),
      'apiVersion: v2\nname: probe\nversion: 0.1.0\nkubeVersion: ">=1.36.0-0"\n',
    );
    await writeFile(
      join(chart, "templates", "cm.yaml"),
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: helm-probe\ndata:\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n",
    );
    await helm(["install", "probe", chart, "-n", NAMESPACE, "--wait", "--timeout", "60s"]);
    const seen = await kubectl([
      "get",
      "configmap",
      "helm-probe",
      "-n",
      NAMESPACE,
      "-o",
      "jsonpath={.data.kube}",
    ]);
    expect(seen.stdout).toBe(`v${K8S_VERSION}`);
    expect((await helm(["list", "-n", NAMESPACE, "-q"])).stdout.trim()).toBe("probe");
  });

  it("runs a second control plane side by side and stops it cleanly", async () => {
    const second = await startControlPlane({ dir: await newDir("cp2"), log, binaries });
    const pids = second.components().map((c) => c.pid);
    try {
      expect(second.server).not.toBe(cp.server);
      const core = adminConfig(second).makeApiClient(CoreV1Api);
      const names = (await core.listNamespace()).items.map((n) => n.metadata?.name);
      expect(names).not.toContain(NAMESPACE); // separate etcd
      // The first one still answers.
      await adminConfig(cp).makeApiClient(CoreV1Api).readNamespace({ name: NAMESPACE });
    } finally {
      await second.stop();
    }
    await expectGone(second, pids);
  });

  it("kills the components and cleans up when the owner process dies", async () => {
    const dir = await newDir("orphan");
    // A separate owner process that starts a control plane, prints its pids and is then SIGKILLed.
    const script = [
      `import { startControlPlane } from ${JSON.stringify(join(import.meta.dirname, "control-plane.ts"))};`,
      `const cp = await startControlPlane({ dir: ${JSON.stringify(dir)}, binaries: ${JSON.stringify(binaries)} });`,
      "console.log(JSON.stringify({ pids: cp.components().map((c) => c.pid), ports: cp.ports }));",
      "setInterval(() => {}, 1000);",
    ].join("\n");
    const owner = spawn(process.execPath, ["--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const line = await new Promise<string>((resolve, reject) => {
      owner.stdout.setEncoding("utf8").once("data", resolve);
      owner.once("exit", (code) => reject(new Error(`owner exited early (${code})`)));
    });
    const { pids, ports } = JSON.parse(line) as { pids: number[]; ports: Record<string, number> };
    expect(pids.every(isAlive)).toBe(true);
    owner.kill("SIGKILL");
    await waitFor(async () => !(await Promise.all(pids.map((p) => cmdlineMentions(p, dir)))).some(Boolean), {
      timeoutMs: 10_000,
      what: "the orphaned components to die with their owner",
    });
    // The directory and registry entry are swept by the next start (or `platform down`).
    await reapStaleInstances(log);
    expect(existsSync(dir)).toBe(false);
    // A killed process drops its command line before its sockets: wait for both.
    await waitFor(async () => Object.values(ports).every((port) => listenerOn(port) === ""), {
      timeoutMs: 10_000,
      what: "the killed components' ports to close",
    });
    for (const port of Object.values(ports)) expect(listenerOn(port), `port ${port} still open`).toBe("");
  });

  it("stops the first control plane without leftovers", async () => {
    const pids = cp.components().map((c) => c.pid);
    await cp.stop();
    await expectGone(cp, pids);
  });
});
