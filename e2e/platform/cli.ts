// `npm run platform -- up|status|down`: runs the local platform in the
// background for manual use and for suites started by hand.
//   up      starts a detached supervisor that owns the cluster processes, waits
//           until the cluster is ready and prints KUBECONFIG=<path> on stdout
//   status  prints the components, their pids and whether the apiserver answers
//   down    stops the supervisor (and with it every component) and cleans up
// Progress goes to stderr; the supervisor's own log is kept beside the state.
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { mkdir, open, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { cmdlineMentions, isAlive, reapStaleInstances } from "./instances.ts";
import { type Log, stderrLog } from "./log.ts";
import type { Platform } from "./platform.ts";
import { probe } from "./probe.ts";
import { CACHE_DIR } from "./tools.ts";

const STATE_ROOT = process.env["NARAD_PLATFORM_STATE"] ?? join(CACHE_DIR, "platform");
const STATE_FILE = join(STATE_ROOT, "state.json");
const SUPERVISOR_LOG = join(STATE_ROOT, "supervisor.log");
const CLUSTER_DIR = join(STATE_ROOT, "cluster");
const POLL_MS = 500;
/** A cold start includes building Kubernetes from source (tens of minutes). */
const UP_TIMEOUT_MS = 2 * 60 * 60 * 1000;
const DOWN_TIMEOUT_MS = 30_000;
const COMPONENT_WATCH_MS = 2_000;

interface ComponentState {
  name: string;
  pid: number;
  logPath: string;
}

interface State {
  status: "starting" | "ready" | "failed";
  supervisorPid: number;
  startedAt: string;
  dir: string;
  supervisorLog: string;
  kubeconfig?: string;
  server?: string;
  nodeName?: string;
  podIpPrefix?: string;
  components?: ComponentState[];
  error?: string;
}

function readState(): State | undefined {
  try {
    return JSON.parse(readFileSync(STATE_FILE, "utf8")) as State;
  } catch {
    return undefined;
  }
}

async function writeState(state: State): Promise<void> {
  await mkdir(STATE_ROOT, { recursive: true });
  const tmp = `${STATE_FILE}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(state, null, 2) + "\n");
  await rename(tmp, STATE_FILE);
}

/** Kills whatever a dead supervisor left behind and forgets it. */
async function cleanupAfter(state: State, log: Log): Promise<void> {
  for (const component of state.components ?? []) {
    if (await cmdlineMentions(component.pid, state.dir)) {
      try {
        process.kill(-component.pid, "SIGKILL");
      } catch {
        try {
          process.kill(component.pid, "SIGKILL");
        } catch {
          // Gone.
        }
      }
      log(`killed leftover ${component.name} (pid ${component.pid})`);
    }
  }
  await reapStaleInstances(log);
  await rm(state.dir, { recursive: true, force: true });
  await rm(STATE_FILE, { force: true });
}

/** Copies new supervisor log lines to stderr while waiting. */
async function followLog(fromOffset: number): Promise<() => Promise<number>> {
  let offset = fromOffset;
  return async () => {
    if (!existsSync(SUPERVISOR_LOG)) return offset;
    const handle = await open(SUPERVISOR_LOG, "r");
    try {
      const { size } = await handle.stat();
      if (size > offset) {
        const buffer = Buffer.alloc(size - offset);
        await handle.read(buffer, 0, buffer.length, offset);
        process.stderr.write(buffer);
        offset = size;
      }
    } finally {
      await handle.close();
    }
    return offset;
  };
}

async function up(log: Log): Promise<number> {
  let state = readState();
  if (state !== undefined && !isAlive(state.supervisorPid)) {
    log(`previous supervisor (pid ${state.supervisorPid}) is gone; cleaning up`);
    await cleanupAfter(state, log);
    state = undefined;
  }
  let logOffset = 0;
  if (state === undefined) {
    await mkdir(STATE_ROOT, { recursive: true });
    logOffset = existsSync(SUPERVISOR_LOG) ? readFileSync(SUPERVISOR_LOG).length : 0;
    const fd = openSync(SUPERVISOR_LOG, "a");
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "supervise"], {
      detached: true,
      stdio: ["ignore", fd, fd],
    });
    closeSync(fd);
    child.unref();
    log(`supervisor started (pid ${child.pid}); log: ${SUPERVISOR_LOG}`);
  } else {
    log(`platform already running (supervisor pid ${state.supervisorPid})`);
  }
  const follow = await followLog(logOffset);
  const deadline = Date.now() + UP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    await follow();
    const current = readState();
    if (current?.status === "ready" && current.kubeconfig !== undefined) {
      process.stdout.write(`KUBECONFIG=${current.kubeconfig}\n`);
      return 0;
    }
    if (current?.status === "failed") {
      log(`platform failed to start: ${current.error ?? "unknown error"}`);
      return 1;
    }
    if (current !== undefined && !isAlive(current.supervisorPid)) {
      log(`supervisor (pid ${current.supervisorPid}) died; see ${SUPERVISOR_LOG}`);
      return 1;
    }
    await sleep(POLL_MS);
  }
  log(`platform not ready after ${UP_TIMEOUT_MS} ms; still starting in the background`);
  return 1;
}

async function supervise(log: Log): Promise<number> {
  const base: State = {
    status: "starting",
    supervisorPid: process.pid,
    startedAt: new Date().toISOString(),
    dir: CLUSTER_DIR,
    supervisorLog: SUPERVISOR_LOG,
  };
  await writeState(base);
  let platform: Platform | undefined;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping platform`);
    await platform?.stop();
    await rm(STATE_FILE, { force: true });
    log("platform stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGHUP", () => {}); // survive the terminal closing
  try {
    await rm(CLUSTER_DIR, { recursive: true, force: true });
    const started = Date.now();
    // Loaded here only: @kubernetes/client-node takes seconds to import,
    // which `status` and `down` should not pay.
    const { startPlatform } = await import("./platform.ts");
    platform = await startPlatform({ dir: CLUSTER_DIR, log });
    if (stopping) return 0;
    const components = platform.controlPlane
      .components()
      .map(({ name, pid, logPath }) => ({ name, pid, logPath }));
    await writeState({
      ...base,
      status: "ready",
      kubeconfig: platform.kubeconfigPath,
      server: platform.server,
      nodeName: platform.nodeName,
      podIpPrefix: platform.podIpPrefix,
      components,
    });
    log(`platform ready in ${Date.now() - started} ms: KUBECONFIG=${platform.kubeconfigPath}`);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    log(`start failed: ${message}`);
    await writeState({ ...base, status: "failed", error: message });
    return 1;
  }
  // Stay alive as the owner of the components; report any that die.
  const reported = new Set<string>();
  for (;;) {
    await sleep(COMPONENT_WATCH_MS);
    for (const component of platform.controlPlane.components()) {
      if (!component.running && !reported.has(component.name)) {
        reported.add(component.name);
        log(`component ${component.name} (pid ${component.pid}) exited; see ${component.logPath}`);
      }
    }
  }
}

