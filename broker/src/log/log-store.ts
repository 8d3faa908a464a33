// Owns every partition log under <dataDir>/topics: opens them lazily (one
// shared open per partition), lists topics found on disk, deletes topics and
// runs retention passes.
//
// Topic deletion order: close the topic's logs → rename topics/<t> into
// <dataDir>/topics-trash/<t>.<ms>.<n> → fsync(topics) and fsync(trash) → remove
// the trash entry recursively. Crash points: before the rename the topic is
// intact; after it the topic is gone from topics/ (a partially deleted topic
// never reappears); a leftover trash entry is removed at the next open.

import { join } from "node:path";
import type { ProducerSequenceLimits } from "../core/producer-sequence.ts";
import { FdBudget } from "./fd-budget.ts";
import { isLogError, LogError } from "./log-errors.ts";
import { type LogIo, nodeLogIo } from "./log-io.ts";
import {
  defaultMaxSegmentFds,
  type LogLogger,
  type OpenedPartitionLog,
  openPartitionLog,
  type ReplicaCommitGate,
  silentLogger,
} from "./partition-log.ts";
import { SegmentHandles } from "./segment-handles.ts";
import type { PartitionStats } from "./types.ts";

export interface LogStoreOptions {
  dataDir: string;
  segmentBytes: number;
  indexIntervalBytes: number;
  maxFrameBytes: number;
  hwmPersistIntervalMs: number;
  /** See OpenPartitionLogOptions.frameTargetBytes. */
  frameTargetBytes?: number;
  nowMs: () => number;
  logger?: LogLogger;
  io?: LogIo;
  /** See OpenPartitionLogOptions.producerEpoch / producerFence / producerLimits. */
  producerEpoch?: (producerId: string) => number | undefined;
  producerFence?: () => Promise<void> | undefined;
  producerLimits?: Partial<ProducerSequenceLimits>;
  /**
   * Whether the topic exists now (the metastore's view). A partition
   * directory is created only while it does: a read, a retention pass or a
   * dispatcher lane that raced DELETE must not bring a deleted topic's
   * directory back (it would hold stale frontiers and be adopted by a later
   * namesake). Asked synchronously right before mkdir, after any in-progress
   * deletion of the topic finished. Unset: always (tests of the log alone).
   */
  topicExists?: (topic: string) => boolean;
  /** Partition logs open at once (fd-budget.ts); absent: unbounded. */
  maxOpenLogs?: number;
  /** Called when an open is refused by maxOpenLogs (a metric). */
  onOpenRefused?: () => void;
  /**
   * Read handles of sealed segments open at once, over all logs of this
   * store (segment-handles.ts); default defaultMaxSegmentFds. The active
   * segment of each open log holds its own handle on top (maxOpenLogs bounds those).
   */
  maxSegmentFds?: number;
  /**
   * Replication (ADR 0007): how a partition may be opened now, asked right
   * before each open. A replicated partition is opened only by its leader
   * (with the leader's commit gate); while this node follows it, its
   * directory belongs to the fetcher and get() refuses with NOT_LEADER.
   * Absent: every partition is single-copy.
   */
  replicaMode?: (topic: string, partition: number) => ReplicaOpenMode;
  /**
   * Called before a topic's files are deleted, awaited: replication stops
   * its fetchers for the topic so none writes into (or recreates) them.
   */
  beforeDeleteTopic?: (topic: string) => Promise<void>;
}

/** How the log store may open a partition (LogStoreOptions.replicaMode). */
export type ReplicaOpenMode =
  | { kind: "single" }
  | {
      kind: "leader";
      gate: ReplicaCommitGate;
      /** The HWM this replica knew (its checkpoint). */
      knownHwm: number;
      /** Called with the opened log before any caller gets it (the leader attaches it). */
      onOpened(log: OpenedPartitionLog): Promise<void>;
    }
  | { kind: "not-leader"; reason: string };

export interface RetentionPolicy {
  /** <= 0 keeps by age forever. */
  retentionMs: number;
  /** <= 0 means no size limit. */
  maxBytes: number;
}

