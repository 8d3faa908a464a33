// Pidfile layout shared by the agent and the e2e tests.
//
// The agent writes <state-dir>/pods/<ns>_<pod>/<container>.pid while that
// container's process is alive. Tests read it to `kill -9` a pod process and
// check that the agent restarts it.

import fs from "node:fs";
import path from "node:path";

/** Environment variable set in every container process, used to recognise our own orphans. */
export const CONTAINER_MARKER_ENV = "NARAD_NODE_AGENT_CONTAINER";

export function podDir(stateDir: string, namespace: string, pod: string): string {
  return path.join(stateDir, "pods", `${namespace}_${pod}`);
}

export function pidFilePath(stateDir: string, namespace: string, pod: string, container: string): string {
  return path.join(podDir(stateDir, namespace, pod), `${container}.pid`);
}

/** The live PID of a pod's container process, or null when it is not running. */
export function podProcessPid(
  stateDir: string,
  namespace: string,
  pod: string,
  container: string,
): number | null {
  let text: string;
  try {
    text = fs.readFileSync(pidFilePath(stateDir, namespace, pod, container), "utf8");
  } catch {
    return null;
  }
  const pid = Number.parseInt(text.trim(), 10);
  if (!Number.isInteger(pid) || pid <= 0) return null;
  return isAlive(pid) ? pid : null;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie still answers signal 0; treat it as gone.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z";
  } catch {
    return false;
  }
}
