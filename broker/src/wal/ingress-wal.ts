// The ingress WAL: composes recovery, the group committer, segment rolling,
// the checkpoint and the tail cache behind the IngressWal contract
// (./types.ts). Every durable state change names its fsync order and crash
// points next to the code that performs it.
//
// Write path (per group, see group-commit.ts), crash points:
//   R1 new segment created (roll), directory not yet fsynced → empty last segment or none
//   R2 directory fsynced, group not yet written → empty last segment
//   W1 group partly written → torn tail, truncated at the next open
//   W2 fdatasync returned → the group is durable; only now do callers resolve
// Checkpoint path (checkpoint.ts C1–C3), then compaction:
//   K1 segments wholly below the durable checkpoint are unlinked oldest first;
//      a crash leaves some behind and the next setCheckpoint deletes them.

import { join } from "node:path";
import type { WalRecord, WalRecordInput } from "../core/records.ts";
import { type FileIo, nodeFileIo, writeFully } from "../storage/file-io.ts";
import { readCheckpoint, writeCheckpoint } from "./checkpoint.ts";
import { silentWalLogger, WalError, type WalLogger } from "./errors.ts";
import { GroupCommitter, type GroupPlan } from "./group-commit.ts";
import { loadOrCreateIncarnation } from "./incarnation.ts";
import { recoverSegments } from "./recovery.ts";
import {
  closeSegment,
  parseSegmentFileName,
  type ReadBudget,
  readSegment,
  Segment,
  segmentFileName,
} from "./segments.ts";
import { TailCache, walTailCacheBytesDefault } from "./tail-cache.ts";
import type { IngressWal, IngressWalOptions, WalStats } from "./types.ts";

/** The injectable file I/O the WAL runs on (node:fs by default). */
export type WalIo = FileIo;

export interface OpenIngressWalDeps {
  io?: WalIo;
  logger?: WalLogger;
  /** Bytes of recent durable groups kept in memory for the dispatcher's reads. */
  tailCacheBytes?: number;
}

export type { WalErrorCode, WalLogger } from "./errors.ts";
export { WalError } from "./errors.ts";

function validateOptions(o: IngressWalOptions): void {
  const positive = [
    "segmentBytes",
    "rotateDispatchedBytes",
    "maxRecordBytes",
    "maxGroupBytes",
    "syncBackstopMs",
  ];
  for (const name of positive) {
    const v = (o as unknown as Record<string, unknown>)[name];
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
      throw new RangeError(`ingress WAL option ${name} must be a positive integer, got ${String(v)}`);
    }
  }
  if (o.rotateDispatchedBytes >= o.segmentBytes)
    throw new RangeError("rotateDispatchedBytes must be < segmentBytes");
  if (typeof o.dir !== "string" || o.dir === "")
    throw new RangeError("ingress WAL dir must be a non-empty path");
}

/**
 * Opens (creating if needed) the ingress WAL in `opts.dir`: recovers the
 * segments, then accepts appends. Rejects when the directory cannot be
 * recovered (e.g. WAL_INCARNATION_INVALID) or on I/O errors.
 */
export async function openIngressWal(opts: IngressWalOptions & OpenIngressWalDeps): Promise<IngressWal> {
  validateOptions(opts);
  const io = opts.io ?? nodeFileIo;
  const log = opts.logger ?? silentWalLogger;
  const names = await io.readdir(opts.dir);
  const firstSeqs: number[] = [];
  for (const name of names) {
    const seq = parseSegmentFileName(name);
    if (seq !== undefined) firstSeqs.push(seq);
  }
  firstSeqs.sort((a, b) => a - b);
  const incarnation = await loadOrCreateIncarnation(io, opts.dir, firstSeqs.length > 0, log);
  const checkpoint = await readCheckpoint(io, opts.dir, log);
  const recovered = await recoverSegments(io, opts.dir, firstSeqs, log);
  if (checkpoint > recovered.nextSeq) {
    log.warn({ checkpoint, recoveredNextSeq: recovered.nextSeq }, "checkpoint is past the recovered WAL end");
  }
  const nextSeq = Math.max(recovered.nextSeq, checkpoint);
  const wal = new IngressWalImpl(opts, io, log, incarnation, checkpoint, nextSeq, recovered);
  await wal.openActive();
  log.info(
    { dir: opts.dir, incarnation, nextSeq, checkpoint, segments: recovered.segments.length },
    "ingress WAL open",
  );
  return wal;
}

