// Each platform instance gives its pods addresses in 127.<N>.0.0/16; this
// picks an N that no other instance holds (a lock file per octet under
// LOCK_ROOT) and on which nothing listens yet (checked in /proc/net/tcp).
import { mkdirSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { isAlive, LOCK_ROOT } from "./instances.ts";

/** Second octets tried, low end leaves 127.0.x-127.19.x to other tools. */
export const FIRST_OCTET = 20;
export const LAST_OCTET = 250;
const TCP_LISTEN_STATE = "0A";

export interface PodIpLease {
  octet: number;
  /** "127.<N>", the node agent's --pod-ip-prefix. */
  prefix: string;
  release(): Promise<void>;
}

function lockPath(octet: number): string {
  return join(LOCK_ROOT, `pod-ip-127.${octet}.lock`);
}

/** Second octets of 127.x addresses that have a listening TCP socket. */
async function listeningLoopbackOctets(): Promise<Set<number>> {
  const octets = new Set<number>();
  let table: string;
  try {
    table = await readFile("/proc/net/tcp", "utf8");
  } catch {
    return octets;
  }
  for (const line of table.split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = fields[1];
    if (local === undefined || fields[3] !== TCP_LISTEN_STATE) continue;
    // The address is a little-endian hex u32: 127.N.x.y prints as YYXXNN7F.
    const hex = local.split(":")[0] ?? "";
    if (hex.length === 8 && hex.endsWith("7F")) octets.add(Number.parseInt(hex.slice(4, 6), 16));
  }
  return octets;
}

async function tryLock(octet: number, owner: string): Promise<boolean> {
  const path = lockPath(octet);
  try {
    await writeFile(path, JSON.stringify({ pid: process.pid, owner }) + "\n", { flag: "wx" });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  let holder: { pid?: number } = {};
  try {
    holder = JSON.parse(await readFile(path, "utf8")) as { pid?: number };
  } catch {
    // Unreadable lock: treat as held rather than risk a clash.
    return false;
  }
  if (typeof holder.pid === "number" && isAlive(holder.pid)) return false;
  await rm(path, { force: true });
  try {
    await writeFile(path, JSON.stringify({ pid: process.pid, owner }) + "\n", { flag: "wx" });
    return true;
  } catch {
    return false;
  }
}

/** Leases a free 127.<N> prefix; `owner` is recorded for humans reading the lock. */
export async function leasePodIpPrefix(owner: string): Promise<PodIpLease> {
  mkdirSync(LOCK_ROOT, { recursive: true });
  const busy = await listeningLoopbackOctets();
  for (let octet = FIRST_OCTET; octet <= LAST_OCTET; octet++) {
    if (busy.has(octet)) continue;
    if (!(await tryLock(octet, owner))) continue;
    let released = false;
    return {
      octet,
      prefix: `127.${octet}`,
      async release() {
        if (released) return;
        released = true;
        await rm(lockPath(octet), { force: true });
      },
    };
  }
  throw new Error(`no free pod IP prefix in 127.${FIRST_OCTET}-127.${LAST_OCTET} (locks in ${LOCK_ROOT})`);
}
