// `kubectl narad` against a real API server: the plugin executable
// (bin/kubectl-narad.js) runs as a subprocess, found on PATH by the real
// kubectl too. The NaradCluster's status is written through the status
// subresource the way the operator writes it, with one broker pod (bound to
// a Node object, its status patched Ready) so the members table joins pods.
// No operator and no kubelet run: the test checks what the plugin reads and
// writes, not what the operator then does (rolls, rebalances: their own
// suites). port-forward needs a kubelet: unit-tested only (plugin.test.ts).

import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, startControlPlane } from "../platform/control-plane.ts";
import { type CommandRunner, commandRunner, run, waitFor } from "../platform/helpers.ts";
import { stderrLog } from "../platform/log.ts";
import { ensureBinaries } from "../platform/tools.ts";

const REPO = resolve(import.meta.dirname, "../..");
const PLUGIN = join(REPO, "bin/kubectl-narad.js");
const NS = "shop";
const log = stderrLog("kubectl-plugin-e2e");
const VERSION = (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string }).version;

let cp: ControlPlane;
let kubectl: CommandRunner;
let kubectlBinary: string;
/** PATH with this test's Node 24 first (for `#!/usr/bin/env node`) and a dir holding `kubectl-narad`. */
let pluginPath: string;
/** A copy of the admin kubeconfig whose extra context "shop-ctx" defaults to namespace shop. */
let contextKubeconfig: string;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** The plugin as kubectl would start it, KUBECONFIG set to the admin kubeconfig unless env says otherwise. */
function plugin(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [PLUGIN, ...args],
      { env: { ...process.env, KUBECONFIG: cp.kubeconfigPath, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : -1;
        done({ code, stdout, stderr });
      },
    );
  });
}

async function annotations(name: string): Promise<Record<string, string>> {
  const out = await kubectl([
    "get",
    "naradcluster",
    name,
    "-n",
    NS,
    "-o",
    "jsonpath={.metadata.annotations}",
  ]);
  return out.stdout === "" ? {} : (JSON.parse(out.stdout) as Record<string, string>);
}

const nowIso = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

/**
 * node-a reports Ready with a fresh heartbeat, then demo-0's Ready condition
 * is set: without a kubelet the node lifecycle controller marks the node
 * Unknown after its grace period (and the pod not Ready), so tests that need
 * a Ready pod call this first.
 */
async function markReady(): Promise<void> {
  const t = nowIso();
  await kubectl([
    "patch",
    "node",
    "node-a",
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({
      status: {
        conditions: [
          {
            type: "Ready",
            status: "True",
            reason: "KubeletReady",
            message: "e2e",
            lastHeartbeatTime: t,
            lastTransitionTime: t,
          },
        ],
      },
    }),
  ]);
  await kubectl([
    "patch",
    "pod",
    "demo-0",
    "-n",
    NS,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({ status: { conditions: [{ type: "Ready", status: "True", lastTransitionTime: t }] } }),
  ]);
}

