// The node agent against a real control plane (etcd, kube-apiserver,
// kube-controller-manager): the StatefulSet controller, PV binder and garbage
// collector are the real ones; pods are local processes on 127.<N>.x.y.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type V1Pod,
  type V1StatefulSet,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../log.ts";
import { type Platform, startPlatform, waitFor } from "../platform.ts";
import { isAlive, podProcessPid } from "./pids.ts";

const log = stderrLog("node-agent-test");
const NS = "agent-e2e";
const STS = "web";
const ECHO_PORT = 8080;
const POD_TIMEOUT_MS = 90_000;
const IN_CLUSTER_CLIENT = join(import.meta.dirname, "testdata", "in-cluster-client.ts");

function statefulSet(replicas: number): V1StatefulSet {
  return {
    metadata: { name: STS, namespace: NS },
    spec: {
      serviceName: STS,
      replicas,
      selector: { matchLabels: { app: STS } },
      template: {
        metadata: { labels: { app: STS } },
        spec: {
          terminationGracePeriodSeconds: 5,
          containers: [
            {
              name: "echo",
              image: "narad.test/echo:1",
              ports: [{ name: "http", containerPort: ECHO_PORT }],
              env: [{ name: "DATA_DIR", value: "/data" }],
              startupProbe: {
                httpGet: { path: "/healthz", port: "http" },
                periodSeconds: 1,
                failureThreshold: 30,
              },
              readinessProbe: {
                httpGet: { path: "/ready", port: "http" },
                periodSeconds: 1,
                failureThreshold: 1,
              },
              livenessProbe: {
                httpGet: { path: "/healthz", port: ECHO_PORT },
                periodSeconds: 2,
                failureThreshold: 3,
              },
              volumeMounts: [{ name: "data", mountPath: "/data" }],
            },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: "data" },
          spec: {
            accessModes: ["ReadWriteOnce"],
            storageClassName: "narad-local",
            resources: { requests: { storage: "1Gi" } },
          },
        },
      ],
    },
  };
}

const isReady = (p: V1Pod | undefined) =>
  p?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

