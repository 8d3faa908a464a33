// After an agent crash its pod processes may still run. At startup every
// pidfile under <state-dir>/pods is checked and, if the process carries our
// container marker in its environment (so a recycled PID is never hit), it
// is killed. Pods that still exist are then started afresh by their workers.

import fs from "node:fs/promises";
import path from "node:path";
import type { Logger } from "pino";
import { killOrphan } from "./container-process.ts";
import { CONTAINER_MARKER_ENV } from "./pids.ts";

const ORPHAN_GRACE_MS = 3_000;

async function hasMarker(pid: number): Promise<boolean> {
  try {
    const environ = await fs.readFile(`/proc/${pid}/environ`, "latin1");
    return environ.split("\0").some((kv) => kv.startsWith(`${CONTAINER_MARKER_ENV}=`));
  } catch {
    return false;
  }
}

export async function killOrphans(stateDir: string, log: Logger): Promise<number> {
  const podsRoot = path.join(stateDir, "pods");
  const podDirs = await fs.readdir(podsRoot).catch(() => [] as string[]);
  const kills: Promise<void>[] = [];
  for (const d of podDirs) {
    const files = await fs.readdir(path.join(podsRoot, d)).catch(() => [] as string[]);
    for (const f of files.filter((x) => x.endsWith(".pid"))) {
      const file = path.join(podsRoot, d, f);
      const pid = Number.parseInt(await fs.readFile(file, "utf8").catch(() => ""), 10);
      if (Number.isInteger(pid) && pid > 0 && (await hasMarker(pid))) {
        log.info({ pid, pidfile: file }, "killing orphaned container process");
        kills.push(killOrphan(pid, ORPHAN_GRACE_MS));
      }
      kills.push(fs.rm(file, { force: true }));
    }
  }
  await Promise.all(kills);
  return kills.length;
}