beforeAll(async () => {
  const binaries = await ensureBinaries(log);
  kubectlBinary = binaries.kubectl;
  const dir = await mkdtemp(join(tmpdir(), "narad-kubectl-plugin-e2e-"));
  cp = await startControlPlane({ dir, log, binaries });
  kubectl = commandRunner(binaries.kubectl, cp.kubeconfigPath);
  await kubectl(["apply", "--server-side", "-f", join(REPO, "crds")]);
  await kubectl(["wait", "--for=condition=Established", "crd/naradclusters.narad.dev"]);
  await kubectl(["create", "namespace", NS]);

  const binDir = join(dir, "plugin-bin");
  await mkdir(binDir);
  await symlink(PLUGIN, join(binDir, "kubectl-narad"));
  await symlink(join(REPO, "bin/kubectl_complete-narad.js"), join(binDir, "kubectl_complete-narad"));
  pluginPath = [dirname(process.execPath), binDir, process.env.PATH ?? ""].join(delimiter);
  contextKubeconfig = join(dir, "context.kubeconfig");
  const cfg = commandRunner(binaries.kubectl, contextKubeconfig);
  await writeFile(contextKubeconfig, (await kubectl(["config", "view", "--raw", "--flatten"])).stdout);
  const user = (await kubectl(["config", "view", "-o", "jsonpath={.contexts[0].context.user}"])).stdout;
  const clusterName = (await kubectl(["config", "view", "-o", "jsonpath={.contexts[0].context.cluster}"]))
    .stdout;
  await cfg([
    "config",
    "set-context",
    "shop-ctx",
    `--cluster=${clusterName}`,
    `--user=${user}`,
    `--namespace=${NS}`,
  ]);

  // The cluster "demo": 2 replicas, one member with a Ready pod on node-a, one without a pod.
  await kubectl(["apply", "--server-side", "-f", "-"], {
    input: `apiVersion: narad.dev/v1alpha1
kind: NaradCluster
metadata: {name: demo, namespace: ${NS}}
spec: {replicas: 2, image: "ghcr.io/narad/narad:9.9.9"}
---
apiVersion: narad.dev/v1alpha1
kind: NaradCluster
metadata: {name: open, namespace: ${NS}}
spec: {replicas: 1, security: {auth: {enabled: false}}}
---
apiVersion: v1
kind: Secret
metadata: {name: demo-users, namespace: ${NS}}
stringData: {username: admin, password: e2e-pass-1234, users.json: "{}"}
---
apiVersion: v1
kind: Node
metadata: {name: node-a}
`,
  });
  // Pods need the namespace's default ServiceAccount, which a controller creates shortly after the namespace.
  await waitFor(
    async () =>
      (await kubectl(["get", "serviceaccount", "default", "-n", NS], { allowFailure: true })).code === 0,
    {
      timeoutMs: 60_000,
      what: `the default ServiceAccount of ${NS}`,
    },
  );
  const t = nowIso();
  await kubectl(["apply", "--server-side", "-f", "-"], {
    input: `apiVersion: v1
kind: Pod
metadata:
  name: demo-0
  namespace: ${NS}
  labels: {app.kubernetes.io/name: narad, app.kubernetes.io/instance: demo, narad.dev/cluster: demo}
spec:
  nodeName: node-a
  containers: [{name: narad, image: "ghcr.io/narad/narad:9.9.9"}]
`,
  });
  await markReady();
  const status = {
    observedGeneration: 1,
    phase: "Scaling",
    replicas: 1,
    readyReplicas: 1,
    membershipEpoch: 5,
    currentRevision: "demo-6d4f",
    updateRevision: "demo-6d4f",
    conditions: [
      {
        type: "Ready",
        status: "False",
        reason: "MembersNotReady",
        message: "1/2 ready",
        lastTransitionTime: t,
      },
      {
        type: "Progressing",
        status: "True",
        reason: "Rebalancing",
        message: "1 move",
        lastTransitionTime: t,
      },
    ],
    members: [
      {
        id: "demo-0",
        pod: "demo-0",
        ordinal: 0,
        state: "Active",
        since: t,
        walPendingRecords: 42,
        revision: "demo-6d4f",
      },
      { id: "demo-1", pod: "demo-1", ordinal: 1, state: "Down", since: t },
    ],
    scale: {
      movesDone: 3,
      moves: [
        { topic: "orders", partition: 4, from: "demo-1", to: "demo-0", startedAt: t, state: "copying" },
      ],
    },
  };
  await kubectl([
    "patch",
    "naradcluster",
    "demo",
    "-n",
    NS,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({ status }),
  ]);
}, 600_000);

afterAll(async () => {
  await cp?.stop();
});

