// One dispatcher pass (ARCHITECTURE.md §3, §5): WAL ≥ checkpoint → window →
// plan (core/dispatch-plan.ts) → commit lanes / reroute / deletion checks →
// park → new checkpoint. Every pass re-plans from the checkpoint so a
// partition's undone records are always sent together and in seq order
// (dispatch-plan.ts I2).
//
// Never lose a record:
//  - a record is "done" only when its owner acknowledged it, its reroute copy
//    is durable in this WAL, its topic's deletion was confirmed, or the WAL
//    has no such seq (dropped corrupt frame);
//  - wal.setCheckpoint(n) runs after every commit of the pass has settled
//    (acknowledged, failed, timed out or aborted) and n never passes an undone
//    seq; an abandoned (timed-out) commit's records are undone, so they are
//    re-sent and the owner's (incarnation, seq) dedup drops what landed.
//
// Never store twice across a reroute (dispatch-plan.ts I4): the seqs of a
// batch whose commit failed without an answer are "in doubt" on that lane;
// while they are, a reroute holds them for their owner (whose dedup answers
// for whatever did land) instead of copying them into a sibling partition.
// The hold is bounded (options.inDoubtHoldMs) and lives in memory
// (in-doubt-holds.ts): a restart of this node forgets it, which reopens the
// seam only for a crash of this node together with the owner.
//
// Order within a pass: commits (fanout lanes at once) → reroute append →
// deletion checks → skip-set → done-set write → checkpoint write. A crash
// before the done-set write re-dispatches what this pass finished: a
// committed record is deduped by its owner, but one rerouted (or committed
// to an owner that is Down by then, and so rerouted after the restart) can be
// stored twice. The done-set (done-set-store.ts) keeps that to one pass's
// records instead of everything done above a checkpoint a held lane pins.

import type { PassOutcome } from "../core/dispatch-pace.ts";
import {
  advanceCheckpoint,
  type DispatchPlan,
  lookaheadLimit,
  mergeBySeq,
  planDispatch,
  type SeqRange,
  type SkipSet,
  seqsToRanges,
  skipAddRanges,
} from "../core/dispatch-plan.ts";
import type { WalRecord } from "../core/records.ts";
import type { IngressWal } from "../wal/types.ts";
import { commitLanes } from "./commit-runner.ts";
import { confirmDeletions } from "./deletions.ts";
import type { DoneSetSaver } from "./done-set-saver.ts";
import type { InDoubtHolds } from "./in-doubt-holds.ts";
import { laneOutcomes } from "./lane-outcomes.ts";
import type { ParkedStore } from "./parked-store.ts";
import { releaseAndPark } from "./parking.ts";
import { appendReroutes } from "./reroute.ts";
import type { DispatchStatus } from "./status.ts";
import type {
  Destinations,
  DispatchErrorKind,
  DispatcherOptions,
  DispatchLogger,
  DispatchMetricsSink,
} from "./types.ts";
import { readWindow, type WindowRead } from "./window-reader.ts";

/** What passes carry from one to the next (the dispatcher owns it; a pass updates it). */
export interface PassState {
  /** The first undone seq: nothing below it is dispatched again. */
  checkpoint: number;
  /** Done seqs above the checkpoint. */
  skip: SkipSet;
  /** Records per window of the next read (the plan adapts it). */
  windowRecords: number;
  /** Lane key → failed passes in a row (toward a reroute). */
  failures: Map<string, number>;
}

export interface PassDeps {
  wal: IngressWal;
  destinations: Destinations;
  /** Ingress WAL incarnation carried in every CommitRecord. */
  incarnation: string;
  options: DispatcherOptions;
  /** Record bytes one pass holds at most. */
  maxPassBytes: number;
  logger: DispatchLogger;
  metrics: DispatchMetricsSink;
  nowMs: () => number;
  /** The current stop signal (each start makes a new one). */
  signal: () => AbortSignal;
  status: DispatchStatus;
  doubts: InDoubtHolds;
  /** Absent: nothing is parked (parked-store.ts). */
  parked: ParkedStore | undefined;
  /** Absent: the done seqs above the checkpoint are memory only. */
  doneSetSaver: DoneSetSaver | undefined;
}

/** A pass that failed as a whole (its step is the error kind counted). */
export class PassError extends Error {
  readonly kind: DispatchErrorKind;
  constructor(kind: DispatchErrorKind, cause: unknown) {
    super(`dispatch ${kind} failed`, { cause });
    this.kind = kind;
  }
}

