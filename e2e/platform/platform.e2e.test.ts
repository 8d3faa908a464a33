// The platform layer over the control plane: default StorageClass, the node
// agent's Node and provisioner, the suite helpers, and the up/status/down CLI.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "./log.ts";
import { attachPlatform, type Platform, STORAGE_CLASS_NAME, startPlatform, waitFor } from "./platform.ts";
import { ensureBinaries } from "./tools.ts";

const log = stderrLog("platform-test");
const CLI = join(import.meta.dirname, "cli.ts");

function cli(stateDir: string, command: string): { code: number; stdout: string; stderr: string } {
  const out = spawnSync(process.execPath, [CLI, command], {
    encoding: "utf8",
    env: { ...process.env, NARAD_PLATFORM_STATE: stateDir },
    timeout: 180_000,
  });
  return { code: out.status ?? -1, stdout: out.stdout, stderr: out.stderr };
}

/** True for a live process; a zombie (exited, not yet reaped by init) counts as gone. */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

describe("local platform", () => {
  let platform: Platform;

  beforeAll(async () => {
    const binaries = await ensureBinaries(log);
    platform = await startPlatform({ dir: await mkdtemp(join(tmpdir(), "narad-platform-")), log, binaries });
  });

  afterAll(async () => {
    await platform?.stop();
  });

  it("has a default StorageClass and a Ready node on its own pod IP prefix", async () => {
    const sc = JSON.parse(
      (await platform.kubectl(["get", "storageclass", STORAGE_CLASS_NAME, "-o", "json"])).stdout,
    );
    expect(sc.metadata.annotations["storageclass.kubernetes.io/is-default-class"]).toBe("true");
    expect(sc.provisioner).toBe("narad.dev/local-dir");
    expect(sc.volumeBindingMode).toBe("Immediate");
    expect(platform.podIpPrefix).toMatch(/^127\.\d+$/);
    if (platform.nodeAgent === undefined) return; // node agent not written yet
    const ready = await platform.kubectl([
      "get",
      "node",
      platform.nodeName,
      "-o",
      'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
    ]);
    expect(ready.stdout).toBe("True");
  });

  it("applies YAML and binds a claim through the default class", async () => {
    await platform.applyYaml(
      [
        "apiVersion: v1",
        "kind: Namespace",
        "metadata: {name: pt}",
        "---",
        "apiVersion: v1",
        "kind: PersistentVolumeClaim",
        "metadata: {name: data, namespace: pt}",
        "spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}",
      ].join("\n"),
    );
    const pvc = await platform.kubectl([
      "get",
      "pvc",
      "data",
      "-n",
      "pt",
      "-o",
      "jsonpath={.spec.storageClassName}",
    ]);
    expect(pvc.stdout).toBe(STORAGE_CLASS_NAME);
    if (platform.nodeAgent === undefined) return; // the provisioner lives in the node agent
    await waitFor(
      async () =>
        (await platform.kubectl(["get", "pvc", "data", "-n", "pt", "-o", "jsonpath={.status.phase}"]))
          .stdout === "Bound",
      { timeoutMs: 30_000, what: "PVC pt/data to be Bound" },
    );
  });

  it("attaches to a running cluster by kubeconfig", async () => {
    const client = await attachPlatform(platform.kubeconfigPath);
    expect((await client.kubectl(["get", "ns", "pt", "-o", "name"])).stdout.trim()).toBe("namespace/pt");
    await expect(waitFor(() => false, { timeoutMs: 300, what: "nothing" })).rejects.toThrow(
      /timed out after 300 ms waiting for nothing/,
    );
  });

  it("runs up / status / down from the CLI", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "narad-cli-"));
    const up = cli(stateDir, "up");
    expect(up.code, up.stderr).toBe(0);
    const kubeconfig = /^KUBECONFIG=(.+)$/m.exec(up.stdout)?.[1];
    expect(kubeconfig).toBeDefined();
    expect(cli(stateDir, "up").stdout).toContain(`KUBECONFIG=${kubeconfig}`); // idempotent
    const status = cli(stateDir, "status");
    expect(status.code, status.stdout).toBe(0);
    expect(status.stdout).toMatch(/readyz 200/);
    const pids = [...status.stdout.matchAll(/pid (\d+) running/g)].map((m) => Number(m[1]));
    expect(pids.length).toBeGreaterThanOrEqual(4); // supervisor, etcd, apiserver, kcm
    expect(cli(stateDir, "down").code).toBe(0);
    for (const pid of pids) expect(isRunning(pid), `pid ${pid} still running`).toBe(false);
    expect(existsSync(join(stateDir, "cluster"))).toBe(false);
    expect(cli(stateDir, "status").stdout).toContain("platform: down");
  });
});