describe("kubectl narad status", () => {
  it("shows the status the operator wrote, joined with the pods", async () => {
    const r = await plugin(["status", "demo", "-n", NS]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`NaradCluster ${NS}/demo`);
    expect(r.stdout).toContain("Phase:       Scaling   (observed generation 1 of 1)");
    expect(r.stdout).toContain("Replicas:    2 desired, 1 pods, 1 ready");
    expect(r.stdout).toContain("Image:       ghcr.io/narad/narad:9.9.9");
    expect(r.stdout).toMatch(/Ready\s+False\s+MembersNotReady\s+\d+s\s+1\/2 ready/);
    expect(r.stdout).toMatch(/demo-0\s+Active\s+\d+s\s+demo-0\s+true\s+node-a\s+42\s+demo-6d4f/);
    expect(r.stdout).toMatch(/demo-1\s+Down\s+\d+s\s+demo-1\s+no pod\s+-\s+-\s+-/);
    expect(r.stdout).toMatch(/orders\s+4\s+demo-1\s+demo-0\s+copying/);
    expect(r.stdout).toContain("moves done:      3");
  });

  it("-o json and -o yaml carry the same view", async () => {
    const json = await plugin(["status", "demo", "-n", NS, "-o", "json"]);
    expect(json.code).toBe(0);
    const view = JSON.parse(json.stdout);
    expect(view).toMatchObject({
      name: "demo",
      namespace: NS,
      phase: "Scaling",
      replicas: { spec: 2, pods: 1, ready: 1 },
      members: [
        { id: "demo-0", state: "Active", ready: true, node: "node-a", walPendingRecords: 42 },
        { id: "demo-1", state: "Down" },
      ],
      scale: { movesDone: 3, moves: [{ topic: "orders", partition: 4, state: "copying" }] },
    });
    expect(view.members[1]).not.toHaveProperty("ready");
    const yaml = await plugin(["status", "demo", "-n", NS, "-o", "yaml"]);
    expect(yaml.code).toBe(0);
    expect(load(yaml.stdout)).toEqual(view);
  });

  it("is found by the real kubectl on PATH, and reads --kubeconfig, --context and its namespace", async () => {
    const viaKubectl = await run(
      kubectlBinary,
      ["narad", "status", "demo", "--kubeconfig", contextKubeconfig, "--context", "shop-ctx"],
      { ...process.env, PATH: pluginPath, KUBECONFIG: "/nonexistent" },
      { allowFailure: true },
    );
    expect(viaKubectl.stderr).toBe("");
    expect(viaKubectl.code).toBe(0);
    expect(viaKubectl.stdout).toContain(`NaradCluster ${NS}/demo`);
    // The same from $KUBECONFIG alone: its current context's namespace is "default".
    const inDefault = await plugin(["status", "demo"], { KUBECONFIG: contextKubeconfig });
    expect(inDefault).toMatchObject({ code: 1, stdout: "" });
  });

  it("a missing cluster exits 1 with one line naming namespace and cluster", async () => {
    const r = await plugin(["status", "nope", "-n", NS]);
    expect(r).toEqual({
      code: 1,
      stdout: "",
      stderr: `error: naradcluster "nope" not found in namespace "${NS}"\n`,
    });
    const elsewhere = await plugin(["status", "demo"]);
    expect(elsewhere.stderr).toBe('error: naradcluster "demo" not found in namespace "default"\n');
    for (const command of ["restart", "rebalance", "credentials", "port-forward"]) {
      const other = await plugin([command, "nope", "-n", NS]);
      expect(other.code, command).toBe(1);
      expect(other.stderr, command).toBe(`error: naradcluster "nope" not found in namespace "${NS}"\n`);
    }
  });

  it("an unknown context exits 1", async () => {
    const r = await plugin(["status", "demo", "--context", "no-such-context"]);
    expect(r).toEqual({
      code: 1,
      stdout: "",
      stderr: 'error: context "no-such-context" not found in the kubeconfig\n',
    });
  });
});

