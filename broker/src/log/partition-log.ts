// A topic-partition log: segments `<20-digit base>.log` plus an `hwm` file
// in data/topics/<topic>/pNNNNN/.
//
// Invariants (asserted where cheap):
//  I1 read() never returns an offset >= hwm.
//  I2 hwm only advances after the frames holding those offsets were written,
//     fdatasync'd, read back with a real pread and CRC-verified.
//  I3 offsets are assigned densely from nextOffset; nextOffset === hwm
//     between commits (commits are serialised on one promise chain).
//  I4 dedup: for each ingress incarnation, every seq <= committedSeq(inc)
//     is in the log (or was, before retention); such records are dropped.
//  I4b producer dedup: per idempotent producer, a record whose (epoch, seq)
//     is in the producer's committed window is dropped as a duplicate, and
//     one whose epoch is below the producer's current epoch is dropped as
//     fenced (log/producer-dedup.ts). Rebuilt at open from 0x04 records.
//  I5 an offset that may have been served (below a persisted hwm) is never
//     reassigned, even if its frame was lost to corruption.
//
// Commit fsync order (crash points named A–C):
//   [roll: create segment → fsync(dir)]
//   writev(frames) at the verified end          — A: crash leaves a torn or whole-but-unacked tail
//   fdatasync(segment)                          — B: crash leaves whole, unacked frames (exposed at
//                                                    reopen; the WAL re-dispatch is deduped)
//   pread + verify header and CRC of each frame — C: crash before the HWM moves is the same as B
//   advance verifiedEnd, nextOffset, hwm, dedup → resolve.
// On any failure between A and the advance the tail is truncated back to the
// verified end and fdatasync'd, and the commit rejects with the I/O error or
// COMMIT_VERIFY_FAILED; the HWM is unchanged. If that rollback itself fails
// the log is marked failed: later commits reject with LOG_FAILED until the
// log is reopened (recovery then classifies the tail). Reads keep working.
//
// Dedup is rebuilt at open by scanning every record of every retained
// segment (the same pass that CRC-checks frames and builds the sparse
// indexes), so open costs one sequential read of the partition. A persisted
// snapshot would make open O(tail) and is left for later.

import { basename, join } from "node:path";
import {
  encodeFrame,
  frameBytes,
  frameHeaderBytes,
  isIncarnation,
  parseFrameHeader,
  recordFingerprint,
  recordFrameBytes,
  verifyFrameCrc,
} from "../core/log-codec.ts";
import { type ProducerSequenceLimits, ProducerSequences } from "../core/producer-sequence.ts";
import type { CommitRecord, ProducerStamp, StoredRecord } from "../core/records.ts";
import { raiseFloorFromSegment, readDedupFloor, writeDedupFloor } from "./dedup-floor.ts";
import { HwmFile, readHwmFile } from "./hwm.ts";
import { LogError } from "./log-errors.ts";
import { type LogIo, nodeLogIo } from "./log-io.ts";
import { RecentOffsets } from "./recent-offsets.ts";
import { recoverSegment, type SegmentRecovery } from "./recovery.ts";
import { parseSegmentFileName, Segment, segmentFileName } from "./segment.ts";
import { SegmentHandles } from "./segment-handles.ts";
import {
  type CommitResult,
  commitOutcome,
  type PartitionLog,
  type PartitionLogOptions,
  type PartitionStats,
} from "./types.ts";

/** Placeholder outcomes for records to append: freshIndexBase - index (always below every commitOutcome code). */
const freshIndexBase = -1000;

/** Structured logger (pino-compatible subset). */
export interface LogLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentLogger: LogLogger = { info() {}, warn() {}, error() {} };

export interface OpenPartitionLogOptions extends PartitionLogOptions {
  /** The hwm file is rewritten at most this long after the HWM moves (and on close). */
  hwmPersistIntervalMs: number;
  /**
   * A commit is split into frames of about this many bytes (default:
   * maxFrameBytes). Config should pass ~8 MiB so read-back and reads stay small.
   */
  frameTargetBytes?: number;
  io?: LogIo;
  logger?: LogLogger;
  /** The current epoch of an idempotent producer in the durable producer registry, if known. */
  producerEpoch?: (producerId: string) => number | undefined;
  /**
   * Whether producerEpoch may be trusted for a decision made right now (the
   * registry's fence lease, docs/adr/0008-producer-fence-lease.md):
   * undefined when it may, else a promise that resolves once it may or
   * rejects when it cannot (the commit then fails before anything is
   * written; the dispatcher retries it). Asked only by commits that carry
   * producer stamps; the epoch checks follow synchronously.
   */
  producerFence?: () => Promise<void> | undefined;
  /** Bounds of the per-producer state (core/producer-sequence.ts). */
  producerLimits?: Partial<ProducerSequenceLimits>;
  /**
   * Read handles of sealed segments, shared by every log of a store
   * (segment-handles.ts). Absent: a cache of defaultMaxSegmentFds for this log alone.
   */
  segmentHandles?: SegmentHandles;
  /**
   * Replication (ADR 0007): this log is a replicated partition's copy, opened
   * by its leader. Commits append, fsync and verify as always, but the HWM
   * no longer follows the log end: it moves only by advanceHwm (the leader,
   * once enough replicas hold the records), and commitDurable resolves only
   * once the gate says the records are replicated. Absent: a single-copy
   * partition, whose HWM is its durable end.
   */
  replication?: {
    gate: ReplicaCommitGate;
    /** The highest HWM this replica knew (its replica checkpoint); the HWM starts at it, capped by the log end. */
    knownHwm: number;
  };
}