export async function runPass(s: PassState, d: PassDeps): Promise<PassOutcome> {
  const o = d.options;
  const cp = s.checkpoint;
  let read: WindowRead;
  try {
    read = await readWindow(d.wal, {
      from: cp,
      limit: lookaheadLimit(cp, s.windowRecords, o.lookaheadWindows),
      windowRecords: s.windowRecords,
      skip: s.skip,
      maxReadBytes: o.maxBatchBytes,
      maxPassBytes: d.maxPassBytes,
    });
  } catch (err) {
    throw new PassError("read", err);
  }
  if (read.absent.length > 0) {
    d.logger.warn(
      { absent: read.absent },
      "WAL has no records for these seqs (dropped corrupt frames); skipping them",
    );
  }

  // Parked records are planned with the window's (their lanes may be able to move now).
  const records = mergeBySeq(d.parked?.records() ?? [], read.records);
  let plan: DispatchPlan;
  try {
    plan = planDispatch({
      records,
      incarnation: d.incarnation,
      localNodeId: d.destinations.localNodeId,
      resolve: (t, p, uid) => d.destinations.resolve(t, p, uid),
      partitionCount: (t) => d.destinations.partitionCount(t),
      failures: s.failures,
      inDoubt: d.doubts.held,
      options: o,
    });
  } catch (err) {
    throw new PassError("plan", err);
  }
  d.status.held(plan);

  const results = await commitLanes(plan.lanes, {
    fanout: o.commitFanout,
    timeoutMs: o.commitTimeoutMs,
    nowMs: d.nowMs,
    signal: d.signal(),
    commit: (lane, batch, deadlineMs) =>
      d.destinations.commit(lane.nodeId, lane.topic, lane.partition, batch.records, deadlineMs),
    onBatch: (_lane, batch, outcome, ms) => d.metrics.commitBatch(batch.records.length, ms / 1000, outcome),
  });
  const report = { status: d.status, metrics: d.metrics, logger: d.logger };
  const committed = laneOutcomes(plan, results, {
    ...report,
    failures: s.failures,
    destinations: d.destinations,
    doubts: d.doubts,
  });
  s.failures = committed.failures;
  const rerouted = await appendReroutes(plan, { ...report, wal: d.wal, aborted: d.signal().aborted });
  if (rerouted.length > 0) d.doubts.reportExpired(plan);
  const deleted = await confirmDeletions(plan, {
    ...report,
    destinations: d.destinations,
    aborted: () => d.signal().aborted,
  });

  const doneSeqs = [...committed.seqs, ...rerouted, ...deleted.seqs];
  const parkedNow = await park(read, records, doneSeqs, d);
  const doneRanges: SeqRange[] = [...read.absent, ...seqsToRanges([...doneSeqs, ...parkedNow])];
  s.skip = skipAddRanges(s.skip, doneRanges);
  s.windowRecords = plan.nextWindowRecords;
  d.status.lag(read.records, skipAddRanges([], doneRanges));
  d.status.stalled(plan, committed.failedLanes, records);

  const next = advanceCheckpoint(cp, s.skip);
  // Needed only while done seqs sit above the checkpoint; saved in the background.
  if (doneRanges.length > 0 && next.skip.length > 0) d.doneSetSaver?.request();
  if (next.checkpoint > cp) {
    try {
      await d.wal.setCheckpoint(next.checkpoint);
    } catch (err) {
      // The done seqs stay in the skip-set; the next pass tries again.
      throw new PassError("checkpoint", err);
    }
  }
  s.checkpoint = next.checkpoint;
  s.skip = next.skip;
  d.doubts.prune(s.skip, s.checkpoint);

  const done = doneSeqs.length + parkedNow.length;
  const failed = committed.failed || deleted.failed || (plan.reroutes.length > 0 && rerouted.length === 0);
  return { records: read.records.length, done, failed };
}

/** Parks what a pass left undone past a stalled lane (parking.ts); resolves the seqs parked. */
async function park(
  read: WindowRead,
  records: readonly WalRecord[],
  doneSeqs: readonly number[],
  d: PassDeps,
): Promise<number[]> {
  const parked = d.parked;
  if (parked === undefined) return [];
  const out = await releaseAndPark(parked, d.logger, {
    stoppedBy: read.stoppedBy,
    records,
    doneSeqs,
    aborted: d.signal().aborted,
  });
  d.status.counters.parkRefusedRecords += out.refusedRecords;
  if (out.failed) d.status.error("park");
  d.status.counters.parkedRecords = parked.size;
  return out.parkedSeqs;
}