class IngressWalImpl implements IngressWal {
  readonly incarnation: string;
  readonly #o: IngressWalOptions;
  readonly #io: FileIo;
  readonly #log: WalLogger;
  readonly #segments: Segment[];
  readonly #cache: TailCache;
  readonly #committer: GroupCommitter;
  readonly #listeners: Array<() => void> = [];
  #active: Segment | undefined;
  #checkpoint: number;
  /** Last durable seq + 1. */
  #durableNext: number;
  #corruptFrames: number;
  #checkpointChain: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(
    o: IngressWalOptions & OpenIngressWalDeps,
    io: FileIo,
    log: WalLogger,
    incarnation: string,
    checkpoint: number,
    nextSeq: number,
    recovered: { segments: Segment[]; corruptFrames: number },
  ) {
    this.#o = o;
    this.#io = io;
    this.#log = log;
    this.incarnation = incarnation;
    this.#checkpoint = checkpoint;
    this.#durableNext = nextSeq;
    this.#segments = recovered.segments;
    this.#corruptFrames = recovered.corruptFrames;
    this.#cache = new TailCache(o.tailCacheBytes ?? walTailCacheBytesDefault);
    this.#committer = new GroupCommitter({
      sink: {
        plan: (firstBytes) => this.#plan(firstBytes),
        commit: (buf, firstSeq, lastSeq, roll) => this.#commit(buf, firstSeq, lastSeq, roll),
        durable: (buf, firstSeq, lastSeq) => this.#published(buf, firstSeq, lastSeq),
      },
      nextSeq,
      maxRecordBytes: o.maxRecordBytes,
      syncBackstopMs: o.syncBackstopMs,
      log,
    });
  }

  /**
   * Picks the segment appends continue in. The last segment is reused only
   * when its seqs end exactly at nextSeq - 1 (recovery expects dense seqs
   * inside a segment); otherwise a new segment named nextSeq is started.
   */
  async openActive(): Promise<void> {
    const last = this.#segments[this.#segments.length - 1];
    if (last !== undefined && last.lastSeq + 1 === this.#durableNext) {
      last.handle = await this.#io.open(last.path, "readWrite");
      this.#active = last;
      return;
    }
    await this.#roll(this.#durableNext);
    if (last !== undefined && last.size === 0) {
      // An empty segment whose name no longer matches nextSeq (e.g. after a torn-header floor).
      this.#segments.splice(this.#segments.indexOf(last), 1);
      await this.#io.unlink(last.path);
      this.#log.info({ path: last.path }, "removed an empty WAL segment superseded at open");
    }
  }

  #plan(firstBytes: number): GroupPlan {
    const a = this.#active!;
    const full = a.size + firstBytes > this.#o.segmentBytes;
    const dispatched = this.#checkpoint >= this.#durableNext && a.size > this.#o.rotateDispatchedBytes;
    const roll = a.size > 0 && (full || dispatched);
    const room = roll ? this.#o.segmentBytes : this.#o.segmentBytes - a.size;
    return { roll, capacityBytes: Math.min(this.#o.maxGroupBytes, room) };
  }

  /** Crash points W1 (partial write) and W2 (durable after fdatasync). */
  async #commit(buf: Buffer, firstSeq: number, _lastSeq: number, roll: boolean): Promise<void> {
    if (roll) await this.#roll(firstSeq);
    const a = this.#active!;
    try {
      await writeFully(a.handle!, buf, buf.length, a.size);
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      // ENOSPC on write: nothing of this group was fsynced. Cut any partial
      // bytes off (truncate + fdatasync, so a crash cannot resurrect frames of
      // a group whose callers were refused) and report DISK_FULL, which the
      // committer treats as retryable. If the cut fails, the original error
      // poisons the WAL as before.
      await a.handle!.truncate(a.size).catch(() => Promise.reject(err));
      await a.handle!.datasync().catch(() => Promise.reject(err));
      throw diskFull(err);
    }
    await a.handle!.datasync();
  }

  /** Runs synchronously once a group's fdatasync returned. */
  #published(buf: Buffer, firstSeq: number, lastSeq: number): void {
    const a = this.#active!;
    a.noteFrame(firstSeq, a.size);
    a.size += buf.length;
    a.lastSeq = lastSeq;
    this.#durableNext = lastSeq + 1;
    this.#cache.push(buf, firstSeq, lastSeq);
    for (const listener of this.#listeners) {
      try {
        listener();
      } catch (err) {
        this.#log.error({ err }, "ingress WAL onDurable listener threw");
      }
    }
  }

  /**
   * Starts segment `<firstSeq>.wal` and makes it active. Order: create the
   * file exclusively (R1), fsync the directory (R2); only then may frames be
   * written to it. The old active segment stays open for reads.
   */
  async #roll(firstSeq: number): Promise<void> {
    const path = join(this.#o.dir, segmentFileName(firstSeq));
    // ENOSPC here creates nothing, so it is retryable like a failed write.
    const h = await this.#io
      .open(path, "createExclusive")
      .catch((err: unknown) => Promise.reject(isDiskFull(err) ? diskFull(err) : err));
    try {
      await this.#io.fsyncDir(this.#o.dir);
    } catch (err) {
      await h.close().catch(() => {});
      throw err;
    }
    const seg = new Segment(firstSeq, path, 0, firstSeq - 1, []);
    seg.handle = h;
    const previous = this.#active;
    this.#segments.push(seg);
    this.#active = seg;
    if (previous !== undefined) {
      this.#log.info({ from: previous.path, to: path, previousBytes: previous.size }, "rolled WAL segment");
    }
  }

  append(records: readonly WalRecordInput[]): Promise<{ firstSeq: number; lastSeq: number }> {
    return this.#committer.append(records);
  }

  async read(fromSeq: number, maxRecords: number, maxBytes: number): Promise<WalRecord[]> {
    if (this.#closed) throw new WalError("WAL_CLOSED", "ingress WAL is closed");
    if (
      !Number.isSafeInteger(fromSeq) ||
      !Number.isSafeInteger(maxRecords) ||
      !Number.isSafeInteger(maxBytes)
    ) {
      throw new RangeError("read: fromSeq, maxRecords and maxBytes must be integers");
    }
    if (maxRecords < 1 || maxBytes < 1) throw new RangeError("read: maxRecords and maxBytes must be >= 1");
    const budget: ReadBudget = { maxRecords, maxBytes, bytes: 0, out: [] };
    if (fromSeq >= this.#durableNext) return budget.out;
    const cacheFirst = this.#cache.firstSeq;
    if (cacheFirst !== undefined && fromSeq >= cacheFirst) {
      this.#cache.read(fromSeq, budget);
      return budget.out;
    }
    // Snapshot: compaction and rolls change the array while we await reads.
    const segments = this.#segments.slice(this.#segmentIndex(fromSeq));
    for (const seg of segments) {
      if (await readSegment(this.#io, seg, fromSeq, budget)) break;
    }
    return budget.out;
  }

  /** Index of the last segment whose first seq is <= seq (0 when seq precedes them all). */
  #segmentIndex(seq: number): number {
    let lo = 0;
    let hi = this.#segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.#segments[mid]!.firstSeq <= seq) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  setCheckpoint(seq: number): Promise<void> {
    const run = this.#checkpointChain.then(() => this.#applyCheckpoint(seq));
    this.#checkpointChain = run.catch(() => {});
    return run;
  }

  async #applyCheckpoint(seq: number): Promise<void> {
    if (this.#closed) throw new WalError("WAL_CLOSED", "ingress WAL is closed");
    if (!Number.isSafeInteger(seq) || seq < this.#checkpoint || seq > this.#durableNext) {
      throw new WalError(
        "CHECKPOINT_INVALID",
        `checkpoint ${seq} outside [current ${this.#checkpoint}, durable end ${this.#durableNext}]`,
      );
    }
    if (seq > this.#checkpoint) {
      await writeCheckpoint(this.#io, this.#o.dir, seq); // C1–C3: durable before any deletion
      this.#checkpoint = seq;
      this.#cache.evictBelow(seq);
    }
    await this.#rollIfDispatched();
    await this.#compact();
  }

  /** An idle, fully dispatched active segment above rotateDispatchedBytes is rolled so it can be deleted. */
  async #rollIfDispatched(): Promise<void> {
    const a = this.#active!;
    if (this.#checkpoint < this.#durableNext || a.size <= this.#o.rotateDispatchedBytes) return;
    const rolled = await this.#committer.exclusive(() => this.#roll(this.#durableNext));
    if (!rolled) {
      this.#log.info(
        { path: a.path },
        "dispatched WAL segment not rolled now: writer busy (next group rolls it) or WAL poisoned",
      );
    }
  }

  /** K1: unlinks segments wholly below the (already durable) checkpoint, oldest first. */
  async #compact(): Promise<void> {
    while (this.#segments.length > 1 && this.#segments[1]!.firstSeq <= this.#checkpoint) {
      const seg = this.#segments.shift()!;
      seg.deleted = true;
      if (seg.readers === 0) await closeSegment(seg);
      await this.#io.unlink(seg.path);
      this.#log.info(
        { path: seg.path, bytes: seg.size, checkpoint: this.#checkpoint },
        "deleted dispatched WAL segment",
      );
    }
  }

  stats(): WalStats {
    let diskBytes = 0;
    for (const seg of this.#segments) diskBytes += seg.size;
    return {
      incarnation: this.incarnation,
      nextSeq: this.#durableNext,
      checkpoint: this.#checkpoint,
      pendingRecords: Math.max(0, this.#durableNext - this.#checkpoint),
      segments: this.#segments.length,
      diskBytes,
      corruptFrames: this.#corruptFrames,
      poisoned: this.#committer.poisoned,
    };
  }

  onDurable(listener: () => void): void {
    this.#listeners.push(listener);
  }

  /** Lets staged appends finish (each gets its true outcome), then closes every file. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#committer.close();
    this.#closed = true;
    await this.#checkpointChain;
    for (const seg of this.#segments) {
      seg.deleted = true;
      if (seg.readers === 0) await closeSegment(seg);
    }
  }
}

function isDiskFull(err: unknown): boolean {
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  return code === "ENOSPC" || code === "EDQUOT";
}

function diskFull(cause: unknown): WalError {
  return new WalError("DISK_FULL", "disk full: the ingress WAL could not write this group", { cause });
}
