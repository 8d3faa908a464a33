// Several broker processes on this machine for the cluster benchmarks
// (bench/cluster.ts, bench/replication.ts): each its own process, data dir,
// HTTP port and cluster (gRPC) port.
//
// There is no shared metastore service, so each process builds the same
// in-memory one (testing/memory-metastore.ts) from its arguments: the same
// members, the same member volume ids and the same topics created in the same
// order, hence the same owners and the same replicated records (placement is
// deterministic: round-robin over the sorted member ids), and the same topic
// uids (each process's memory metastore picks a random one, and an owner
// refuses a CommitBatch for another incarnation: every view here reports a
// uid derived from the topic's name instead). Writes a process
// makes later (a leader's ISR changes) land in its own view only; a benchmark
// without failures needs no more, and the leader's own view is the one its
// HWM follows.
//
// A child takes admin commands as JSON lines on stdin and answers each with
// one JSON line on stdout (after the first line, which says it is ready):
//   {"op": "setVolumeId", "member", "volumeId"}  what the operator records
//       when a member comes back on a new volume;
//   {"op": "record", "topic", "partition"}  the replicated record as this
//       process sees it (with the ISR's volume ids).
// These hooks are the benchmark's stand-in for the operator; they stay here,
// never in broker/src.

import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pino } from "pino";
import { loadConfig } from "../../broker/src/config.ts";
import type { Metastore, TopicConfig } from "../../broker/src/meta/types.ts";
import { startBroker } from "../../broker/src/node.ts";
import { encodeVolumeId, volumeIdFileName } from "../../broker/src/replication/volume-id.ts";
import { createMemoryCluster } from "../../broker/src/testing/memory-metastore.ts";
import { freePort, repoRoot, waitReady } from "../../broker/test/harness/process.ts";
import type { ReplicaAssignment } from "../../packages/api/src/v1alpha1/replication.ts";

export interface Peer {
  id: string;
  http: number;
  cluster: number;
}

export interface BenchTopic {
  name: string;
  partitions: number;
  replication_factor?: number;
  min_insync_replicas?: number;
}

export interface ChildSpec {
  id: string;
  dataDir: string;
  peers: Peer[];
  /** Created in this order in every process (the same order gives the same placement). */
  topics: BenchTopic[];
  /** Member volume ids known before the topics are created: the replicated records' ISR entries name them. */
  volumeIds?: Record<string, string>;
  /** Set after the topics are created: a member back on a new volume (the records still name its old one). */
  laterVolumeIds?: Record<string, string>;
  /** Extra broker flags. */
  args?: string[];
  /** The broker's log (pino JSON lines, warn and above) goes here, appended; stderr when unset. */
  logFile?: string;
}

/** What a child says once it serves. */
export interface ChildInfo {
  id: string;
  /** Per topic, the owner (leader) of each partition. */
  owners: Record<string, string[]>;
  /** Per topic, each partition's replicated record (null: one copy). */
  records: Record<string, Array<ReplicaAssignment | null>>;
}

/** Marks the child's protocol lines on stdout; anything else there is passed on to stderr. */
const protocolPrefix = "@bench ";

type Command =
  | { op: "setVolumeId"; member: string; volumeId: string }
  | { op: "record"; topic: string; partition: number };

// ---------------------------------------------------------------------------
// Child side: one broker (run by bench/lib/cluster-child.ts).