export interface LogStore {
  /** The log of topic/partition, opened (and created) on first use and cached. */
  get(topic: string, partition: number): Promise<OpenedPartitionLog>;
  /** Directory of a partition (whether or not it exists). */
  partitionDir(topic: string, partition: number): string;
  /**
   * Partition moves: until the returned release runs, get() of this
   * partition rejects with PARTITION_MOVING (a destination that owns a
   * partition it has not installed yet must not create an empty log).
   */
  hold(topic: string, partition: number): () => void;
  /**
   * Replaces the partition's directory with `fromDir` (a staged, verified
   * copy on the same file system): closes the open log, moves any old
   * directory to the trash, renames fromDir into place, fsyncs both parents.
   */
  install(topic: string, partition: number, fromDir: string): Promise<void>;
  /** Closes and durably removes one partition's directory (a moved-away partition). */
  removePartition(topic: string, partition: number): Promise<void>;
  /**
   * Closes one partition's open log (after the commits in flight settle)
   * and forgets it; the next get() opens it afresh. Replication: a leader
   * that stops leading hands the directory to its fetcher.
   */
  closePartition(topic: string, partition: number): Promise<void>;
  /** Whether the partition has a directory (without opening or creating it). */
  exists(topic: string, partition: number): Promise<boolean>;
  /**
   * Stats for metadata reads: the open log's, or zeros when the partition
   * has no directory yet; never creates a directory or opens an empty log.
   */
  peekStats(topic: string, partition: number): Promise<PartitionStats>;
  /** Whether the topic has a directory (found at open or created since). */
  has(topic: string): boolean;
  /** Topic names with a directory under topics/, sorted. */
  topics(): string[];
  /** Closes the topic's logs and removes its directory durably. */
  deleteTopic(topic: string): Promise<void>;
  /** Applies each policy to every partition of that topic on disk; returns segments deleted. */
  retentionPass(policies: ReadonlyMap<string, RetentionPolicy>): Promise<number>;
  /** Sealed-segment read handles open now, and the bound (--max-segment-fds). */
  segmentFds(): { open: number; max: number; opens: number; waiting: number };
  closeAll(): Promise<void>;
}

const partitionMax = 99_999;
const partitionDigits = 5;
const partitionDirPattern = /^p(\d{5})$/;

/** Refuses names that could address anything outside topics/<name>. */
export function assertSafeTopicName(topic: string): void {
  if (
    topic.length === 0 ||
    topic === "." ||
    topic === ".." ||
    topic.includes("/") ||
    topic.includes("\\") ||
    topic.includes("\0")
  ) {
    throw new LogError("INVALID_NAME", `unsafe topic name ${JSON.stringify(topic)}`);
  }
}

export function partitionDirName(partition: number): string {
  if (!Number.isSafeInteger(partition) || partition < 0 || partition > partitionMax) {
    throw new LogError("INVALID_NAME", `partition ${partition} out of range`);
  }
  return `p${String(partition).padStart(partitionDigits, "0")}`;
}

export async function openLogStore(opts: LogStoreOptions): Promise<LogStore> {
  const io = opts.io ?? nodeLogIo;
  const topicsDir = join(opts.dataDir, "topics");
  const trashDir = join(opts.dataDir, "topics-trash");
  await io.mkdirp(topicsDir);
  await io.mkdirp(trashDir);
  // Finish deletions interrupted by a crash.
  for (const name of await io.list(trashDir)) await io.removeTree(join(trashDir, name));
  const known = new Set<string>();
  for (const name of await io.list(topicsDir)) {
    if (name !== "." && name !== "..") known.add(name);
  }
  return new LogStoreImpl(opts, io, topicsDir, trashDir, known);
}