/** What a replicated partition's leader plugs into its log (replication-io/leader-state.ts). */
export interface ReplicaCommitGate {
  /** Throws (LogError NOT_LEADER) when this node may not append now; checked in the commit chain right before each write. */
  assertLeading(): void;
  /** The durable log end moved (a verified local append): the leader's HWM may move. */
  onLogEnd(end: number): void;
  /**
   * Resolves once everything below `end` is replicated (the HWM passed it);
   * rejects with NOT_ENOUGH_REPLICAS, REPLICATION_TIMEOUT or NOT_LEADER.
   * The records stay appended either way: a re-send is deduped and waits again.
   */
  awaitReplicated(end: number): Promise<void>;
}

/** Sealed-segment read handles open at once when no shared cache is given (--max-segment-fds). */
export const defaultMaxSegmentFds = 1_024;

export interface PartitionRecoveryReport {
  segments: number;
  frames: number;
  /** Corrupt ranges skipped (gaps), never served. */
  gaps: number;
  truncatedBytes: number;
  corruptTailBytes: number;
  /** Value of the hwm file at open (null when missing or malformed). */
  hwmFile: number | null;
  /** End of the valid recovered data (next offset after the last valid frame). */
  recoveredEnd: number;
}

/** A segment's file name base and its verified byte length (what a partition move copies). */
export interface SegmentExtent {
  base: number;
  bytes: number;
}

