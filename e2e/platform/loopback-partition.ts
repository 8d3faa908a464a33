// A network partition of one pod on the local platform, with the kernel's
// packet filter (iptables, run as root).
//
// Pods share the host's network namespace and every connection a pod opens
// leaves from 127.0.0.1, so an address alone cannot single out what one pod
// sends. Two kernel facts do:
//   - what the pod is sent, and what it answers on connections it accepted,
//     carries its own address 127.N.x.y (it listens there): dropped by address;
//   - a socket belongs to the cgroup (v2) of the process that created it, and
//     the `cgroup` match sees it on output: the pod's process is moved into a
//     cgroup of its own, and everything its new sockets send is dropped. The
//     connections it opened before the move (its API server watch, its RPC
//     channels) are dropped by their exact address and port pairs, read from
//     `ss`; they hang, as across a real partition, and resume after the heal
//     (TCP retransmits).
// Processes moved into an "exempt" cgroup (the test itself as a client, the
// node agent as the kubelet's local probes) keep reaching the pod on
// connections they open after the move: their first packet marks the
// connection (CONNMARK) and marked connections pass both ways.
//
// Rules live in a chain of their own (NARAD-ISO-<test pid>) jumped to first
// from OUTPUT (loopback packets pass OUTPUT once, on the sending side); heal()
// removes it and moves every process back to the root cgroup. A chain left by
// a test process that died is removed by the next cut().
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const CGROUP2_ROOTS = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"];
const MARK = "0x4e41";

/** The cgroup v2 mount (hybrid hosts mount it at /sys/fs/cgroup/unified). */
function cgroup2Root(): string {
  for (const r of CGROUP2_ROOTS)
    if (existsSync(join(r, "cgroup.procs")) && existsSync(join(r, "cgroup.controllers"))) return r;
  for (const r of CGROUP2_ROOTS) if (existsSync(join(r, "cgroup.procs"))) return r;
  throw new Error("no cgroup v2 mount found");
}

async function iptables(...args: string[]): Promise<void> {
  await run("iptables", ["-w", ...args]);
}

async function moveAll(from: string, to: string): Promise<void> {
  const text = await readFile(join(from, "cgroup.procs"), "utf8").catch(() => "");
  for (const pid of text.split("\n").filter((l) => l.trim() !== ""))
    await writeFile(join(to, "cgroup.procs"), pid).catch(() => undefined);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Removes chains and cgroups left by test processes that are gone. */
async function removeStale(root: string): Promise<void> {
  const { stdout } = await run("iptables", ["-w", "-S"]);
  for (const m of stdout.matchAll(/^-N (NARAD-ISO-(\d+))$/gm)) {
    if (alive(Number(m[2]))) continue;
    await iptables("-D", "OUTPUT", "-j", m[1]!).catch(() => undefined);
    await iptables("-F", m[1]!).catch(() => undefined);
    await iptables("-X", m[1]!).catch(() => undefined);
  }
  for (const name of await readdir(root)) {
    const m = /^narad-iso-(\d+)-(isolated|exempt)$/.exec(name);
    if (m === null || alive(Number(m[1]))) continue;
    await moveAll(join(root, name), root);
    await rmdir(join(root, name)).catch(() => undefined);
  }
}

/** The TCP connections of `pid` whose local address is not `ownIp` (the ones it opened), as 4-tuples. */
async function openedConnections(
  pid: number,
  ownIp: string,
): Promise<Array<[string, string, string, string]>> {
  const { stdout } = await run("ss", ["-tanpH"]);
  const out: Array<[string, string, string, string]> = [];
  for (const line of stdout.split("\n")) {
    if (!line.includes(`pid=${pid},`)) continue;
    const cols = line.trim().split(/\s+/);
    if (cols[0] === "LISTEN") continue;
    const local = cols[3];
    const peer = cols[4];
    const l = local === undefined ? null : /^(\d+\.\d+\.\d+\.\d+):(\d+)$/.exec(local);
    const p = peer === undefined ? null : /^(\d+\.\d+\.\d+\.\d+):(\d+)$/.exec(peer);
    if (l === null || p === null || l[1] === ownIp) continue;
    out.push([l[1]!, l[2]!, p[1]!, p[2]!]);
  }
  return out;
}

export interface LoopbackPartition {
  /** Connections the pod had opened before the cut, now dropped (`local → peer`). */
  readonly cutConnections: string[];
  /** Moves more processes to the exempt side (e.g. the node agent, once the pod should pass its probes again). */
  exempt(pids: number[]): Promise<void>;
  heal(): Promise<void>;
}

/**
 * Cuts the pod at `ip` whose process is `pid` off from everything on the
 * host, except connections opened after now by processes in `exempt`.
 */
export async function cutLoopbackPartition(o: {
  ip: string;
  pid: number;
  exempt: number[];
}): Promise<LoopbackPartition> {
  const root = cgroup2Root();
  await removeStale(root);
  const chain = `NARAD-ISO-${process.pid}`;
  const isolatedName = `narad-iso-${process.pid}-isolated`;
  const exemptName = `narad-iso-${process.pid}-exempt`;
  const isolatedDir = join(root, isolatedName);
  const exemptDir = join(root, exemptName);
  await mkdir(isolatedDir, { recursive: true });
  await mkdir(exemptDir, { recursive: true });
  // The cgroup paths as the match sees them: relative to the v2 root.
  const rules: string[][] = [
    ["-m", "connmark", "--mark", MARK, "-j", "RETURN"],
    ["-d", o.ip, "-m", "cgroup", "--path", exemptName, "-j", "CONNMARK", "--set-mark", MARK],
    ["-d", o.ip, "-m", "cgroup", "--path", exemptName, "-j", "RETURN"],
    ["-d", o.ip, "-j", "DROP"],
    ["-s", o.ip, "-j", "DROP"],
    ["-m", "cgroup", "--path", isolatedName, "-j", "DROP"],
  ];
  for (const pid of o.exempt) await writeFile(join(exemptDir, "cgroup.procs"), String(pid));
  // Moved first: every socket it creates from now on is in its cgroup; the
  // ones it already has are listed after the move, so none is missed.
  await writeFile(join(isolatedDir, "cgroup.procs"), String(o.pid));
  const opened = await openedConnections(o.pid, o.ip);
  for (const [lip, lport, pip, pport] of opened) {
    rules.push(["-p", "tcp", "-s", lip, "--sport", lport, "-d", pip, "--dport", pport, "-j", "DROP"]);
    rules.push(["-p", "tcp", "-s", pip, "--sport", pport, "-d", lip, "--dport", lport, "-j", "DROP"]);
  }
  await iptables("-N", chain);
  for (const r of rules) await iptables("-A", chain, ...r);
  await iptables("-I", "OUTPUT", "1", "-j", chain);
  let healed = false;
  return {
    cutConnections: opened.map(([a, b, c, d]) => `${a}:${b} → ${c}:${d}`),
    exempt: async (pids) => {
      for (const pid of pids) await writeFile(join(exemptDir, "cgroup.procs"), String(pid));
    },
    heal: async () => {
      if (healed) return;
      healed = true;
      await iptables("-D", "OUTPUT", "-j", chain).catch(() => undefined);
      await iptables("-F", chain).catch(() => undefined);
      await iptables("-X", chain).catch(() => undefined);
      await moveAll(isolatedDir, root);
      await moveAll(exemptDir, root);
      await rmdir(isolatedDir).catch(() => undefined);
      await rmdir(exemptDir).catch(() => undefined);
    },
  };
}
