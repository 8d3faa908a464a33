// The kind cluster of the kind suites: e2e/kind/up.sh creates it (and builds
// what it needs, cached), or reuses the one that exists; down.sh deletes it.
// Inside a vitest run of the `kind` project (global-setup.ts sets
// NARAD_KIND_RUN_DIR) the suites share one cluster: each brings it up (the
// first creates it, the next reuse it) and leaves it, and the run's teardown
// deletes it once, after the last suite. NARAD_KIND_KEEP=1 keeps it.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ensureDocker, repoRoot, run } from "./docker.ts";

export interface KindCluster {
  name: string;
  kubeconfigPath: string;
  kind: string;
  /** Deletes the cluster, or leaves it to the run's teardown when the run shares it. */
  delete(): Promise<void>;
}

const RUN_DIR = "NARAD_KIND_RUN_DIR";

export async function createKindCluster(name: string): Promise<KindCluster> {
  const env = { KIND_CLUSTER: name };
  const t0 = Date.now();
  // Docker first, through ensureDocker: without an engine the suite fails
  // saying what is missing (up.sh would only show the script's tail).
  await ensureDocker();
  const out = await run("bash", [join(repoRoot, "e2e/kind/up.sh")], { env, prefix: "kind-up" });
  const value = (key: string) => {
    const line = out.split("\n").find((l) => l.startsWith(`${key}=`));
    if (line === undefined) throw new Error(`e2e/kind/up.sh printed no ${key}=:\n${out}`);
    return line.slice(key.length + 1);
  };
  const kind = value("KIND");
  // The harness (E2E_PLATFORM=kind) runs `kind get kubeconfig` from PATH.
  process.env["PATH"] = `${dirname(kind)}:${process.env["PATH"] ?? ""}`;
  process.env["KIND_CLUSTER"] = name;
  process.stderr.write(`[kind] cluster ${name} up in ${Date.now() - t0} ms\n`);
  const runDir = process.env[RUN_DIR];
  // Recorded for the run's teardown: this run brought the cluster up.
  if (runDir !== undefined) writeFileSync(join(runDir, name), "");
  return {
    name,
    kubeconfigPath: value("KUBECONFIG"),
    kind,
    delete: async () => {
      if (runDir !== undefined) return;
      await deleteKindCluster(name);
    },
  };
}

async function deleteKindCluster(name: string): Promise<void> {
  if (process.env["NARAD_KIND_KEEP"] === "1") {
    process.stderr.write(`[kind] NARAD_KIND_KEEP=1: cluster ${name} kept (e2e/kind/down.sh deletes it)\n`);
    return;
  }
  await run("bash", [join(repoRoot, "e2e/kind/down.sh")], {
    env: { KIND_CLUSTER: name },
    prefix: "kind-down",
  });
}

/** For the run's globalSetup: a directory the suites record their clusters in (NARAD_KIND_RUN_DIR). */
export function shareKindClusters(dir: string): void {
  mkdirSync(dir, { recursive: true });
  process.env[RUN_DIR] = dir;
}

/** For the run's teardown: deletes every cluster a suite of this run brought up. */
export async function deleteSharedKindClusters(dir: string): Promise<void> {
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    // no suite brought a cluster up
  }
  try {
    for (const name of names) await deleteKindCluster(name);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