describe("kubectl narad restart and rebalance", () => {
  it("restart sets narad.dev/restartedAt, a new value each time", async () => {
    const before = Date.now();
    const first = await plugin(["restart", "demo", "-n", NS]);
    expect(first.code).toBe(0);
    const value = (await annotations("demo"))["narad.dev/restartedAt"];
    expect(value).toBeDefined();
    expect(Date.parse(value!)).toBeGreaterThanOrEqual(before - 1000);
    expect(first.stdout).toBe(
      `naradcluster ${NS}/demo annotated narad.dev/restartedAt=${value}: the operator restarts the brokers one at a time, each drained first\n`,
    );
    await plugin(["restart", "demo", "-n", NS]);
    const second = (await annotations("demo"))["narad.dev/restartedAt"];
    expect(second).not.toBe(value);
    // The spec and the status are untouched.
    const json = JSON.parse((await plugin(["status", "demo", "-n", NS, "-o", "json"])).stdout);
    expect(json).toMatchObject({ phase: "Scaling", replicas: { spec: 2 } });
  });

  it("restart of a cluster whose rollout is paused says the pods wait for it", async () => {
    await kubectl([
      "patch",
      "naradcluster",
      "open",
      "-n",
      NS,
      "--type=merge",
      "-p",
      '{"spec":{"rollout":{"paused":true}}}',
    ]);
    const r = await plugin(["restart", "open", "-n", NS]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^naradcluster shop\/open annotated narad\.dev\/restartedAt=\S+: .+\nnote: spec\.rollout\.paused is true: no pod restarts until the rollout is unpaused\n$/,
    );
  });

  it("rebalance sets narad.dev/rebalance and leaves restartedAt alone", async () => {
    const restartedAt = (await annotations("demo"))["narad.dev/restartedAt"];
    const r = await plugin(["rebalance", "demo", "-n", NS]);
    expect(r.code).toBe(0);
    const after = await annotations("demo");
    expect(after["narad.dev/rebalance"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(after["narad.dev/restartedAt"]).toBe(restartedAt);
    expect(r.stdout).toContain(`annotated narad.dev/rebalance=${after["narad.dev/rebalance"]}`);
  });
});

describe("kubectl narad credentials", () => {
  it("prints the client Service URL and the users Secret's login", async () => {
    const r = await plugin(["credentials", "demo", "-n", NS]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`URL:       http://demo.${NS}.svc:7942\n`);
    expect(r.stdout).toContain("Username:  admin\nPassword:  e2e-pass-1234\n");
    expect(r.stdout).toContain(`Secret:    ${NS}/demo-users`);
    const json = await plugin(["credentials", "demo", "-n", NS, "--json"]);
    expect(JSON.parse(json.stdout)).toEqual({
      cluster: "demo",
      namespace: NS,
      url: `http://demo.${NS}.svc:7942`,
      auth: true,
      usersSecret: "demo-users",
      username: "admin",
      password: "e2e-pass-1234",
    });
  });

  it("a cluster with auth off: the URL only", async () => {
    const r = await plugin(["credentials", "open", "-n", NS, "--json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      cluster: "open",
      namespace: NS,
      url: `http://open.${NS}.svc:7942`,
      auth: false,
    });
  });
});

describe("kubectl narad port-forward (no kubelet here: the listener, not the stream)", () => {
  it("listens, prints the local URL, reports a stream the API server cannot open, and stops on SIGINT with 0", async () => {
    await markReady();
    const child = spawn(process.execPath, [PLUGIN, "port-forward", "demo", "0", "-n", NS], {
      env: { ...process.env, KUBECONFIG: cp.kubeconfigPath },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      const line = await waitFor(() => /Forwarding http:\/\/127\.0\.0\.1:(\d+) -> (\S+)/.exec(stdout), {
        timeoutMs: 60_000,
        what: `the port-forward line (stdout ${JSON.stringify(stdout)}, stderr ${JSON.stringify(stderr)})`,
      });
      expect(line[2]).toBe(`${NS}/demo-0:7942`); // the only Ready pod
      const socket = connect(Number(line[1]), "127.0.0.1");
      socket.on("error", () => {});
      await once(socket, "close"); // the API server finds no kubelet to stream from
      await waitFor(() => stderr.includes(`error: forwarding to ${NS}/demo-0:`), {
        timeoutMs: 30_000,
        what: `the forwarding error on stderr (${JSON.stringify(stderr)})`,
      });
      child.kill("SIGINT");
      expect(await exited).toEqual([0, null]);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });

  it("a cluster without a Ready pod, or --pod naming another, exits 1", async () => {
    expect(await plugin(["port-forward", "open", "-n", NS])).toEqual({
      code: 1,
      stdout: "",
      stderr: `error: no Ready broker pod in ${NS}/open\n`,
    });
    const other = await plugin(["port-forward", "demo", "--pod", "demo-7", "-n", NS]);
    expect(other).toMatchObject({ code: 1, stderr: `error: pod demo-7 is not a broker of ${NS}/demo\n` });
  });
});

describe("shell completion through the real kubectl (kubectl_complete-narad on PATH)", () => {
  const complete = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    run(
      kubectlBinary,
      ["__complete", "narad", ...args],
      { ...process.env, PATH: pluginPath, KUBECONFIG: cp.kubeconfigPath, ...env },
      { allowFailure: true },
    );
  /** The candidates of a cobra __complete answer (kubectl may append its own notes on stderr). */
  const candidates = (stdout: string) => stdout.split("\n").filter((l) => l !== "" && !l.startsWith(":"));

  it("completes commands, then the namespace's NaradCluster names from the API server", async () => {
    const commands = await complete(["re"]);
    expect(commands.code, commands.stderr).toBe(0);
    expect(candidates(commands.stdout)).toEqual(["restart", "rebalance"]);
    expect(commands.stdout).toMatch(/\n:4\n$/);
    const clusters = await complete(["status", "-n", NS, ""]);
    expect(candidates(clusters.stdout)).toEqual(["demo", "open"]);
    const prefixed = await complete(["-n", NS, "credentials", "o"]);
    expect(candidates(prefixed.stdout)).toEqual(["open"]);
    expect(candidates((await complete(["status", "demo", "-o", ""])).stdout)).toEqual([
      "json",
      "yaml",
      "table",
    ]);
  });

  it("an unreachable API server offers no names and still answers well formed", async () => {
    const r = await complete(["status", ""], { KUBECONFIG: "/nonexistent/config" });
    expect(r.code).toBe(0);
    expect(candidates(r.stdout)).toEqual([]);
    expect(r.stdout).toMatch(/:4\n$/);
  });
});

describe("usage", () => {
  it("usage errors exit 2 with a pointer to the help; --help and --version exit 0", async () => {
    for (const args of [
      [],
      ["status"],
      ["bogus", "demo"],
      ["status", "demo", "-o", "wide"],
      ["port-forward", "demo", "99999"],
    ]) {
      const r = await plugin(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(/^error: .+ \(see kubectl narad( [a-z-]+)? --help\)\n$/);
    }
    const help = await plugin(["credentials", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: kubectl narad credentials <cluster> [--json]");
    const version = await plugin(["--version"]);
    expect(version).toEqual({ code: 0, stdout: `kubectl-narad ${VERSION}\n`, stderr: "" });
  });
});
