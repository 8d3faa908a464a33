// Starting and stopping real processes for integration tests and benchmarks: the real
// `narad serve` and the no-op baseline server, each a child process.

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const repoRoot = resolve(import.meta.dirname, "..", "..", "..");

export async function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once("error", fail);
    srv.listen(0, host, () => {
      const addr = srv.address();
      srv.close(() =>
        typeof addr === "object" && addr !== null ? ok(addr.port) : fail(new Error("no port")),
      );
    });
  });
}

/** Generous: under a loaded CI machine a broker on the kubernetes metastore needs its watches first. */
export async function waitReady(url: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(`${url}/readyz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} not ready after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Running {
  url: string;
  child: ChildProcess;
  dataDir: string | undefined;
  stop(): Promise<void>;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  await exited;
  clearTimeout(timer);
}

export interface NaradOptions {
  /** Reuse a data dir (restarts after a crash); a fresh temp dir otherwise. */
  dataDir?: string;
  port?: number;
  args?: string[];
  env?: NodeJS.ProcessEnv;
  /** A fault control file (fault-seam.ts): the broker runs with its ingress WAL's I/O behind the seam. */
  faults?: string;
  /** Keep the data dir on stop (the caller removes it). */
  keepData?: boolean;
  logLevel?: string;
}

export interface RunningNarad extends Running {
  dataDir: string;
  port: number;
  /** kill -9: no drain, no flush, exactly what a crash does. */
  kill9(): Promise<void>;
}

export async function startNarad(opts: NaradOptions = {}): Promise<RunningNarad> {
  const port = opts.port ?? (await freePort());
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "narad-test-"));
  const child = spawn(
    process.execPath,
    [
      opts.faults === undefined
        ? join(repoRoot, "broker/src/main.ts")
        : join(repoRoot, "broker/test/harness/faulty-serve.ts"),
      "serve",
      "--addr",
      `127.0.0.1:${port}`,
      "--cluster-addr",
      "127.0.0.1:0",
      "--data-dir",
      dataDir,
      "--log-level",
      opts.logLevel ?? "warn",
      ...(opts.args ?? []),
    ],
    {
      stdio: ["ignore", "inherit", "inherit"],
      env: {
        ...process.env,
        ...opts.env,
        ...(opts.faults === undefined ? {} : { NARAD_TEST_FAULTS: opts.faults }),
      },
    },
  );
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  await Promise.race([
    waitReady(url),
    exited.then(() => {
      throw new Error(`narad exited with ${child.exitCode ?? child.signalCode} before it was ready`);
    }),
  ]);
  return {
    url,
    child,
    dataDir,
    port,
    kill9: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
    stop: async () => {
      await stopChild(child);
      if (!opts.keepData && opts.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function startNoop(): Promise<Running> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(repoRoot, "bench/noop-server.ts"), `127.0.0.1:${port}`], {
    stdio: ["ignore", "inherit", "inherit"],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url);
  return { url, child, dataDir: undefined, stop: () => stopChild(child) };
}
