// Helpers for the operator e2e suite: run narad-operator as a child process
// against a kubeconfig, keep its log lines, and read objects as JSON.
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import type { Log } from "../platform/log.ts";
import { type CommandRunner, type Platform, startPlatform, waitFor } from "../platform/platform.ts";
import { freePort } from "../platform/ports.ts";
import { ensureBinaries } from "../platform/tools.ts";

const REPO = resolve(import.meta.dirname, "../..");
const NODE = join(REPO, "node_modules/.bin/node");
const OPERATOR_MAIN = join(REPO, "operator/src/main.ts");

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface OperatorProcess {
  identity: string;
  proc: ChildProcess;
  logPath: string;
  metricsUrl: string;
  lines(): LogLine[];
  /** Resolves with the first log line (already seen or future) matching pred. */
  waitForLine(pred: (l: LogLine) => boolean, what: string, timeoutMs?: number): Promise<LogLine>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): Promise<void>;
}

export async function startOperator(opts: {
  kubeconfig: string;
  identity: string;
  logDir: string;
  env?: Record<string, string>;
}): Promise<OperatorProcess> {
  const port = await freePort();
  const logPath = join(opts.logDir, `operator-${opts.identity}.log`);
  const out = createWriteStream(logPath, { flags: "a" });
  const proc = spawn(NODE, [OPERATOR_MAIN], {
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "",
      KUBECONFIG: opts.kubeconfig,
      POD_NAME: opts.identity,
      POD_NAMESPACE: "narad-system",
      NARAD_OPERATOR_ADDR: `127.0.0.1:${port}`,
      NARAD_OPERATOR_LOG_LEVEL: "debug",
      ...opts.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: LogLine[] = [];
  const waiters: Array<{ pred: (l: LogLine) => boolean; resolve: (l: LogLine) => void }> = [];
  let buf = "";
  proc.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    out.write(chunk);
    buf += chunk;
    let i = buf.indexOf("\n");
    while (i >= 0) {
      const raw = buf.slice(0, i);
      buf = buf.slice(i + 1);
      i = buf.indexOf("\n");
      try {
        const line = JSON.parse(raw) as LogLine;
        lines.push(line);
        for (const w of [...waiters]) {
          if (w.pred(line)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(line);
          }
        }
      } catch {
        // not JSON (should not happen with pino); kept in the file
      }
    }
  });
  proc.stderr?.setEncoding("utf8").on("data", (chunk: string) => out.write(chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    proc.once("exit", (code, signal) => {
      out.end();
      r({ code, signal });
    }),
  );
  return {
    identity: opts.identity,
    proc,
    logPath,
    metricsUrl: `http://127.0.0.1:${port}`,
    lines: () => lines,
    waitForLine(pred, what, timeoutMs = 60_000) {
      const seen = lines.find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolveLine, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(`operator ${opts.identity}: timed out after ${timeoutMs} ms waiting for ${what}`),
            ),
          timeoutMs,
        );
        waiters.push({
          pred,
          resolve: (l) => {
            clearTimeout(timer);
            resolveLine(l);
          },
        });
      });
    },
    exited,
    async kill(signal) {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited;
    },
  };
}

/** `kubectl get -o json`, or undefined when NotFound. */
export async function getJson<T = Record<string, unknown>>(
  kubectl: CommandRunner,
  args: string[],
): Promise<T | undefined> {
  const r = await kubectl(["get", ...args, "-o", "json"], { allowFailure: true });
  if (r.code !== 0) {
    if (/NotFound|not found/.test(r.stderr)) return undefined;
    throw new Error(`kubectl get ${args.join(" ")}: ${r.stderr}`);
  }
  return JSON.parse(r.stdout) as T;
}

/** Installs the CRDs from crds/, waits until they are served, and creates the namespaces. */
export async function prepareCluster(
  kubectl: CommandRunner,
  repo: string,
  namespaces: string[],
): Promise<void> {
  await kubectl(["apply", "--server-side", "-f", join(repo, "crds")]);
  await kubectl([
    "wait",
    "--for=condition=Established",
    "crd/naradclusters.narad.dev",
    "crd/naradtopics.narad.dev",
    "crd/naradusers.narad.dev",
  ]);
  for (const ns of namespaces) await kubectl(["create", "namespace", ns]);
}

/**
 * What every operator suite starts from: the binaries, a log dir
 * (/tmp/narad-<name>-e2e-*), the platform (kept with NARAD_KEEP=1), the CRDs
 * and the namespaces.
 */
export async function startSuitePlatform(
  name: string,
  log: Log,
  namespaces: string[],
): Promise<{ logDir: string; platform: Platform; core: CoreV1Api }> {
  const binaries = await ensureBinaries(log);
  const logDir = await mkdtemp(join(tmpdir(), `narad-${name}-e2e-`));
  const platform = await startPlatform({
    dir: logDir,
    log,
    binaries,
    keep: process.env["NARAD_KEEP"] === "1",
  });
  await prepareCluster(platform.kubectl, REPO, namespaces);
  return { logDir, platform, core: platform.kubeConfig.makeApiClient(CoreV1Api) };
}

export { waitFor };