class LogStoreImpl implements LogStore {
  readonly #opts: LogStoreOptions;
  readonly #io: LogIo;
  readonly #topicsDir: string;
  readonly #trashDir: string;
  readonly #known: Set<string>;
  readonly #logger: LogLogger;
  /** topic → partition → the (possibly still opening) log. */
  readonly #logs = new Map<string, Map<number, Promise<OpenedPartitionLog>>>();
  /** topic → its in-progress deletion; gets wait for it. */
  readonly #deleting = new Map<string, Promise<void>>();
  #closed = false;
  /** Makes trash names unique even for two deletions within one millisecond. */
  #trashSeq = 0;
  /** "topic/partition" → number of holds (partition moves). */
  readonly #holds = new Map<string, number>();
  readonly #fds: FdBudget;
  readonly #segmentHandles: SegmentHandles;

  constructor(opts: LogStoreOptions, io: LogIo, topicsDir: string, trashDir: string, known: Set<string>) {
    this.#opts = opts;
    this.#io = io;
    this.#topicsDir = topicsDir;
    this.#trashDir = trashDir;
    this.#known = known;
    this.#logger = opts.logger ?? silentLogger;
    this.#fds = new FdBudget(opts.maxOpenLogs ?? Number.MAX_SAFE_INTEGER);
    this.#segmentHandles = new SegmentHandles(io, opts.maxSegmentFds ?? defaultMaxSegmentFds, this.#logger);
  }