async function status(): Promise<number> {
  const state = readState();
  if (state === undefined) {
    process.stdout.write("platform: down\n");
    return 1;
  }
  const alive = isAlive(state.supervisorPid);
  process.stdout.write(`platform: ${state.status}${alive ? "" : " (supervisor gone!)"}\n`);
  process.stdout.write(
    `supervisor: pid ${state.supervisorPid} ${alive ? "running" : "not running"}, log ${state.supervisorLog}\n`,
  );
  if (state.error !== undefined) process.stdout.write(`error: ${state.error}\n`);
  for (const c of state.components ?? []) {
    process.stdout.write(
      `${c.name}: pid ${c.pid} ${isAlive(c.pid) ? "running" : "not running"}, log ${c.logPath}\n`,
    );
  }
  if (state.kubeconfig === undefined || state.server === undefined) return alive ? 0 : 1;
  process.stdout.write(
    `KUBECONFIG=${state.kubeconfig}\nnode: ${state.nodeName} pod IPs ${state.podIpPrefix}.x.y\n`,
  );
  const pki = join(state.dir, "pki");
  try {
    const tls = {
      ca: await readFile(join(pki, "ca.crt")),
      cert: await readFile(join(pki, "admin.crt")),
      key: await readFile(join(pki, "admin.key")),
    };
    const ready = await probe(`${state.server}/readyz`, tls);
    const version = await probe(`${state.server}/version`, tls);
    const gitVersion = (JSON.parse(version.body) as { gitVersion?: string }).gitVersion;
    process.stdout.write(
      `apiserver: ${state.server} readyz ${ready.status} ${ready.body.trim()}, version ${gitVersion}\n`,
    );
    return ready.status === 200 ? 0 : 1;
  } catch (error) {
    process.stdout.write(
      `apiserver: ${state.server} not answering (${error instanceof Error ? error.message : error})\n`,
    );
    return 1;
  }
}

async function down(log: Log): Promise<number> {
  const state = readState();
  if (state === undefined) {
    await reapStaleInstances(log);
    log("platform is not running");
    return 0;
  }
  if (isAlive(state.supervisorPid)) {
    process.kill(state.supervisorPid, "SIGTERM");
    const deadline = Date.now() + DOWN_TIMEOUT_MS;
    while (isAlive(state.supervisorPid) && Date.now() < deadline) await sleep(POLL_MS / 5);
    if (isAlive(state.supervisorPid)) {
      log(`supervisor did not stop in ${DOWN_TIMEOUT_MS} ms; killing it`);
      process.kill(state.supervisorPid, "SIGKILL");
      await sleep(POLL_MS);
    }
  }
  await cleanupAfter(state, log);
  log("platform down");
  return 0;
}

async function main(): Promise<number> {
  const command = process.argv[2];
  const log = stderrLog(command === "supervise" ? "supervisor" : "platform");
  switch (command) {
    case "up":
      return up(log);
    case "supervise":
      return supervise(log);
    case "status":
      return status();
    case "down":
      return down(log);
    default:
      process.stderr.write("usage: npm run platform -- up|status|down\n");
      return 2;
  }
}

process.exitCode = await main();