/** The uid every process gives a topic: uuid-shaped, from its name. */
export function benchTopicUid(name: string): string {
  const h = createHash("sha256").update(`narad-bench-topic:${name}`).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** A metastore view whose topics carry benchTopicUid instead of the random uid it assigned. */
function withNameUids(m: Metastore): Metastore {
  const fix = (t: TopicConfig): TopicConfig => ({ ...t, uid: benchTopicUid(t.name) });
  let listedIn: readonly TopicConfig[] | undefined;
  let listedOut: readonly TopicConfig[] = [];
  return {
    ...m,
    listTopics() {
      const list = m.listTopics();
      if (list !== listedIn) {
        listedIn = list;
        listedOut = list.map(fix);
      }
      return listedOut;
    },
    getTopic(name) {
      const t = m.getTopic(name);
      return t === undefined ? undefined : fix(t);
    },
    createTopic: async (topic) => fix(await m.createTopic(topic)),
    updateTopic: async (name, patch) => fix(await m.updateTopic(name, patch)),
    confirmTopicDeleted: (name, uid) =>
      m.confirmTopicDeleted(name, uid === benchTopicUid(name) ? m.getTopic(name)?.uid : uid),
  };
}

export async function serveChild(spec: ChildSpec): Promise<void> {
  const mc = createMemoryCluster(
    spec.peers.map((p) => ({
      id: p.id,
      address: `127.0.0.1:${p.http}`,
      clusterAddress: `127.0.0.1:${p.cluster}`,
      state: "Active" as const,
    })),
  );
  for (const [member, volumeId] of Object.entries(spec.volumeIds ?? {})) mc.setVolumeId(member, volumeId);
  const metastore = withNameUids(mc.metastore());
  for (const t of spec.topics) {
    await metastore.createTopic({
      name: t.name,
      partitions: t.partitions,
      ...(t.replication_factor === undefined ? {} : { replication_factor: t.replication_factor }),
      ...(t.min_insync_replicas === undefined ? {} : { min_insync_replicas: t.min_insync_replicas }),
      retention_ms: 0,
      retention_bytes: 0,
      visibility_timeout_ms: 30_000,
      max_in_flight_per_partition: 1024,
      max_acked_ahead_per_partition: 1024,
      created_at: new Date().toISOString(),
    });
  }
  for (const [member, volumeId] of Object.entries(spec.laterVolumeIds ?? {}))
    mc.setVolumeId(member, volumeId);
  const me = spec.peers.find((p) => p.id === spec.id);
  if (me === undefined) throw new Error(`no peer ${spec.id}`);
  const config = loadConfig(
    [
      "--addr",
      `127.0.0.1:${me.http}`,
      "--cluster-addr",
      `127.0.0.1:${me.cluster}`,
      "--data-dir",
      spec.dataDir,
      "--node-id",
      spec.id,
      ...(spec.args ?? []),
    ],
    {},
    spec.id,
  );
  // Logs go to a file or stderr: stdout carries the protocol lines.
  const logTo = spec.logFile === undefined ? 2 : { dest: spec.logFile, append: true, sync: true };
  const broker = await startBroker(config, pino({ level: "warn" }, pino.destination(logTo)), { metastore });
  const info: ChildInfo = { id: spec.id, owners: {}, records: {} };
  for (const t of spec.topics) {
    info.owners[t.name] = mc.owners(t.name);
    info.records[t.name] = Array.from(
      { length: t.partitions },
      (_, p) => mc.replicaAssignment(t.name, p) ?? null,
    );
  }
  process.stdout.write(`${protocolPrefix}${JSON.stringify(info)}\n`);
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    let answer: unknown;
    try {
      const c = JSON.parse(line) as Command;
      if (c.op === "setVolumeId") {
        mc.setVolumeId(c.member, c.volumeId);
        answer = { ok: true };
      } else if (c.op === "record")
        answer = { ok: true, record: mc.replicaAssignment(c.topic, c.partition) ?? null };
      else answer = { ok: false, error: `unknown op in ${line}` };
    } catch (err) {
      answer = { ok: false, error: String(err) };
    }
    process.stdout.write(`${protocolPrefix}${JSON.stringify(answer)}\n`);
  });
  process.once("SIGTERM", () => {
    broker.shutdown().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

// ---------------------------------------------------------------------------
// Parent side.

/** Writes a data dir's volume-id marker (a new volume of `memberId`); returns its uuid. */
export function writeVolumeMarker(dataDir: string, memberId: string): string {
  mkdirSync(dataDir, { recursive: true });
  const uuid = randomUUID();
  writeFileSync(join(dataDir, volumeIdFileName), encodeVolumeId({ uuid, clusterUid: "", memberId }));
  return uuid;
}

interface Running {
  child: ChildProcess;
  info: ChildInfo;
  /** Answers to admin commands, in order. */
  waiting: Array<(line: string) => void>;
}

export interface LocalClusterOptions {
  ids: string[];
  topics: BenchTopic[];
  /** Extra broker flags for every process. */
  args?: string[];
  /** Pre-create each data dir's volume-id marker and give every process all of them. */
  volumeIds?: boolean;
  /** Data dir name prefix under the temp dir. */
  prefix?: string;
  /** Each broker logs to <logDir>/<id>.log (stderr when unset). */
  logDir?: string;
}

export class LocalCluster {
  readonly peers: Peer[];
  readonly opts: LocalClusterOptions;
  /** Member → data dir. */
  readonly dirs = new Map<string, string>();
  /** Member → the volume id the records were created with. */
  readonly volumeIds: Record<string, string> = {};
  readonly #running = new Map<string, Running>();
  /** Every child process alive, started or not. */
  readonly #spawned = new Set<ChildProcess>();

  private constructor(peers: Peer[], opts: LocalClusterOptions) {
    this.peers = peers;
    this.opts = opts;
    // A benchmark stopped by a signal or an uncaught error leaves no broker behind.
    process.once("exit", () => {
      for (const child of this.#spawned) child.kill("SIGKILL");
    });
    for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => process.exit(130));
  }

  /** Starts every member and waits until all are ready. */
  static async start(opts: LocalClusterOptions): Promise<LocalCluster> {
    const peers: Peer[] = [];
    for (const id of opts.ids) peers.push({ id, http: await freePort(), cluster: await freePort() });
    const c = new LocalCluster(peers, opts);
    for (const p of peers) {
      const dir = mkdtempSync(join(tmpdir(), `${opts.prefix ?? "narad-bench"}-${p.id}-`));
      c.dirs.set(p.id, dir);
      if (opts.volumeIds) c.volumeIds[p.id] = writeVolumeMarker(dir, p.id);
    }
    try {
      await Promise.all(peers.map((p) => c.startMember(p.id)));
    } catch (err) {
      await c.stop();
      throw err;
    }
    return c;
  }

  url(id: string): string {
    const p = this.peers.find((x) => x.id === id);
    if (p === undefined) throw new Error(`no member ${id}`);
    return `http://127.0.0.1:${p.http}`;
  }

  get urls(): string[] {
    return this.peers.map((p) => this.url(p.id));
  }

  info(id: string): ChildInfo {
    const r = this.#running.get(id);
    if (r === undefined) throw new Error(`member ${id} is not running`);
    return r.info;
  }

  /** Starts (or restarts) a member's process on its data dir; resolves once it is ready. */
  async startMember(id: string, laterVolumeIds?: Record<string, string>): Promise<void> {
    if (this.#running.has(id)) throw new Error(`member ${id} runs already`);
    const dataDir = this.dirs.get(id);
    if (dataDir === undefined) throw new Error(`no member ${id}`);
    const spec: ChildSpec = {
      id,
      dataDir,
      peers: this.peers,
      topics: this.opts.topics,
      ...(this.opts.volumeIds ? { volumeIds: this.volumeIds } : {}),
      ...(laterVolumeIds === undefined ? {} : { laterVolumeIds }),
      ...(this.opts.args === undefined ? {} : { args: this.opts.args }),
      ...(this.opts.logDir === undefined ? {} : { logFile: join(this.opts.logDir, `${id}.log`) }),
    };
    const child = spawn(
      process.execPath,
      [join(repoRoot, "bench/lib/cluster-child.ts"), JSON.stringify(spec)],
      {
        stdio: ["pipe", "pipe", "inherit"],
      },
    );
    this.#spawned.add(child);
    child.once("exit", () => this.#spawned.delete(child));
    const lines = createInterface({ input: child.stdout! });
    const answers: Array<(line: string) => void> = [];
    lines.on("line", (line) => {
      if (line.startsWith(protocolPrefix)) answers.shift()?.(line.slice(protocolPrefix.length));
      else process.stderr.write(`[${id}] ${line}\n`);
    });
    const info = await new Promise<ChildInfo>((resolve, reject) => {
      child.once("exit", (code, signal) =>
        reject(new Error(`member ${id} exited (${code ?? signal}) before it served`)),
      );
      answers.push((line) => resolve(JSON.parse(line) as ChildInfo));
    });
    const running: Running = { child, info, waiting: answers };
    this.#running.set(id, running);
    await waitReady(this.url(id));
  }

  /** Sends an admin command to a member's process; resolves with its answer. */
  async command(
    id: string,
    cmd: Command,
  ): Promise<{ ok: boolean; error?: string; record?: ReplicaAssignment | null }> {
    const r = this.#running.get(id);
    if (r === undefined) throw new Error(`member ${id} is not running`);
    const line = await new Promise<string>((resolve) => {
      r.waiting.push(resolve);
      r.child.stdin!.write(`${JSON.stringify(cmd)}\n`);
    });
    const answer = JSON.parse(line) as { ok: boolean; error?: string; record?: ReplicaAssignment | null };
    if (!answer.ok) throw new Error(`member ${id}: ${answer.error}`);
    return answer;
  }

  /** kill -9 of a member's process: no drain, no flush. */
  async kill9(id: string): Promise<void> {
    const r = this.#running.get(id);
    if (r === undefined) return;
    this.#running.delete(id);
    if (r.child.exitCode !== null || r.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => r.child.once("exit", () => resolve()));
    r.child.kill("SIGKILL");
    await exited;
  }

  /** Stops every process (SIGTERM: drain, then exit; SIGKILL after 30 s) and removes the data dirs. */
  async stop(): Promise<void> {
    const all = [...this.#spawned];
    this.#running.clear();
    await Promise.all(
      all.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once("exit", () => resolve());
            child.kill("SIGTERM");
            setTimeout(() => child.kill("SIGKILL"), 30_000).unref();
          }),
      ),
    );
    for (const d of this.dirs.values()) rmSync(d, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// What the benchmarks read from a broker.

/** The sum of a topic's partition high watermarks (any node answers for every partition). */
export async function hwmSum(url: string, topic: string): Promise<number> {
  const res = await fetch(`${url}/v1/topics/${topic}`);
  if (res.status !== 200) return -1;
  const info = (await res.json()) as { partition_stats: Array<{ high_watermark: number }> };
  return info.partition_stats.reduce((a, p) => a + p.high_watermark, 0);
}

/** Records in a node's ingress WAL not yet committed to their partitions. */
export async function pendingRecords(url: string): Promise<number> {
  const s = (await (await fetch(`${url}/admin/v1/status`)).json()) as { wal: { pendingRecords: number } };
  return s.wal.pendingRecords;
}

/** Messages this node accepted (narad_messages_produced_total), all topics or one. */
export async function produced(url: string, topic?: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let n = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith("narad_messages_produced_total{")) continue;
    if (topic !== undefined && !line.includes(`topic="${topic}"`)) continue;
    n += Number(line.split(" ")[1]);
  }
  return n;
}