export interface OpenedPartitionLog extends PartitionLog {
  readonly recovery: PartitionRecoveryReport;
  /** Forces the hwm file to the current HWM (write + fdatasync). */
  flush(): Promise<void>;
  /** Segments oldest first with their verified lengths; consistent with stats().highWatermark. */
  segmentExtents(): SegmentExtent[];
  /**
   * Raw bytes [position, position+length) of segment `base`, never past its
   * verified end (partition moves copy segments byte for byte). Null when
   * retention removed the segment.
   */
  readSegmentBytes(base: number, position: number, length: number): Promise<Buffer | null>;
  /**
   * Partition moves: refuse commits (PARTITION_FROZEN) from now on; resolves
   * once every commit already started has finished, so the HWM is final.
   */
  freeze(): Promise<void>;
  unfreeze(): void;
  readonly frozen: boolean;
  /**
   * Partition moves: the highest committed seq of every ingress incarnation
   * this log knows (its dedup floor plus its segments), a copy. The moved
   * copy keeps it as its floor: the segments alone may no longer say it.
   */
  committedSeqs(): Map<string, number>;
  /**
   * Replication (ADR 0007): the raw frames, exactly as stored, that start at
   * `fromOffset` (which must be a frame boundary at or below the limit), up
   * to about `maxBytes` (at least one frame), never at or past the limit:
   * the HWM (default), or the durable log end ("end": a replicated leader
   * serving its followers, which must get records before they are committed).
   */
  readRawFrames(fromOffset: number, maxBytes: number, limit?: "hwm" | "end"): Promise<RawFrames>;
  /** Resolves once the HWM is above `offset`, after `ms`, or on abort (whichever is first). */
  waitForHwmAbove(offset: number, ms: number, signal?: AbortSignal): Promise<void>;
  /** Resolves once the durable log end is above `offset`, after `ms`, or on abort. */
  waitForEndAbove(offset: number, ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Replicated logs: moves the HWM up to `hwm` (capped by the durable end;
   * never backwards). Called by the leader once enough replicas hold the records.
   */
  advanceHwm(hwm: number): void;
  /** Whether this log is a replicated partition's (its HWM is the leader's to move). */
  readonly replicated: boolean;
}

/** Raw frames of a partition log (readRawFrames). */
export interface RawFrames {
  /** Whole frames, concatenated as on disk. Empty at the HWM. */
  frames: Buffer;
  /** First offset after the last frame returned (fromOffset when empty). */
  nextOffset: number;
}

const partitionDirPattern = /^p(\d{5})$/;

function assertPositiveInt(name: string, v: number): void {
  if (!Number.isSafeInteger(v) || v <= 0)
    throw new Error(`openPartitionLog: ${name} must be a positive integer`);
}

/** Opens (creating when missing) and recovers the partition log in opts.dir. */
export async function openPartitionLog(opts: OpenPartitionLogOptions): Promise<OpenedPartitionLog> {
  assertPositiveInt("segmentBytes", opts.segmentBytes);
  assertPositiveInt("indexIntervalBytes", opts.indexIntervalBytes);
  assertPositiveInt("maxFrameBytes", opts.maxFrameBytes);
  assertPositiveInt("hwmPersistIntervalMs", opts.hwmPersistIntervalMs);
  const m = partitionDirPattern.exec(basename(opts.dir));
  if (m === null) throw new Error(`openPartitionLog: ${opts.dir} is not a pNNNNN directory`);
  const io = opts.io ?? nodeLogIo;
  const logger = opts.logger ?? silentLogger;
  const handles = opts.segmentHandles ?? new SegmentHandles(io, defaultMaxSegmentFds, logger);
  await io.mkdirp(opts.dir);
  const hwmFile = await readHwmFile(io, opts.dir);
  const bases: number[] = [];
  for (const name of await io.list(opts.dir)) {
    const base = parseSegmentFileName(name);
    if (base !== null) bases.push(base);
  }
  bases.sort((a, b) => a - b);
  let createdSegment = false;
  if (bases.length === 0) {
    // I5: with no segments left, start at the persisted HWM, not 0.
    bases.push(hwmFile ?? 0);
    createdSegment = true;
  }
  // Seeded with what segments deleted by retention knew (dedup-floor.ts);
  // recovery raises it with what the remaining segments hold.
  const dedup = await readDedupFloor(io, opts.dir);
  const producers = new ProducerSequences(opts.producerLimits ?? {});
  // The offsets of the last records, rebuilt from the log: a record re-sent
  // after a restart, or to a newly elected leader that copied it, is answered
  // with the offset it got.
  const recent = new RecentOffsets();
  const segments: Segment[] = [];
  const report: PartitionRecoveryReport = {
    segments: bases.length,
    frames: 0,
    gaps: 0,
    truncatedBytes: 0,
    corruptTailBytes: 0,
    hwmFile,
    recoveredEnd: 0,
  };
  try {
    for (let i = 0; i < bases.length; i++) {
      const base = bases[i]!;
      const path = join(opts.dir, segmentFileName(base));
      const seg = new Segment(
        base,
        path,
        await io.open(path, createdSegment),
        opts.indexIntervalBytes,
        handles,
      );
      segments.push(seg);
      const prev = segments[i - 1];
      if (prev !== undefined && base < prev.endOffset) {
        throw new Error(
          `${path}: base offset ${base} overlaps the previous segment (ends ${prev.endOffset})`,
        );
      }
      const active = i === bases.length - 1;
      const r = await recoverSegment(
        seg,
        await seg.writer.size(),
        active,
        opts.maxFrameBytes,
        dedup,
        producers,
        recent,
      );
      addRecovery(report, r);
      // A sealed segment's handle goes back now: reads reopen it through the
      // bounded cache, so opening a log with thousands of segments holds one.
      if (!active) await seg.seal();
    }
    // Crash point: a crash before this fsync may lose the new empty segment; reopening recreates it.
    if (createdSegment) await io.fsyncDir(opts.dir);
  } catch (err) {
    await Promise.allSettled(segments.map((s) => s.retire()));
    throw err;
  }
  const last = segments[segments.length - 1]!;
  report.recoveredEnd = last.endOffset;
  // A replicated copy never skips offsets (its offsets are the leader's: a
  // missing tail is fetched again, not jumped over), and its HWM is what the
  // replicas agreed on, not its own end.
  const replicated = opts.replication !== undefined;
  const next = replicated ? last.endOffset : Math.max(last.endOffset, hwmFile ?? 0);
  const initialHwm = replicated
    ? Math.min(next, Math.max(hwmFile ?? 0, opts.replication?.knownHwm ?? 0))
    : next;
  if (hwmFile !== null && hwmFile > last.endOffset) {
    logger.error(
      { dir: opts.dir, hwmFile, recoveredEnd: last.endOffset },
      "partition log lost acknowledged data; offsets up to the persisted hwm are skipped, not reused",
    );
  }
  if (report.gaps > 0 || report.truncatedBytes > 0 || report.corruptTailBytes > 0) {
    logger.warn({ dir: opts.dir, ...report }, "partition log recovered with damage");
  }
  const hwm = await HwmFile.open(io, opts.dir, initialHwm);
  return new PartitionLogImpl(
    opts,
    io,
    logger,
    Number(m[1]),
    segments,
    dedup,
    producers,
    recent,
    next,
    initialHwm,
    hwm,
    report,
    handles,
  );
}

function addRecovery(report: PartitionRecoveryReport, r: SegmentRecovery): void {
  report.frames += r.frames;
  report.gaps += r.gaps;
  report.truncatedBytes += r.truncatedBytes;
  report.corruptTailBytes += r.corruptTailBytes;
}

interface PlannedFrame {
  buf: Buffer;
  baseOffset: number;
  count: number;
}

class PartitionLogImpl implements OpenedPartitionLog {
  readonly recovery: PartitionRecoveryReport;
  readonly #opts: OpenPartitionLogOptions;
  readonly #io: LogIo;
  readonly #logger: LogLogger;
  readonly #index: number;
  readonly #segments: Segment[];
  readonly #dedup: Map<string, number>;
  readonly #producers: ProducerSequences;
  readonly #hwmFile: HwmFile;
  readonly #frameTargetBytes: number;
  #nextOffset: number;
  #hwm: number;
  #chain: Promise<unknown> = Promise.resolve();
  #closed = false;
  #failed: Error | null = null;
  #hwmTimer: NodeJS.Timeout | null = null;
  #frozen = false;
  #commitCount = 0;
  #lastEvictMs = 0;
  readonly #recent: RecentOffsets;
  readonly #handles: SegmentHandles;
  /** Long polls (waitForHwmAbove, waitForEndAbove), woken when the HWM or the log end moves; each checks its own condition. */
  readonly #hwmWaiters = new Set<() => void>();
  readonly #gate: ReplicaCommitGate | undefined;

