// A registry of running platform instances under /tmp, so processes and
// directories left behind by an owner that died without cleaning up (a
// killed test runner, a crashed supervisor) are removed by the next start or
// by `platform down`. Parent-death signals already kill the children; this
// catches the rest (directories, pod-IP locks, a child that ignored it).
import { mkdirSync, readFileSync } from "node:fs";
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Log } from "./log.ts";

export const LOCK_ROOT = process.env["NARAD_PLATFORM_LOCKS"] ?? "/tmp/narad-platform-locks";
const INSTANCES_DIR = join(LOCK_ROOT, "instances");

export interface InstanceRecord {
  id: string;
  ownerPid: number;
  dir: string;
  keep: boolean;
  pids: number[];
}

/**
 * True while `pid` exists and has not exited. A zombie counts as dead: here
 * an orphan's exit is reaped by init only after a while, and `kill(pid, 0)`
 * still succeeds on it.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The state letter follows the parenthesised command name.
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** True when `pid` runs a command line that mentions `needle` (guards against pid reuse). */
export async function cmdlineMentions(pid: number, needle: string): Promise<boolean> {
  try {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8");
    return cmdline.includes(needle);
  } catch {
    return false;
  }
}

function recordPath(id: string): string {
  return join(INSTANCES_DIR, `${id}.json`);
}

export async function writeInstance(record: InstanceRecord): Promise<void> {
  mkdirSync(INSTANCES_DIR, { recursive: true });
  await writeFile(recordPath(record.id), JSON.stringify(record) + "\n");
}

export async function removeInstance(id: string): Promise<void> {
  await rm(recordPath(id), { force: true });
}

export async function listInstances(): Promise<InstanceRecord[]> {
  let names: string[];
  try {
    names = await readdir(INSTANCES_DIR);
  } catch {
    return [];
  }
  const records: InstanceRecord[] = [];
  for (const name of names.filter((n) => n.endsWith(".json"))) {
    try {
      records.push(JSON.parse(await readFile(join(INSTANCES_DIR, name), "utf8")) as InstanceRecord);
    } catch {
      // Half-written or foreign file: ignore.
    }
  }
  return records;
}

/** SIGKILLs the recorded processes of an instance that still belong to it. */
export async function killInstanceProcesses(record: InstanceRecord): Promise<number> {
  let killed = 0;
  for (const pid of record.pids) {
    if (!(await cmdlineMentions(pid, record.dir))) continue;
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, "SIGKILL");
        killed++;
        break;
      } catch {
        // Not a group leader, or already gone.
      }
    }
  }
  return killed;
}

/** Cleans up every instance whose owner process is gone. */
export async function reapStaleInstances(log: Log): Promise<void> {
  for (const record of await listInstances()) {
    if (isAlive(record.ownerPid)) continue;
    const killed = await killInstanceProcesses(record);
    if (!record.keep) await rm(record.dir, { recursive: true, force: true });
    await removeInstance(record.id);
    log(`reaped stale instance ${record.dir} (owner ${record.ownerPid} gone, ${killed} processes killed)`);
  }
}
