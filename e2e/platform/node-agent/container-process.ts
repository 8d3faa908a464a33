// Starts one container as a local process in its own mount namespace, with
// its output appended to <pod dir>/<container>.log and its PID in
// <container>.pid, and reports how it exited.

import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import { type BindMount, unshareArgv } from "./mount-script.ts";
import { isAlive } from "./pids.ts";

export interface ExitInfo {
  readonly exitCode: number;
  readonly signal?: number;
  readonly reason: string;
  readonly message?: string;
  readonly finishedAt: Date;
}

export interface StartSpec {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly mounts: readonly BindMount[];
  readonly logPath: string;
  readonly pidPath: string;
}

/** Exit code a shell would show for a signal death (128 + signo). */
const SIGNAL_EXIT_BASE = 128;

export class ContainerProcess {
  readonly pid: number;
  readonly startedAt: Date;
  readonly exited: Promise<ExitInfo>;
  #done = false;

  private constructor(pid: number, exited: Promise<ExitInfo>) {
    this.pid = pid;
    this.startedAt = new Date();
    this.exited = exited;
    void exited.then(() => {
      this.#done = true;
    });
  }

  get done(): boolean {
    return this.#done;
  }

  static start(spec: StartSpec): ContainerProcess {
    const logFd = fs.openSync(spec.logPath, "a");
    const [cmd, ...args] = unshareArgv(spec.mounts, spec.argv);
    // detached: own process group, so a Ctrl-C aimed at the agent does not
    // hit pods, and SIGKILL can take the pod's children along (-pgid).
    const child = spawn(cmd!, args, {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ["ignore", logFd, logFd],
      detached: true,
    });
    fs.closeSync(logFd);
    const exited = new Promise<ExitInfo>((resolve) => {
      let settled = false;
      const finish = (info: ExitInfo) => {
        if (settled) return;
        settled = true;
        fs.rmSync(spec.pidPath, { force: true });
        resolve(info);
      };
      child.once("error", (err) =>
        finish({ exitCode: 127, reason: "StartError", message: String(err), finishedAt: new Date() }),
      );
      child.once("exit", (code, signal) => {
        const signo = signal ? os.constants.signals[signal] : undefined;
        const exitCode = code ?? SIGNAL_EXIT_BASE + (signo ?? 0);
        const reason = exitCode === 0 ? "Completed" : "Error";
        finish({
          exitCode,
          reason,
          finishedAt: new Date(),
          ...(signo !== undefined ? { signal: signo } : {}),
        });
      });
    });
    const pid = child.pid ?? -1;
    if (pid > 0) fs.writeFileSync(spec.pidPath, `${pid}\n`);
    return new ContainerProcess(pid, exited);
  }

  signal(sig: NodeJS.Signals): void {
    if (this.#done || this.pid <= 0) return;
    try {
      process.kill(this.pid, sig);
    } catch {
      // already gone
    }
  }

  /** SIGKILL the whole process group, so helpers the program forked die too. */
  killGroup(): void {
    if (this.pid <= 0) return;
    try {
      process.kill(-this.pid, "SIGKILL");
    } catch {
      this.signal("SIGKILL");
    }
  }

  /** SIGTERM, wait up to `graceMs`, then SIGKILL the group. Resolves when the process is gone. */
  async stop(graceMs: number): Promise<ExitInfo> {
    this.signal("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"timeout">((r) => {
      timer = setTimeout(() => r("timeout"), Math.max(0, graceMs));
    });
    const first = await Promise.race([this.exited, timeout]);
    clearTimeout(timer);
    if (first === "timeout") this.killGroup();
    return this.exited;
  }
}

/** Kills a process left over from a previous agent run (not our child: poll until gone). */
export async function killOrphan(pid: number, graceMs: number): Promise<void> {
  const POLL_MS = 50;
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && isAlive(pid)) await new Promise((r) => setTimeout(r, POLL_MS));
  if (isAlive(pid)) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
  }
}