describe("node agent", () => {
  let platform: Platform;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let rbac: RbacAuthorizationV1Api;
  let stateDir: string;

  const getPod = async (name: string): Promise<V1Pod | undefined> => {
    try {
      return await core.readNamespacedPod({ name, namespace: NS });
    } catch {
      return undefined;
    }
  };
  const pvDir = async (claim: string): Promise<string> => {
    const pvc = await core.readNamespacedPersistentVolumeClaim({ name: claim, namespace: NS });
    const pv = await core.readPersistentVolume({ name: pvc.spec!.volumeName! });
    return pv.spec!.hostPath!.path;
  };
  const pid = (pod: string) => podProcessPid(stateDir, NS, pod, "echo");

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), "narad-agent-e2e-"));
    // NARAD_KEEP=1 keeps the platform dir (agent and pod logs) for post-mortems.
    platform = await startPlatform({ dir, log, keep: process.env["NARAD_KEEP"] === "1" });
    stateDir = join(platform.dir, "node");
    core = platform.kubeConfig.makeApiClient(CoreV1Api);
    apps = platform.kubeConfig.makeApiClient(AppsV1Api);
    rbac = platform.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    // The serviceaccount controller creates "default" shortly after the namespace.
    await waitFor(() => core.readNamespacedServiceAccount({ name: "default", namespace: NS }), {
      timeoutMs: 30_000,
      what: "default service account",
    });
  });

  afterAll(async () => {
    await platform?.stop({ keep: process.env["NARAD_KEEP"] === "1" });
  });

  it("registers a Ready node with a lease", async () => {
    const node = await core.readNode({ name: platform.nodeName });
    expect(node.status?.nodeInfo?.kubeletVersion).toBe("v1.36.3");
    expect(node.status?.allocatable).toMatchObject({ cpu: "2", memory: "24Gi", pods: "110" });
    // kcm may briefly taint a brand-new node before it has seen its status; it must not stay.
    await waitFor(
      async () => ((await core.readNode({ name: platform.nodeName })).spec?.taints ?? []).length === 0,
      {
        timeoutMs: 30_000,
        what: "node without taints",
      },
    );
  });

  it("runs a 3-replica StatefulSet whose readiness follows the ready file on its PVC", async () => {
    await core.createNamespacedService({
      namespace: NS,
      body: {
        metadata: { name: STS },
        spec: { clusterIP: "None", selector: { app: STS }, ports: [{ name: "http", port: ECHO_PORT }] },
      },
    });
    await apps.createNamespacedStatefulSet({ namespace: NS, body: statefulSet(3) });
    for (let i = 0; i < 3; i++) {
      const name = `${STS}-${i}`;
      const running = await waitFor(
        async () => {
          const p = await getPod(name);
          return p?.status?.phase === "Running" && p.status.podIP ? p : undefined;
        },
        { timeoutMs: POD_TIMEOUT_MS, what: `${name} Running` },
      );
      expect(running.status?.podIP?.startsWith(`${platform.podIpPrefix}.`)).toBe(true);
      // Without the ready file the readiness probe fails, and OrderedReady holds the next pod back.
      await new Promise((r) => setTimeout(r, 3_000));
      expect(isReady(await getPod(name))).toBe(false);
      if (i < 2) expect(await getPod(`${STS}-${i + 1}`)).toBeUndefined();
      writeFileSync(join(await pvDir(`data-${name}`), "ready"), "");
      await waitFor(async () => isReady(await getPod(name)), { timeoutMs: 30_000, what: `${name} Ready` });
    }
    const ips = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const p = (await getPod(`${STS}-${i}`))!;
      ips.add(p.status!.podIP!);
      expect(pid(`${STS}-${i}`)).not.toBeNull();
      const info = (await (await fetch(`http://${p.status!.podIP}:${ECHO_PORT}/info`)).json()) as {
        counter: number;
        hostname: string;
      };
      expect(info).toMatchObject({ counter: 1, hostname: `${STS}-${i}` });
      expect(readFileSync(join(await pvDir(`data-${STS}-${i}`), "counter"), "utf8").trim()).toBe("1");
    }
    expect(ips.size).toBe(3);
    // Pod DNS names (hostname.subdomain) resolve inside pods through the agent's /etc/hosts.
    const web0 = (await getPod(`${STS}-0`))!.status!.podIP!;
    const web2 = (await getPod(`${STS}-2`))!.status!.podIP!;
    await waitFor(
      async () => {
        const name = `${STS}-2.${STS}.${NS}.svc.cluster.local`;
        const res = await fetch(`http://${web0}:${ECHO_PORT}/resolve?name=${name}`);
        return (await res.text()) === web2;
      },
      { timeoutMs: 10_000, what: "web-2's DNS name to resolve in web-0" },
    );
    // The Service name resolves to a ready endpoint (from kcm's EndpointSlices).
    await waitFor(
      async () => {
        const res = await fetch(`http://${web0}:${ECHO_PORT}/resolve?name=${STS}.${NS}.svc.cluster.local`);
        return ips.has(await res.text());
      },
      { timeoutMs: 20_000, what: "the Service name to resolve to a pod IP" },
    );
    await waitFor(
      async () =>
        (await apps.readNamespacedStatefulSet({ name: STS, namespace: NS })).status?.readyReplicas === 3,
      { timeoutMs: 30_000, what: "readyReplicas 3" },
    );
  });

  it("brings a deleted pod back on the same PVC with its data", async () => {
    const old = (await getPod(`${STS}-1`))!;
    const oldPid = pid(`${STS}-1`)!;
    const dirBefore = await pvDir(`data-${STS}-1`);
    writeFileSync(join(dirBefore, "payload"), "kept");
    await core.deleteNamespacedPod({ name: `${STS}-1`, namespace: NS });
    const fresh = await waitFor(
      async () => {
        const p = await getPod(`${STS}-1`);
        return p && p.metadata?.uid !== old.metadata?.uid && isReady(p) ? p : undefined;
      },
      { timeoutMs: POD_TIMEOUT_MS, what: "web-1 replaced and Ready" },
    );
    expect(isAlive(oldPid)).toBe(false);
    expect(await pvDir(`data-${STS}-1`)).toBe(dirBefore);
    expect(readFileSync(join(dirBefore, "counter"), "utf8").trim()).toBe("2");
    const file = await fetch(`http://${fresh.status!.podIP}:${ECHO_PORT}/file?path=/data/payload`);
    expect(await file.text()).toBe("kept");
  });

  it("restarts a killed process and bumps restartCount", async () => {
    const victim = pid(`${STS}-0`)!;
    process.kill(victim, "SIGKILL");
    const p = await waitFor(
      async () => {
        const pod = await getPod(`${STS}-0`);
        const cs = pod?.status?.containerStatuses?.[0];
        return cs?.restartCount === 1 && cs.state?.running && isReady(pod) ? pod : undefined;
      },
      { timeoutMs: 60_000, what: "web-0 restarted" },
    );
    const cs = p.status!.containerStatuses![0]!;
    expect(cs.lastState?.terminated?.exitCode).toBe(137);
    const now = pid(`${STS}-0`);
    expect(now).not.toBeNull();
    expect(now).not.toBe(victim);
  });

  it("stops the processes of pods removed by a scale-down", async () => {
    const gone = [pid(`${STS}-1`)!, pid(`${STS}-2`)!];
    await apps.patchNamespacedStatefulSetScale(
      { name: STS, namespace: NS, body: { spec: { replicas: 1 } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    await waitFor(async () => !(await getPod(`${STS}-1`)) && !(await getPod(`${STS}-2`)), {
      timeoutMs: POD_TIMEOUT_MS,
      what: "web-1 and web-2 deleted",
    });
    for (const p of gone) expect(isAlive(p)).toBe(false);
    expect(pid(`${STS}-0`)).not.toBeNull();
    expect(existsSync(join(stateDir, "pods", `${NS}_${STS}-2`, "echo.pid"))).toBe(false);
  });

  it("gives pods an in-cluster identity limited by RBAC", async () => {
    await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: "lister" } } });
    await core.createNamespacedConfigMap({
      namespace: NS,
      body: { metadata: { name: "visible" }, data: { a: "1" } },
    });
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: "client" },
        spec: {
          serviceAccountName: "lister",
          containers: [
            { name: "client", image: "narad.test/node", command: ["node"], args: [IN_CLUSTER_CLIENT] },
          ],
        },
      },
    });
    const podIP = await waitFor(
      async () => {
        const p = await getPod("client");
        return p?.status?.phase === "Running" ? p.status.podIP : undefined;
      },
      { timeoutMs: POD_TIMEOUT_MS, what: "client Running" },
    );
    type Result = { ok: boolean; code?: number; names?: string[] };
    const result = async (): Promise<Result> =>
      (await (await fetch(`http://${podIP}:8080/`)).json()) as Result;
    const denied = await waitFor(
      async () => {
        const r = await result();
        return r.code === 403 ? r : undefined;
      },
      { timeoutMs: 30_000, what: "a 403 without RBAC" },
    );
    expect(denied.ok).toBe(false);
    await rbac.createNamespacedRole({
      namespace: NS,
      body: {
        metadata: { name: "cm-reader" },
        rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["list"] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: NS,
      body: {
        metadata: { name: "cm-reader" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "cm-reader" },
        subjects: [{ kind: "ServiceAccount", name: "lister", namespace: NS }],
      },
    });
    const allowed = await waitFor(
      async () => {
        const r = await result();
        return r.ok ? r : undefined;
      },
      { timeoutMs: 30_000, what: "list allowed after RBAC" },
    );
    expect(allowed.names).toContain("visible");
  });

  it("runs init containers, then containers with config volumes, env and the token; Never → Succeeded", async () => {
    await core.createNamespacedConfigMap({
      namespace: NS,
      body: { metadata: { name: "cfg" }, data: { key: "v1" } },
    });
    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: "sec" }, stringData: { pw: "s3" } },
    });
    const script = [
      "set -e",
      'test "$(cat /work/init)" = init-ran',
      'test "$(cat /etc/cfg/key)" = v1',
      'test "$(cat /etc/sec/pw)" = s3',
      'test "$FOO" = v1 && test "$PW" = s3 && test "$ME" = job',
      'test "$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)" = $NS_NAME',
      "test -s /var/run/secrets/kubernetes.io/serviceaccount/token",
      'test "$(cat /etc/podinfo/name)" = job',
      "grep -q 'kind=\"batch\"' /etc/podinfo/labels",
      'test "$S_pw" = s3',
      "echo all-good $(GREETING)",
    ].join("\n");
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: "job", labels: { kind: "batch" } },
        spec: {
          restartPolicy: "Never",
          volumes: [
            { name: "work", emptyDir: {} },
            { name: "cfg", configMap: { name: "cfg" } },
            { name: "sec", secret: { secretName: "sec" } },
            {
              name: "podinfo",
              downwardAPI: {
                items: [
                  { path: "name", fieldRef: { fieldPath: "metadata.name" } },
                  { path: "labels", fieldRef: { fieldPath: "metadata.labels" } },
                ],
              },
            },
          ],
          initContainers: [
            {
              name: "init",
              image: "narad.test/echo",
              command: ["/bin/sh", "-c", "echo init-ran > /work/init"],
              volumeMounts: [{ name: "work", mountPath: "/work" }],
            },
          ],
          containers: [
            {
              name: "main",
              image: "narad.test/echo",
              command: ["/bin/sh", "-c", script],
              env: [
                { name: "GREETING", value: "hello" },
                { name: "FOO", valueFrom: { configMapKeyRef: { name: "cfg", key: "key" } } },
                { name: "PW", valueFrom: { secretKeyRef: { name: "sec", key: "pw" } } },
                { name: "ME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
                { name: "NS_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
              ],
              volumeMounts: [
                { name: "work", mountPath: "/work" },
                { name: "cfg", mountPath: "/etc/cfg" },
                { name: "sec", mountPath: "/etc/sec", readOnly: true },
                { name: "podinfo", mountPath: "/etc/podinfo" },
              ],
              envFrom: [{ secretRef: { name: "sec" }, prefix: "S_" }],
            },
          ],
        },
      },
    });
    const done = await waitFor(
      async () => {
        const p = await getPod("job");
        return p?.status?.phase === "Succeeded" || p?.status?.phase === "Failed" ? p : undefined;
      },
      { timeoutMs: POD_TIMEOUT_MS, what: "job finished" },
    );
    const log = readFileSync(join(stateDir, "pods", `${NS}_job`, "main.log"), "utf8");
    expect(done.status?.phase, log).toBe("Succeeded");
    expect(log).toContain("all-good hello");
    expect(done.status?.initContainerStatuses?.[0]?.state?.terminated?.exitCode).toBe(0);
    expect(done.status?.containerStatuses?.[0]?.state?.terminated?.reason).toBe("Completed");
  });

  it("restarts OnFailure containers with backoff, fails Never pods, and reports unknown images", async () => {
    const pod = (name: string, restartPolicy: string, image = "narad.test/echo"): V1Pod => ({
      metadata: { name },
      spec: { restartPolicy, containers: [{ name: "c", image, command: ["/bin/sh", "-c", "exit 3"] }] },
    });
    await core.createNamespacedPod({ namespace: NS, body: pod("crashy", "OnFailure") });
    await core.createNamespacedPod({ namespace: NS, body: pod("failing", "Never") });
    await core.createNamespacedPod({
      namespace: NS,
      body: pod("noimage", "Always", "docker.io/library/nginx:1"),
    });
    const crashy = await waitFor(
      async () => {
        const p = await getPod("crashy");
        return (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 2 ? p : undefined;
      },
      { timeoutMs: 30_000, what: "crashy restarted twice" },
    );
    expect(crashy.status?.phase).toBe("Running");
    expect(crashy.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode).toBe(3);
    const failing = await waitFor(
      async () => {
        const p = await getPod("failing");
        return p?.status?.phase === "Failed" ? p : undefined;
      },
      { timeoutMs: 30_000, what: "failing pod Failed" },
    );
    expect(failing.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(3);
    expect(failing.status?.containerStatuses?.[0]?.restartCount).toBe(0);
    const noimage = await waitFor(
      async () => {
        const p = await getPod("noimage");
        return p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === "ErrImagePull" ? p : undefined;
      },
      { timeoutMs: 30_000, what: "ErrImagePull" },
    );
    expect(noimage.status?.containerStatuses?.[0]?.state?.waiting?.message).toContain(
      "image not in node-agent table",
    );
    for (const name of ["crashy", "failing", "noimage"]) {
      await core.deleteNamespacedPod({ name, namespace: NS });
    }
  });

  it("restarts a container whose liveness probe fails and runs preStop before SIGTERM on delete", async () => {
    // Under the platform dir, so platform.stop() removes it.
    const hookDir = join(platform.dir, "hook");
    // Created up front: the first process may be killed before it gets to create it.
    mkdirSync(join(hookDir, "data"), { recursive: true });
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: "unhealthy" },
        spec: {
          terminationGracePeriodSeconds: 10,
          volumes: [{ name: "hook", hostPath: { path: hookDir } }],
          containers: [
            {
              name: "echo",
              image: "narad.test/echo",
              env: [{ name: "DATA_DIR", value: "/hook/data" }],
              // /ready fails (no ready file), so this liveness probe kills the container.
              livenessProbe: {
                httpGet: { path: "/ready", port: ECHO_PORT },
                periodSeconds: 1,
                failureThreshold: 2,
              },
              lifecycle: {
                preStop: { exec: { command: ["/bin/sh", "-c", "echo $HOSTNAME > /hook/prestop"] } },
              },
              volumeMounts: [{ name: "hook", mountPath: "/hook" }],
            },
          ],
        },
      },
    });
    await waitFor(
      async () => ((await getPod("unhealthy"))?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1,
      { timeoutMs: 60_000, what: "liveness restart" },
    );
    // Make it healthy, then delete: the preStop hook must have run inside the container's mounts.
    writeFileSync(join(hookDir, "data", "ready"), "");
    await waitFor(async () => (await getPod("unhealthy"))?.status?.containerStatuses?.[0]?.state?.running, {
      timeoutMs: 60_000,
      what: "unhealthy running again",
    });
    await core.deleteNamespacedPod({ name: "unhealthy", namespace: NS });
    await waitFor(async () => !(await getPod("unhealthy")), { timeoutMs: 30_000, what: "unhealthy deleted" });
    expect(readFileSync(join(hookDir, "prestop"), "utf8").trim()).toBe("unhealthy");
  });

  it("deletes the PV and its directory when a claim is deleted, and grows capacity on resize", async () => {
    const claim = `data-${STS}-2`;
    const dir = await pvDir(claim);
    const pvName = (await core.readNamespacedPersistentVolumeClaim({ name: claim, namespace: NS })).spec!
      .volumeName!;
    expect(existsSync(dir)).toBe(true);
    await core.deleteNamespacedPersistentVolumeClaim({ name: claim, namespace: NS });
    await waitFor(
      async () => {
        try {
          await core.readPersistentVolume({ name: pvName });
          return false;
        } catch {
          return true;
        }
      },
      { timeoutMs: 60_000, what: `PV ${pvName} deleted` },
    );
    expect(existsSync(dir)).toBe(false);

    await core.patchNamespacedPersistentVolumeClaim(
      {
        name: `data-${STS}-0`,
        namespace: NS,
        body: { spec: { resources: { requests: { storage: "2Gi" } } } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    await waitFor(
      async () =>
        (await core.readNamespacedPersistentVolumeClaim({ name: `data-${STS}-0`, namespace: NS })).status
          ?.capacity?.["storage"] === "2Gi",
      { timeoutMs: 30_000, what: "PVC capacity 2Gi" },
    );
  });

  it("after an agent crash: kills orphans, restarts surviving pods, finalises pods deleted meanwhile", async () => {
    const agent = platform.nodeAgent!;
    const webPid = pid(`${STS}-0`)!;
    const clientPid = podProcessPid(stateDir, NS, "client", "client")!;
    const before = (await getPod(`${STS}-0`))!.status!.containerStatuses![0]!.restartCount;
    process.kill(agent.pid, "SIGKILL");
    await agent.exited;
    // Both pod processes outlive the agent.
    expect(isAlive(webPid) && isAlive(clientPid)).toBe(true);
    await core.deleteNamespacedPod({ name: "client", namespace: NS });
    const kubeconfig = await platform.controlPlane.issueKubeconfig({
      name: "node-agent-2",
      user: `system:node:${platform.nodeName}`,
      groups: ["system:nodes", "system:masters"],
    });
    await platform.controlPlane.startComponent({
      name: "node-agent-2",
      command: process.execPath,
      args: [
        join(import.meta.dirname, "main.ts"),
        "--kubeconfig",
        kubeconfig,
        "--node-name",
        platform.nodeName,
        "--state-dir",
        stateDir,
        "--pod-ip-prefix",
        platform.podIpPrefix,
      ],
      parentDeathSignal: "SIGTERM",
    });
    await waitFor(async () => !(await getPod("client")), { timeoutMs: 60_000, what: "client pod finalised" });
    expect(isAlive(clientPid)).toBe(false);
    expect(isAlive(webPid)).toBe(false);
    const web = await waitFor(
      async () => {
        const p = await getPod(`${STS}-0`);
        return isReady(p) && p?.status?.containerStatuses?.[0]?.restartCount === before + 1 ? p : undefined;
      },
      { timeoutMs: 60_000, what: "web-0 restarted by the new agent" },
    );
    expect(pid(`${STS}-0`)).not.toBe(webPid);
    expect(web.status?.podIP?.startsWith(`${platform.podIpPrefix}.`)).toBe(true);
  });
});
