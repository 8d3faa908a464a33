// The fan-out cursor's pure decisions: where a cursor starts, which records
// of a read are due (delay children), when a partial batch is worth a
// linger, how long a delay cursor sleeps, and where each record goes in
// the child. No I/O: engine.ts does the reads, writes and waits.

import { partitionForKey } from "../core/partitioner.ts";
import type { StoredRecord } from "../core/records.ts";
import type { SavedCursor } from "./cursor-file.ts";

export interface BatchLimits {
  maxRecords: number;
  maxBytes: number;
  /** How long a partial batch waits for more records before it ships. */
  lingerMs: number;
}

/** Narad's defaults: 4,096 records / 4 MiB / 25 ms. */
export const defaultBatchLimits: BatchLimits = { maxRecords: 4096, maxBytes: 4 << 20, lingerMs: 25 };
/** A delay cursor never sleeps longer than this, so a detach or retention change is seen in time. */
export const maxDueSleepMs = 30_000;

/**
 * Where a cursor resumes: the saved offset when the file belongs to this
 * attachment (same epoch) and lies within the parent partition's log
 * (at most its high watermark); else `rederive` with the reason, and the
 * caller starts at the first record committed since the attach (duplicates,
 * never a gap). A saved offset above the high watermark (a partition log
 * restored or rebuilt shorter than the cursor saw it) would otherwise skip,
 * silently, every record the log gets at the offsets in between.
 */
export function resumeDecision(
  saved: SavedCursor,
  epoch: string,
  highWatermark: number,
): { resume: number } | { rederive: "missing" | "malformed" | "other-epoch" | "beyond-high-watermark" } {
  if (saved.state !== "ok") return { rederive: saved.state };
  if (saved.position.epoch !== epoch) return { rederive: "other-epoch" };
  if (saved.position.nextOffset > highWatermark) return { rederive: "beyond-high-watermark" };
  return { resume: saved.position.nextOffset };
}

/**
 * The records of `records` (in offset order, commit times non-decreasing
 * per partition) a child with `delayMs` may receive at `nowMs`: a prefix,
 * since the first undue record proves every later one undue too. With the
 * cut short, `blockedUntilMs` is when the first withheld record becomes due.
 */
export function dueCut(
  records: readonly Pick<StoredRecord, "commitMs">[],
  nowMs: number,
  delayMs: number,
): { count: number; blockedUntilMs?: number } {
  if (delayMs <= 0) return { count: records.length };
  const cutoff = nowMs - delayMs;
  for (let i = 0; i < records.length; i++) {
    const at = records[i]!.commitMs;
    if (at > cutoff) return { count: i, blockedUntilMs: at + delayMs };
  }
  return { count: records.length };
}

/** How long a cursor blocked on an undue record sleeps: until it is due, at most maxDueSleepMs, at least 1 ms. */
export function dueSleepMs(blockedUntilMs: number, nowMs: number, capMs = maxDueSleepMs): number {
  return Math.max(1, Math.min(capMs, blockedUntilMs - nowMs));
}

/** Whether a batch of `count` records / `bytes` must ship now rather than linger for more. */
export function batchFull(count: number, bytes: number, limits: BatchLimits): boolean {
  return count >= limits.maxRecords || bytes >= limits.maxBytes;
}

/** Bytes a record costs a batch (what the child's WAL stores of it). */
export function recordBytes(r: Pick<StoredRecord, "key" | "payload">): number {
  return r.key.length + r.payload.length;
}

/** The child partition of a parent record: the child's own partitioner on the same key, as a produce would. */
export function childPartition(key: Uint8Array, childPartitions: number): number {
  return partitionForKey(key, childPartitions);
}

/**
 * How far behind its due frontier a cursor is, in seconds: the age past due
 * of the oldest record it has not delivered (0 when that record is not due
 * yet or there is none).
 */
export function dueLagSeconds(
  oldestUnsentCommitMs: number | undefined,
  delayMs: number,
  nowMs: number,
): number {
  if (oldestUnsentCommitMs === undefined) return 0;
  return Math.max(0, (nowMs - (oldestUnsentCommitMs + delayMs)) / 1000);
}

/**
 * The first offset in [lo, hi) whose record was committed at or after `atMs`,
 * given `commitAt(offset)` (commit times are non-decreasing per partition);
 * hi when none is. `commitAt` may return undefined for an offset retention
 * just removed: the search then moves past it (that record is gone anyway).
 */
export async function firstCommittedSince(
  lo: number,
  hi: number,
  atMs: number,
  commitAt: (offset: number) => Promise<number | undefined>,
): Promise<number> {
  let a = lo;
  let b = hi;
  while (a < b) {
    const mid = a + Math.floor((b - a) / 2);
    const at = await commitAt(mid);
    if (at === undefined || at < atMs) a = mid + 1;
    else b = mid;
  }
  return a;
}