  async get(topic: string, partition: number): Promise<OpenedPartitionLog> {
    assertSafeTopicName(topic);
    const dirName = partitionDirName(partition);
    if (this.#closed) throw new LogError("LOG_CLOSED", "log store closed");
    if (this.#holds.has(`${topic}/${partition}`))
      throw new LogError("PARTITION_MOVING", `${topic}/${partition} is being installed by a partition move`);
    const deleting = this.#deleting.get(topic);
    if (deleting !== undefined) await deleting.catch(() => {});
    let byPartition = this.#logs.get(topic);
    if (byPartition === undefined) {
      byPartition = new Map();
      this.#logs.set(topic, byPartition);
    }
    let opening = byPartition.get(partition);
    const fdKey = `${topic}/${partition}`;
    if (opening === undefined) {
      const mode = this.#opts.replicaMode?.(topic, partition) ?? { kind: "single" };
      if (mode.kind === "not-leader")
        throw new LogError("NOT_LEADER", `${topic}/${partition}: ${mode.reason}`);
      if (!this.#fds.reserve()) {
        this.#opts.onOpenRefused?.();
        throw new LogError(
          "TOO_MANY_OPEN_LOGS",
          `this node has ${this.#fds.openCount} partition logs open, its limit (--max-open-logs ${this.#fds.maxOpen})`,
        );
      }
      opening = this.#open(topic, dirName, mode);
      opening.then(
        () => this.#fds.settle(fdKey, true, this.#opts.nowMs()),
        () => this.#fds.settle(fdKey, false, this.#opts.nowMs()),
      );
      byPartition.set(partition, opening);
      // A failed open is not cached: the next get retries.
      opening.catch(() => {
        if (this.#logs.get(topic)?.get(partition) === opening) this.#logs.get(topic)?.delete(partition);
      });
    } else this.#fds.touch(fdKey, this.#opts.nowMs());
    return opening;
  }

  async peekStats(topic: string, partition: number): Promise<PartitionStats> {
    const open = this.#logs.get(topic)?.get(partition);
    if (open !== undefined) return (await open).stats();
    // No directory: nothing was ever stored here, and a read must not create one.
    // It reads as the empty log it would open as: one empty active segment
    // (Narad, whose clients see this, pre-creates that segment).
    if (!(await this.exists(topic, partition)))
      return {
        index: partition,
        segments: 1,
        oldestOffset: 0,
        nextOffset: 0,
        highWatermark: 0,
        sizeBytes: 0,
      };
    return (await this.get(topic, partition)).stats();
  }

  /**
   * Creates topics/<t>/pNNNNN durably when new: mkdir -p → fsync(topics) →
   * fsync(topics/<t>); openPartitionLog then fsyncs the partition dir after
   * creating its files.
   */
  async #open(topic: string, dirName: string, mode: ReplicaOpenMode): Promise<OpenedPartitionLog> {
    const topicDir = join(this.#topicsDir, topic);
    const dir = join(topicDir, dirName);
    if (!(await this.#io.exists(dir))) {
      // The metastore deletes first and the files follow (routes/topics.ts),
      // so once the topic is gone there no later open can recreate its files.
      if (this.#opts.topicExists?.(topic) === false || this.#deleting.has(topic))
        throw new LogError("TOPIC_DELETED", `topic "${topic}" no longer exists`);
      await this.#io.mkdirp(dir);
      await this.#io.fsyncDir(this.#topicsDir);
      await this.#io.fsyncDir(topicDir);
    }
    this.#known.add(topic);
    const log = await openPartitionLog({
      dir,
      segmentBytes: this.#opts.segmentBytes,
      indexIntervalBytes: this.#opts.indexIntervalBytes,
      maxFrameBytes: this.#opts.maxFrameBytes,
      hwmPersistIntervalMs: this.#opts.hwmPersistIntervalMs,
      ...(this.#opts.frameTargetBytes !== undefined ? { frameTargetBytes: this.#opts.frameTargetBytes } : {}),
      nowMs: this.#opts.nowMs,
      io: this.#io,
      logger: this.#logger,
      segmentHandles: this.#segmentHandles,
      ...(this.#opts.producerEpoch !== undefined ? { producerEpoch: this.#opts.producerEpoch } : {}),
      ...(this.#opts.producerFence !== undefined ? { producerFence: this.#opts.producerFence } : {}),
      ...(this.#opts.producerLimits !== undefined ? { producerLimits: this.#opts.producerLimits } : {}),
      ...(mode.kind === "leader" ? { replication: { gate: mode.gate, knownHwm: mode.knownHwm } } : {}),
    });
    if (mode.kind === "leader") {
      try {
        await mode.onOpened(log);
      } catch (err) {
        await log.close().catch(() => {});
        throw err;
      }
    }
    return log;
  }

  partitionDir(topic: string, partition: number): string {
    assertSafeTopicName(topic);
    return join(this.#topicsDir, topic, partitionDirName(partition));
  }

  hold(topic: string, partition: number): () => void {
    const key = `${topic}/${partition}`;
    this.#holds.set(key, (this.#holds.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.#holds.get(key) ?? 1) - 1;
      if (n <= 0) this.#holds.delete(key);
      else this.#holds.set(key, n);
    };
  }

  closePartition(topic: string, partition: number): Promise<void> {
    return this.#closePartition(topic, partition);
  }

  async #closePartition(topic: string, partition: number): Promise<void> {
    const opening = this.#logs.get(topic)?.get(partition);
    if (opening === undefined) return;
    this.#logs.get(topic)?.delete(partition);
    try {
      await (await opening).close();
    } catch (err) {
      this.#logger.warn({ topic, partition, err }, "closing partition log failed");
    } finally {
      // After the open settled: its settle() must not re-add the key.
      this.#fds.closed(`${topic}/${partition}`);
    }
  }

  /** Moves an existing partition dir to the trash (rename + fsyncs), then removes it. */
  async #trashPartition(topic: string, partition: number): Promise<void> {
    const dir = this.partitionDir(topic, partition);
    if (!(await this.#io.exists(dir))) return;
    const trash = join(
      this.#trashDir,
      // Not derived from the topic name: a 255-character name plus a suffix would pass NAME_MAX.
      `p.${partitionDirName(partition)}.${this.#opts.nowMs()}.${this.#trashSeq++}`,
    );
    await this.#io.rename(dir, trash);
    await this.#io.fsyncDir(join(this.#topicsDir, topic));
    await this.#io.fsyncDir(this.#trashDir);
    await this.#io.removeTree(trash);
  }

  async install(topic: string, partition: number, fromDir: string): Promise<void> {
    const dir = this.partitionDir(topic, partition);
    const topicDir = join(this.#topicsDir, topic);
    await this.#closePartition(topic, partition);
    await this.#trashPartition(topic, partition);
    if (!(await this.#io.exists(topicDir))) {
      await this.#io.mkdirp(topicDir);
      await this.#io.fsyncDir(this.#topicsDir);
    }
    // Crash point: before the rename the staged copy is outside topics/ and the partition is absent here.
    await this.#io.rename(fromDir, dir);
    await this.#io.fsyncDir(topicDir);
    this.#known.add(topic);
    this.#logger.info({ topic, partition }, "log store installed a moved partition");
  }

  exists(topic: string, partition: number): Promise<boolean> {
    return this.#io.exists(this.partitionDir(topic, partition));
  }

  async removePartition(topic: string, partition: number): Promise<void> {
    await this.#closePartition(topic, partition);
    await this.#trashPartition(topic, partition);
    this.#logger.info({ topic, partition }, "log store removed a moved-away partition");
  }

  has(topic: string): boolean {
    return this.#known.has(topic);
  }

  topics(): string[] {
    return [...this.#known].sort();
  }

  deleteTopic(topic: string): Promise<void> {
    try {
      assertSafeTopicName(topic);
    } catch (err) {
      return Promise.reject(err);
    }
    const existing = this.#deleting.get(topic);
    if (existing !== undefined) return existing;
    const run = this.#delete(topic).finally(() => this.#deleting.delete(topic));
    this.#deleting.set(topic, run);
    return run;
  }

  async #delete(topic: string): Promise<void> {
    await this.#opts.beforeDeleteTopic?.(topic);
    await this.#closeTopic(topic);
    this.#known.delete(topic);
    const topicDir = join(this.#topicsDir, topic);
    if (!(await this.#io.exists(topicDir))) return;
    // Not derived from the topic name (up to 255 characters, NAME_MAX): a fixed-size name.
    const trash = join(this.#trashDir, `t.${this.#opts.nowMs()}.${this.#trashSeq++}`);
    await this.#io.rename(topicDir, trash);
    await this.#io.fsyncDir(this.#topicsDir);
    await this.#io.fsyncDir(this.#trashDir);
    await this.#io.removeTree(trash);
    this.#logger.info({ topic }, "log store deleted topic");
  }

  async #closeTopic(topic: string): Promise<void> {
    const byPartition = this.#logs.get(topic);
    if (byPartition === undefined) return;
    this.#logs.delete(topic);
    const results = await Promise.allSettled([...byPartition.values()].map(async (p) => (await p).close()));
    for (const partition of byPartition.keys()) this.#fds.closed(`${topic}/${partition}`);
    for (const r of results) {
      if (r.status === "rejected")
        this.#logger.warn({ topic, err: r.reason }, "closing partition log failed");
    }
  }

  async retentionPass(policies: ReadonlyMap<string, RetentionPolicy>): Promise<number> {
    let deleted = 0;
    for (const [topic, policy] of policies) {
      if (!this.#known.has(topic) || this.#deleting.has(topic)) continue;
      for (const name of await this.#io.list(join(this.#topicsDir, topic))) {
        const m = partitionDirPattern.exec(name);
        if (m === null) continue;
        try {
          const log = await this.get(topic, Number(m[1]));
          deleted += await log.applyRetention(policy.retentionMs, policy.maxBytes);
        } catch (err) {
          // A replicated partition this node follows: its fetcher keeps the copy.
          if (isLogError(err, "NOT_LEADER")) continue;
          this.#logger.warn({ topic, partition: name, err }, "retention failed for partition");
        }
      }
    }
    return deleted;
  }

  segmentFds(): { open: number; max: number; opens: number; waiting: number } {
    const h = this.#segmentHandles;
    return { open: h.openCount, max: h.maxOpen, opens: h.opens, waiting: h.waiting };
  }

  async closeAll(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#deleting.values()]);
    for (const topic of [...this.#logs.keys()]) await this.#closeTopic(topic);
  }
}
