// Starts and stops one long-running component (etcd, kube-apiserver, ...).
// Output goes to a log file rather than the parent's pipes, so a chatty
// component can never block on a full pipe and its log outlives a crash.
// Each child gets a parent-death signal (via util-linux `setpriv`), so it dies
// with its owner even when the owner is SIGKILLed and cleanup code never runs;
// it also leads its own process group so stop() takes any helpers with it.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { readFile } from "node:fs/promises";

/** Time between SIGTERM and SIGKILL in stop(). */
export const DEFAULT_STOP_GRACE_MS = 5_000;
const LOG_TAIL_LINES = 40;

const hasSetpriv = spawnSync("setpriv", ["--help"], { stdio: "ignore" }).status === 0;

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ManagedProcess {
  name: string;
  pid: number;
  logPath: string;
  /** Set once the process has exited. */
  readonly exit: ExitInfo | undefined;
  exited: Promise<ExitInfo>;
  /** SIGTERM to the group, SIGKILL after graceMs, resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartProcessOptions {
  name: string;
  command: string;
  args: string[];
  logPath: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Sent to the child when its parent dies; SIGTERM lets it clean up its own children. */
  parentDeathSignal?: "SIGKILL" | "SIGTERM";
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  }
}

export function startProcess(options: StartProcessOptions): ManagedProcess {
  const fd = openSync(options.logPath, "a");
  const wrapped = hasSetpriv
    ? {
        command: "setpriv",
        args: ["--pdeathsig", options.parentDeathSignal ?? "SIGKILL", "--", options.command, ...options.args],
      }
    : { command: options.command, args: options.args };
  let child: ChildProcess;
  try {
    child = spawn(wrapped.command, wrapped.args, {
      stdio: ["ignore", fd, fd],
      env: options.env ?? process.env,
      cwd: options.cwd,
      detached: true,
    });
  } finally {
    closeSync(fd);
  }
  if (child.pid === undefined) throw new Error(`could not start ${options.name} (${options.command})`);
  let exit: ExitInfo | undefined;
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once("exit", (code, signal) => {
      exit = { code, signal };
      resolve(exit);
    });
    child.once("error", () => {
      exit = { code: null, signal: null };
      resolve(exit);
    });
  });
  const pid = child.pid;
  return {
    name: options.name,
    pid,
    logPath: options.logPath,
    get exit() {
      return exit;
    },
    exited,
    async stop(graceMs = DEFAULT_STOP_GRACE_MS) {
      if (exit !== undefined) {
        signalGroup(child, "SIGKILL"); // leftovers in its group, if any
        return;
      }
      signalGroup(child, "SIGTERM");
      const timer = setTimeout(() => signalGroup(child, "SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
      signalGroup(child, "SIGKILL");
    },
  };
}

/** The last lines of a log file, for error messages. */
export async function logTail(path: string, lines = LOG_TAIL_LINES): Promise<string> {
  try {
    const text = await readFile(path, "utf8");
    return text.trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/** Describes how a process ended, with the tail of its log. */
export async function describeFailure(proc: ManagedProcess, what: string): Promise<string> {
  const how =
    proc.exit === undefined
      ? "is still running"
      : `exited (code ${proc.exit.code ?? "-"}, signal ${proc.exit.signal ?? "-"})`;
  return `${what}: ${proc.name} (pid ${proc.pid}) ${how}; last lines of ${proc.logPath}:\n${await logTail(proc.logPath)}`;
}