  constructor(
    opts: OpenPartitionLogOptions,
    io: LogIo,
    logger: LogLogger,
    index: number,
    segments: Segment[],
    dedup: Map<string, number>,
    producers: ProducerSequences,
    recent: RecentOffsets,
    next: number,
    initialHwm: number,
    hwmFile: HwmFile,
    report: PartitionRecoveryReport,
    handles: SegmentHandles,
  ) {
    this.#gate = opts.replication?.gate;
    this.#handles = handles;
    this.#opts = opts;
    this.#io = io;
    this.#logger = logger;
    this.#index = index;
    this.#segments = segments;
    this.#dedup = dedup;
    this.#producers = producers;
    this.#recent = recent;
    this.#nextOffset = next;
    this.#hwm = initialHwm;
    this.#hwmFile = hwmFile;
    this.recovery = report;
    this.#frameTargetBytes = Math.min(opts.frameTargetBytes ?? opts.maxFrameBytes, opts.maxFrameBytes);
  }

  /** Runs fn after every earlier serialised operation settles. */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(fn);
    this.#chain = run.catch(() => {});
    return run;
  }

  #active(): Segment {
    return this.#segments[this.#segments.length - 1]!;
  }

  committedSeq(incarnation: string): number {
    return this.#dedup.get(incarnation) ?? 0;
  }

  committedSeqs(): Map<string, number> {
    return new Map(this.#dedup);
  }

  producerEpoch(producerId: string): number | undefined {
    return this.#producers.epochOf(producerId);
  }

  commitDurable(records: readonly CommitRecord[]): Promise<CommitResult> {
    if (this.#closed) return Promise.reject(new LogError("LOG_CLOSED", this.#opts.dir));
    const gate = this.#gate;
    if (gate === undefined) return this.#serial(() => this.#commit(records));
    // Replicated: the append is serialised as always, the wait for the
    // replicas is not (commits pipeline behind one another's replication).
    // `end` covers this commit's records and any duplicate's original, which
    // may itself still be above the HWM.
    return this.#serial(async () => {
      gate.assertLeading();
      const result = await this.#commit(records);
      return { result, end: this.#nextOffset };
    }).then(async ({ result, end }) => {
      await gate.awaitReplicated(end);
      return result;
    });
  }

  get replicated(): boolean {
    return this.#gate !== undefined;
  }

  advanceHwm(hwm: number): void {
    const to = Math.min(hwm, this.#nextOffset);
    if (this.#gate === undefined || this.#closed || to <= this.#hwm) return;
    this.#hwm = to;
    this.#scheduleHwmPersist();
    this.#wakeWaiters();
  }

  #wakeWaiters(): void {
    if (this.#hwmWaiters.size > 0) for (const wake of [...this.#hwmWaiters]) wake();
  }

  async #commit(records: readonly CommitRecord[]): Promise<CommitResult> {
    // Before the checks below: they must hold after this await too. From
    // here to the epoch checks in #dropDuplicates nothing awaits, so the
    // registry's view is used while its lease holds.
    if (this.#opts.producerFence !== undefined && records.some((r) => r.producer !== undefined)) {
      const wait = this.#opts.producerFence();
      if (wait !== undefined) await wait;
    }
    if (this.#closed) throw new LogError("LOG_CLOSED", this.#opts.dir);
    // Checked when the commit runs (not when it was queued), so nothing lands after freeze() resolved.
    if (this.#frozen)
      throw new LogError("PARTITION_FROZEN", `${this.#opts.dir} is frozen for a partition move`);
    if (this.#failed !== null) {
      throw new LogError("LOG_FAILED", `${this.#opts.dir}: an earlier commit could not be rolled back`, {
        cause: this.#failed,
      });
    }
    const plan = this.#dropDuplicates(records);
    const { fresh, seen, outcomes } = plan;
    const refused = plan.fenced + plan.outOfOrder;
    const duplicates = records.length - fresh.length - refused;
    const counts = {
      ...(plan.fenced > 0 ? { fenced: plan.fenced } : {}),
      ...(plan.outOfOrder > 0 ? { outOfOrder: plan.outOfOrder } : {}),
    };
    if (fresh.length === 0) return { baseOffset: -1, appended: 0, duplicates, ...counts, outcomes };
    const baseOffset = this.#nextOffset;
    const commitMs = this.#opts.nowMs();
    const frames = this.#planFrames(fresh, baseOffset, commitMs);
    let total = 0;
    for (const f of frames) total += f.buf.length;
    if (this.#active().verifiedEnd > 0 && this.#active().verifiedEnd + total > this.#opts.segmentBytes) {
      await this.#roll();
    }
    const seg = this.#active();
    const start = seg.verifiedEnd;
    try {
      await seg.writer.writev(
        frames.map((f) => f.buf),
        start,
      ); // crash point A
      await seg.writer.datasync(); // crash point B
      await this.#verifyReadBack(seg, start, total, frames); // crash point C
    } catch (err) {
      await this.#rollBack(seg, start, err);
      throw err;
    }
    this.#publish(seg, start, frames, seen, commitMs);
    const commitId = ++this.#commitCount;
    // Idle producers are evicted at most once a minute, on the commit clock (#13 item 10).
    if (commitMs - this.#lastEvictMs >= 60_000) {
      this.#lastEvictMs = commitMs;
      this.#producers.evictIdle(commitMs);
    }
    for (let i = 0; i < fresh.length; i++) {
      const r = fresh[i]!;
      const offset = baseOffset + i;
      this.#recent.set(r.incarnation, r.seq, offset);
      const stamp = plan.freshStamps[i];
      if (stamp !== undefined) this.#producers.commit(r.producer!, offset, stamp, commitId, commitMs);
    }
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i]!;
      if (o <= freshIndexBase) outcomes[i] = baseOffset + (freshIndexBase - o);
    }
    return { baseOffset, appended: fresh.length, duplicates, ...counts, outcomes };
  }

  /**
   * Splits out records already committed (I4, I4b), fenced and out-of-order
   * ones. `outcomes[i]` answers records[i]: an offset (a duplicate's original
   * one), one of the `commitOutcome` codes, or, for a record to append,
   * freshIndexBase - (its index in `fresh`), replaced by its offset once
   * written. `freshStamps[j]` is the fingerprint of fresh[j] when stamped.
   */
  #dropDuplicates(records: readonly CommitRecord[]): {
    fresh: CommitRecord[];
    seen: Map<string, number>;
    outcomes: number[];
    freshStamps: Array<number | undefined>;
    fenced: number;
    outOfOrder: number;
  } {
    const seen = new Map<string, number>();
    const outcomes = new Array<number>(records.length).fill(commitOutcome.duplicateUnknownOffset);
    // Pass 1: (incarnation, seq) dedup; collect the stamped candidates.
    const candidates: number[] = [];
    const items: Array<{ stamp: ProducerStamp; fingerprint: number; registryEpoch?: number | undefined }> =
      [];
    const fingerprints = new Array<number>(records.length).fill(0);
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      if (!isIncarnation(r.incarnation) || !Number.isSafeInteger(r.seq) || r.seq < 0) {
        throw new LogError("INVALID_RECORD", `bad incarnation/seq ${r.incarnation}/${r.seq}`);
      }
      const p = r.producer;
      if (p !== undefined) fingerprints[i] = recordFingerprint(r.payload);
      const highest = seen.get(r.incarnation) ?? this.#dedup.get(r.incarnation) ?? -1;
      if (r.seq <= highest) {
        // A re-sent record: answer with the offset it got, if still known.
        let known = this.#recent.get(r.incarnation, r.seq);
        if (known === undefined && p !== undefined) {
          const v = this.#producers.check(p, fingerprints[i]!);
          if (v.kind === "duplicate") known = v.offset;
        }
        if (known !== undefined) outcomes[i] = known;
        continue;
      }
      seen.set(r.incarnation, r.seq);
      candidates.push(i);
      if (p !== undefined)
        items.push({
          stamp: p,
          fingerprint: fingerprints[i]!,
          registryEpoch: this.#opts.producerEpoch?.(p.id),
        });
    }
    // Pass 2: producer sequence and epoch checks, in order.
    const verdicts = this.#producers.checkBatch(items);
    const fresh: CommitRecord[] = [];
    const freshStamps: Array<number | undefined> = [];
    const freshOf = new Map<number, number>(); // index in items → index in fresh
    let fenced = 0;
    let outOfOrder = 0;
    let k = 0;
    const now = this.#opts.nowMs();
    for (const i of candidates) {
      const r = records[i]!;
      if (r.producer === undefined) {
        outcomes[i] = freshIndexBase - fresh.length;
        fresh.push(r);
        freshStamps.push(undefined);
        continue;
      }
      const v = verdicts[k]!;
      const item = k++;
      switch (v.kind) {
        case "fresh":
          freshOf.set(item, fresh.length);
          outcomes[i] = freshIndexBase - fresh.length;
          fresh.push(r);
          freshStamps.push(fingerprints[i]);
          break;
        case "duplicate":
          outcomes[i] = v.offset;
          this.#producers.touch(r.producer.id, now);
          break;
        case "duplicate_in_batch":
          outcomes[i] = freshIndexBase - (freshOf.get(v.index) ?? 0);
          break;
        case "fenced":
          outcomes[i] = commitOutcome.fenced;
          fenced++;
          break;
        case "out_of_order":
          outcomes[i] = commitOutcome.outOfOrder;
          outOfOrder++;
          break;
      }
    }
    return { fresh, seen, outcomes, freshStamps, fenced, outOfOrder };
  }

  /** Groups records into frames of at most frameTargetBytes (one record may exceed it up to maxFrameBytes). */
  #planFrames(records: CommitRecord[], baseOffset: number, commitMs: number): PlannedFrame[] {
    const frames: PlannedFrame[] = [];
    let first = 0;
    let bytes = frameHeaderBytes;
    const flush = (end: number) => {
      const buf = encodeFrame(records.slice(first, end), baseOffset + first, commitMs);
      frames.push({ buf, baseOffset: baseOffset + first, count: end - first });
      first = end;
      bytes = frameHeaderBytes;
    };
    for (let i = 0; i < records.length; i++) {
      const rb = recordFrameBytes(records[i]!);
      if (frameHeaderBytes + rb > this.#opts.maxFrameBytes) {
        throw new LogError("RECORD_TOO_LARGE", `record of ${rb} bytes exceeds maxFrameBytes`);
      }
      if (i > first && bytes + rb > this.#frameTargetBytes) flush(i);
      bytes += rb;
    }
    flush(records.length);
    return frames;
  }

  /**
   * Seals the active segment and starts one at nextOffset.
   * Fsync order: create file → fsync(dir); only then are frames written to it.
   * The sealed segment needs no sync: its last commit already fdatasync'd it.
   * Crash point: before the dir fsync the new (empty) file may be missing at
   * reopen, which is a valid state (the old segment is then the active one).
   */
  async #roll(): Promise<void> {
    const base = this.#nextOffset;
    const path = join(this.#opts.dir, segmentFileName(base));
    const seg = new Segment(
      base,
      path,
      await this.#io.open(path, true),
      this.#opts.indexIntervalBytes,
      this.#handles,
    );
    try {
      await this.#io.fsyncDir(this.#opts.dir);
    } catch (err) {
      await seg.retire().catch(() => {});
      throw err;
    }
    const prev = this.#active();
    this.#segments.push(seg);
    // Sealed: its writer closes once reads in flight on it finish; later reads use the cache.
    prev.seal().catch((err: unknown) => this.#logger.warn({ path: prev.path, err }, "segment close failed"));
    this.#logger.info({ dir: this.#opts.dir, base }, "partition log rolled segment");
  }

  /** Reads the frames back with a real pread and checks header fields and CRC. */
  async #verifyReadBack(seg: Segment, start: number, total: number, frames: PlannedFrame[]): Promise<void> {
    const back = Buffer.allocUnsafe(total);
    const got = await seg.writer.read(back, 0, total, start);
    if (got !== total) throw new LogError("COMMIT_VERIFY_FAILED", `read back ${got} of ${total} bytes`);
    let at = 0;
    for (const f of frames) {
      const parsed = parseFrameHeader(back, at, this.#opts.maxFrameBytes);
      const wroteCrc = f.buf.readUInt32BE(frameHeaderBytes - 4);
      if (
        !parsed.ok ||
        parsed.header.baseOffset !== f.baseOffset ||
        parsed.header.count !== f.count ||
        frameBytes(parsed.header) !== f.buf.length ||
        parsed.header.crc !== wroteCrc ||
        !verifyFrameCrc(back, at, parsed.header)
      ) {
        throw new LogError(
          "COMMIT_VERIFY_FAILED",
          `${seg.path}: frame at ${start + at} did not read back intact`,
        );
      }
      at += f.buf.length;
    }
  }

  /**
   * Undoes an unverified tail: truncate to the verified end → fdatasync.
   * Crash point: a crash before the fdatasync leaves the tail for recovery
   * (torn or whole-but-unacked; both are handled there).
   */
  async #rollBack(seg: Segment, start: number, cause: unknown): Promise<void> {
    this.#logger.error({ dir: this.#opts.dir, err: cause }, "partition log commit failed; truncating tail");
    try {
      await seg.writer.truncate(start);
      await seg.writer.datasync();
    } catch (err) {
      this.#failed = err instanceof Error ? err : new Error(String(err));
      this.#logger.error({ dir: this.#opts.dir, err }, "partition log rollback failed; refusing commits");
    }
  }

  /** Makes verified frames visible (I2): index, sizes, dedup, then the HWM. */
  #publish(
    seg: Segment,
    start: number,
    frames: PlannedFrame[],
    seen: Map<string, number>,
    commitMs: number,
  ): void {
    let pos = start;
    for (const f of frames) {
      seg.index.offer(f.baseOffset, pos, seg.index.size === 0);
      pos += f.buf.length;
    }
    const last = frames[frames.length - 1]!;
    seg.verifiedEnd = pos;
    seg.fileBytes = pos;
    seg.endOffset = last.baseOffset + last.count;
    if (commitMs > seg.newestCommitMs) seg.newestCommitMs = commitMs;
    for (const [inc, seq] of seen) this.#dedup.set(inc, seq);
    this.#nextOffset = seg.endOffset;
    if (this.#gate === undefined) {
      this.#hwm = this.#nextOffset;
      this.#scheduleHwmPersist();
    } else {
      this.#gate.onLogEnd(this.#nextOffset);
    }
    this.#wakeWaiters();
  }

  #scheduleHwmPersist(): void {
    if (this.#hwmTimer !== null || this.#closed) return;
    this.#hwmTimer = setTimeout(() => {
      this.#hwmTimer = null;
      this.#serial(() => this.#persistHwm()).catch((err: unknown) => {
        this.#logger.warn({ dir: this.#opts.dir, err }, "partition log hwm persist failed");
      });
    }, this.#opts.hwmPersistIntervalMs);
    this.#hwmTimer.unref();
  }

  async #persistHwm(): Promise<void> {
    if (this.#hwmFile.persisted !== this.#hwm) await this.#hwmFile.write(this.#hwm);
  }

  flush(): Promise<void> {
    if (this.#closed) return Promise.reject(new LogError("LOG_CLOSED", this.#opts.dir));
    return this.#serial(() => this.#persistHwm());
  }

  async read(fromOffset: number, maxRecords: number, maxBytes: number): Promise<StoredRecord[]> {
    if (this.#closed) throw new LogError("LOG_CLOSED", this.#opts.dir);
    if (!Number.isSafeInteger(fromOffset) || fromOffset < 0) throw new RangeError("read: bad fromOffset");
    const hwm = this.#hwm;
    // Snapshot: retention may shift the live array while this read awaits.
    const segs = this.#segments.slice();
    if (fromOffset < segs[0]!.baseOffset) {
      throw new LogError("OFFSET_EXPIRED", `offset ${fromOffset} is below the oldest ${segs[0]!.baseOffset}`);
    }
    const out: StoredRecord[] = [];
    if (fromOffset >= hwm || maxRecords <= 0) return out;
    let i = segs.length - 1;
    while (i > 0 && segs[i]!.baseOffset > fromOffset) i--;
    const limits = {
      fromOffset,
      hwm,
      maxRecords,
      maxBytes,
      maxFrameBytes: this.#opts.maxFrameBytes,
      chunkBytes: 2 * this.#opts.indexIntervalBytes,
    };
    let bytes = 0;
    for (; i < segs.length && segs[i]!.baseOffset < hwm; i++) {
      const seg = segs[i]!;
      const lease = await seg.acquireRead();
      if (lease === null) {
        // Retention removed it (or the log closed) while we were reading.
        if (out.length === 0) throw new LogError("OFFSET_EXPIRED", `offset ${fromOffset} was just deleted`);
        break;
      }
      try {
        const r = await seg.readInto(
          lease.file,
          { ...limits, fromOffset: Math.max(fromOffset, seg.baseOffset) },
          out,
          bytes,
        );
        bytes = r.bytes;
        if (r.full) break;
      } finally {
        lease.release();
      }
    }
    return out;
  }

  async readRawFrames(
    fromOffset: number,
    maxBytes: number,
    limit: "hwm" | "end" = "hwm",
  ): Promise<RawFrames> {
    if (this.#closed) throw new LogError("LOG_CLOSED", this.#opts.dir);
    if (!Number.isSafeInteger(fromOffset) || fromOffset < 0)
      throw new RangeError("readRawFrames: bad fromOffset");
    // Everything below the durable end is fsynced and verified (I2), so a
    // follower may copy it before it is committed.
    const hwm = limit === "end" ? this.#nextOffset : this.#hwm;
    const segs = this.#segments.slice();
    if (fromOffset < segs[0]!.baseOffset || fromOffset > hwm) {
      throw new LogError(
        "OFFSET_OUT_OF_RANGE",
        `offset ${fromOffset} is outside [${segs[0]!.baseOffset}, ${hwm}] of ${this.#opts.dir}`,
      );
    }
    if (fromOffset === hwm) return { frames: Buffer.alloc(0), nextOffset: fromOffset };
    let i = segs.length - 1;
    while (i > 0 && segs[i]!.baseOffset > fromOffset) i--;
    const chunks: Buffer[] = [];
    let bytes = 0;
    let next = fromOffset;
    for (; i < segs.length && segs[i]!.baseOffset < hwm && bytes < maxBytes; i++) {
      const seg = segs[i]!;
      const lease = await seg.acquireRead();
      if (lease === null) {
        if (chunks.length === 0)
          throw new LogError("OFFSET_EXPIRED", `offset ${fromOffset} was just deleted`);
        break;
      }
      try {
        const r = await seg.readRawFrames(lease.file, {
          fromOffset: next,
          hwm,
          maxBytes: Math.max(1, maxBytes - bytes),
          maxFrameBytes: this.#opts.maxFrameBytes,
          chunkBytes: 2 * this.#opts.indexIntervalBytes,
        });
        if (r.kind === "misaligned")
          throw new LogError("OFFSET_OUT_OF_RANGE", `offset ${next} is not a frame boundary in ${seg.path}`);
        for (const f of r.frames) chunks.push(f);
        bytes += r.bytes;
        next = r.nextOffset;
        // A gap (corruption skipped at recovery) ends the contiguous run: stop before it.
        if (r.kind === "gap" || next < seg.endOffset) break;
      } finally {
        lease.release();
      }
    }
    return { frames: Buffer.concat(chunks), nextOffset: next };
  }

  waitForHwmAbove(offset: number, ms: number, signal?: AbortSignal): Promise<void> {
    return this.#waitUntil(() => this.#hwm > offset, ms, signal);
  }

  waitForEndAbove(offset: number, ms: number, signal?: AbortSignal): Promise<void> {
    return this.#waitUntil(() => this.#nextOffset > offset, ms, signal);
  }

  #waitUntil(reached: () => boolean, ms: number, signal?: AbortSignal): Promise<void> {
    if (this.#closed || reached() || ms <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        if (!reached() && !timedOut && !signal?.aborted && !this.#closed) return;
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        this.#hwmWaiters.delete(done);
        resolve();
      };
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        done();
      }, ms);
      signal?.addEventListener("abort", done, { once: true });
      this.#hwmWaiters.add(done);
    });
  }

  get frozen(): boolean {
    return this.#frozen;
  }

  freeze(): Promise<void> {
    if (this.#closed) return Promise.reject(new LogError("LOG_CLOSED", this.#opts.dir));
    this.#frozen = true;
    return this.#serial(async () => {});
  }

  unfreeze(): void {
    this.#frozen = false;
  }

  segmentExtents(): SegmentExtent[] {
    // Synchronous: #publish updates verifiedEnd and the HWM in one step, so this matches stats().
    return this.#segments.map((s) => ({ base: s.baseOffset, bytes: s.verifiedEnd }));
  }

  async readSegmentBytes(base: number, position: number, length: number): Promise<Buffer | null> {
    if (this.#closed) throw new LogError("LOG_CLOSED", this.#opts.dir);
    const seg = this.#segments.find((s) => s.baseOffset === base);
    if (seg === undefined) return null;
    const lease = await seg.acquireRead();
    if (lease === null) return null;
    try {
      const n = Math.max(0, Math.min(length, seg.verifiedEnd - position));
      const buf = Buffer.allocUnsafe(n);
      const got = n === 0 ? 0 : await lease.file.read(buf, 0, n, position);
      return got === n ? buf : buf.subarray(0, got);
    } finally {
      lease.release();
    }
  }

  stats(): PartitionStats {
    let sizeBytes = 0;
    for (const s of this.#segments) sizeBytes += s.fileBytes;
    const oldest = this.#segments[0]!;
    return {
      index: this.#index,
      segments: this.#segments.length,
      oldestOffset: oldest.baseOffset,
      nextOffset: this.#nextOffset,
      highWatermark: this.#hwm,
      sizeBytes,
      ...(oldest.newestCommitMs > 0 ? { oldestSegmentAtMs: oldest.newestCommitMs } : {}),
    };
  }

  applyRetention(retentionMs: number, maxBytes: number): Promise<number> {
    if (this.#closed) return Promise.reject(new LogError("LOG_CLOSED", this.#opts.dir));
    return this.#serial(() => this.#retain(retentionMs, maxBytes));
  }

  /**
   * Deletes sealed segments from the oldest while expired by age or while the
   * partition exceeds maxBytes; never the active one.
   * Order: drop from the in-memory list (reads below get OFFSET_EXPIRED) →
   * unlink → fsync(dir) once. Crash point: before the dir fsync a file may
   * reappear at reopen; it is valid (just old) and the next pass deletes it.
   */
  async #retain(retentionMs: number, maxBytes: number): Promise<number> {
    const now = this.#opts.nowMs();
    let total = 0;
    for (const s of this.#segments) total += s.fileBytes;
    let deleted = 0;
    while (this.#segments.length > 1) {
      const seg = this.#segments[0]!;
      const expired = retentionMs > 0 && seg.newestCommitMs < now - retentionMs;
      const oversize = maxBytes > 0 && total > maxBytes;
      if (!expired && !oversize) break;
      // Replicated: records above the HWM are not committed yet and a
      // follower may still need them; they are never retention's to delete.
      if (seg.endOffset > this.#hwm) break;
      // Before the first unlink: the floor must already cover every seq the
      // deleted segments hold, or a re-sent record would commit again.
      if (deleted === 0)
        await writeDedupFloor(this.#io, this.#opts.dir, await this.#floorFor(retentionMs, maxBytes));
      this.#segments.shift();
      seg
        .retire()
        .catch((err: unknown) => this.#logger.warn({ path: seg.path, err }, "segment close failed"));
      await this.#io.unlink(seg.path);
      total -= seg.fileBytes;
      deleted++;
      this.#logger.info(
        { path: seg.path, reason: expired ? "age" : "size", newestCommitMs: seg.newestCommitMs },
        "partition log deleted segment",
      );
    }
    if (deleted > 0) await this.#io.fsyncDir(this.#opts.dir);
    return deleted;
  }

  /**
   * The dedup floor to write before retention unlinks. Single copy: the
   * in-memory map (everything appended is committed). Replicated: the floor
   * raised with what the segments about to go hold, never the in-memory map,
   * which also holds records above the HWM that a deposed leader's fetcher
   * cuts (their re-send must then be appended, not dropped as a duplicate).
   */
  async #floorFor(retentionMs: number, maxBytes: number): Promise<Map<string, number>> {
    if (this.#gate === undefined) return this.#dedup;
    const floor = await readDedupFloor(this.#io, this.#opts.dir);
    const now = this.#opts.nowMs();
    let total = 0;
    for (const s of this.#segments) total += s.fileBytes;
    for (let i = 0; i < this.#segments.length - 1; i++) {
      const seg = this.#segments[i]!;
      const expired = retentionMs > 0 && seg.newestCommitMs < now - retentionMs;
      const oversize = maxBytes > 0 && total > maxBytes;
      if ((!expired && !oversize) || seg.endOffset > this.#hwm) break;
      await raiseFloorFromSegment(
        this.#io,
        seg.path,
        seg.verifiedEnd,
        this.#opts.maxFrameBytes,
        floor,
        seg.gaps,
      );
      total -= seg.fileBytes;
    }
    return floor;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#wakeWaiters();
    if (this.#hwmTimer !== null) clearTimeout(this.#hwmTimer);
    this.#hwmTimer = null;
    // Wait for the in-flight commit, then force the hwm file.
    await this.#chain;
    try {
      await this.#persistHwm();
    } finally {
      await this.#hwmFile.close();
      await Promise.allSettled(this.#segments.map((s) => s.retire()));
    }
  }
}
