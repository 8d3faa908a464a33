// A kind cluster for one kind suite: e2e/kind/up.sh creates it (and builds
// what it needs, cached), down.sh deletes it. NARAD_KIND_KEEP=1 keeps it.
import { dirname, join } from "node:path";
import { ensureDocker, repoRoot, run } from "./docker.ts";

export interface KindCluster {
  name: string;
  kubeconfigPath: string;
  kind: string;
  delete(): Promise<void>;
}

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
  return {
    name,
    kubeconfigPath: value("KUBECONFIG"),
    kind,
    delete: async () => {
      if (process.env["NARAD_KIND_KEEP"] === "1") {
        process.stderr.write(
          `[kind] NARAD_KIND_KEEP=1: cluster ${name} kept (e2e/kind/down.sh deletes it)\n`,
        );
        return;
      }
      await run("bash", [join(repoRoot, "e2e/kind/down.sh")], { env, prefix: "kind-down" });
    },
  };
}
