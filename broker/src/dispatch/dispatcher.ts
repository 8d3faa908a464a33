// The dispatcher loop (ARCHITECTURE.md §3, §5): WAL ≥ checkpoint → window →
// plan (core/dispatch-plan.ts) → commit lanes / reroute / deletion checks →
// new checkpoint. One pass at a time; every pass re-plans from the checkpoint
// so a partition's undone records are always sent together and in seq order
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
//
// Never store twice across a reroute (dispatch-plan.ts I4): the seqs of a
// batch whose commit failed without an answer are "in doubt" on that lane;
// while they are, a reroute holds them for their owner (whose dedup answers
// for whatever did land) instead of copying them into a sibling partition.
// The hold is bounded (options.inDoubtHoldMs) and lives in memory: a restart
// of this node forgets it, which reopens the seam only for a crash of this
// node together with the owner.
//
// Order within a pass: commits (fanout lanes at once) → reroute append →
// deletion checks → skip-set + checkpoint write. A crash anywhere before the
// checkpoint write only means re-sending records, which the owners dedup.

import {
  advanceCheckpoint,
  type DispatchPlan,
  lookaheadLimit,
  nextFailures,
  planDispatch,
  type SeqRange,
  type SkipSet,
  seqsToRanges,
  skipAddRanges,
  skipHas,
  skipSize,
} from "../core/dispatch-plan.ts";
import type { WalRecord, WalRecordInput } from "../core/records.ts";
import { commitNeverApplied, isPartitionMoving } from "../rpc/status.ts";
import type { IngressWal } from "../wal/types.ts";
import { commitLanes, type LaneResult } from "./commit-runner.ts";
import {
  type InDoubtMarks,
  isInDoubt as isLaneSeqInDoubt,
  markInDoubt as markLaneInDoubt,
  pruneInDoubt as pruneLaneDoubts,
} from "./in-doubt.ts";
import {
  type Destinations,
  type DispatchErrorKind,
  type Dispatcher,
  type DispatcherOptions,
  type DispatcherStats,
  type DispatchLogger,
  type DispatchMetricsSink,
  noopDispatchMetrics,
} from "./types.ts";
import { readWindow } from "./window-reader.ts";

export interface DispatcherDeps {
  wal: IngressWal;
  destinations: Destinations;
  /** Ingress WAL incarnation carried in every CommitRecord. */
  incarnation: string;
  options: DispatcherOptions;
  logger: DispatchLogger;
  metrics?: DispatchMetricsSink;
  nowMs: () => number;
}

/** What the loop does after a pass. */
type Next = "now" | "idle" | "stuck" | "backoff";

interface PassOutcome {
  records: number;
  done: number;
  failed: boolean;
}

class PassError extends Error {
  readonly kind: DispatchErrorKind;
  constructor(kind: DispatchErrorKind, cause: unknown) {
    super(`dispatch ${kind} failed`, { cause });
    this.kind = kind;
  }
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { wal, destinations, incarnation, options: o, logger, nowMs } = deps;
  const metrics = deps.metrics ?? noopDispatchMetrics;
  // A pass holds at most this many record bytes: what fanout lanes of full
  // batches can carry, so memory follows the commit capacity.
  const maxPassBytes = o.maxPassBytes ?? o.maxBatchBytes * o.commitFanout;

  let checkpoint = wal.stats().checkpoint;
  let skip: SkipSet = [];
  let windowRecords = o.windowRecords;
  let failures = new Map<string, number>();
  /** Lane key → seq → when its commit on that lane first failed without an answer. */
  const inDoubt: InDoubtMarks = new Map();
  const inDoubtHoldMs = o.inDoubtHoldMs ?? Number.POSITIVE_INFINITY;

  const st = { passes: 0, committedRecords: 0, lastPassMs: 0, heldRecords: 0, reroutedRecords: 0, errors: 0 };

  let running = false;
  let loopDone: Promise<void> = Promise.resolve();
  let abort = new AbortController();
  let listening = false;
  let durableSinceSleep = false;
  let sleeper: { timer: NodeJS.Timeout; wakeOnDurable: boolean; wake: () => void } | null = null;
  const drainWaiters = new Set<{ timer: NodeJS.Timeout; resolve: (ok: boolean) => void }>();

  const countError = (kind: DispatchErrorKind): void => {
    st.errors++;
    metrics.error(kind);
  };

  function sleep(ms: number, wakeOnDurable: boolean): Promise<void> {
    if (wakeOnDurable && durableSinceSleep) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        if (sleeper === null) return;
        clearTimeout(sleeper.timer);
        sleeper = null;
        resolve();
      };
      sleeper = { timer: setTimeout(wake, ms), wakeOnDurable, wake };
    });
  }

  function onDurable(): void {
    durableSinceSleep = true;
    if (sleeper?.wakeOnDurable) sleeper.wake();
  }

  function settleDrains(): void {
    if (drainWaiters.size === 0 || wal.stats().pendingRecords > 0) return;
    for (const w of drainWaiters) {
      clearTimeout(w.timer);
      w.resolve(true);
    }
    drainWaiters.clear();
  }

  async function commitPlan(plan: DispatchPlan): Promise<LaneResult[]> {
    return commitLanes(plan.lanes, {
      fanout: o.commitFanout,
      timeoutMs: o.commitTimeoutMs,
      nowMs,
      signal: abort.signal,
      commit: (lane, batch, deadlineMs) =>
        destinations.commit(lane.nodeId, lane.topic, lane.partition, batch.records, deadlineMs),
      onBatch: (_lane, batch, outcome, ms) => metrics.commitBatch(batch.records.length, ms / 1000, outcome),
    });
  }

  /** Re-appends rerouted records aimed at their siblings; returns the old seqs now done. */
  async function reroute(plan: DispatchPlan): Promise<number[]> {
    if (plan.reroutes.length === 0 || abort.signal.aborted) return [];
    const input: WalRecordInput[] = [];
    const oldSeqs: number[] = [];
    for (const g of plan.reroutes) {
      for (const m of g.moves) {
        const r = m.record;
        // No producer stamp: producer seqs are per partition, so a stamp moved
        // to another partition could collide with that partition's own seqs
        // and drop a record as a false duplicate. Rerouted records are plain.
        input.push({
          topic: r.topic,
          key: r.key,
          partition: m.toPartition,
          createdMs: r.createdMs,
          payload: r.payload,
        });
        oldSeqs.push(r.seq);
      }
    }
    try {
      // Durable before the old seqs count as done: a crash in between leaves
      // both copies, never neither.
      const { firstSeq, lastSeq } = await wal.append(input);
      for (const g of plan.reroutes) {
        st.reroutedRecords += g.moves.length;
        metrics.rerouted(g.moves.length, g.reason);
        logger.warn(
          {
            topic: g.topic,
            partition: g.fromPartition,
            nodeId: g.nodeId,
            reason: g.reason,
            records: g.moves.length,
            toPartitions: [...new Set(g.moves.map((m) => m.toPartition))],
          },
          "rerouted records to sibling partitions",
        );
      }
      logger.debug({ firstSeq, lastSeq }, "reroute copies appended to the WAL");
      return oldSeqs;
    } catch (err) {
      countError("reroute");
      logger.error({ err, records: input.length }, "reroute append failed; records kept for the next pass");
      return [];
    }
  }

  /** Asks for each missing topic's deletion; returns the seqs that may be discarded. */
  async function confirmDeletions(plan: DispatchPlan): Promise<{ seqs: number[]; failed: boolean }> {
    const seqs: number[] = [];
    let failed = false;
    for (const m of plan.missingTopics) {
      if (abort.signal.aborted) break;
      let confirmed = false;
      try {
        confirmed = await destinations.confirmTopicDeleted(m.topic);
      } catch (err) {
        failed = true;
        countError("confirm");
        logger.warn(
          { err, topic: m.topic, records: m.seqs.length },
          "topic deletion check failed; records kept",
        );
      }
      if (confirmed) {
        seqs.push(...m.seqs);
        metrics.discarded(m.seqs.length);
        logger.warn({ topic: m.topic, records: m.seqs.length }, "discarded records of a deleted topic");
      } else if (!failed) {
        logger.info(
          { topic: m.topic, records: m.seqs.length },
          "topic missing but deletion not confirmed; records kept",
        );
      }
    }
    return { seqs, failed };
  }

  function recordOutcomes(plan: DispatchPlan, results: LaneResult[]): { seqs: number[]; failed: boolean } {
    const seqs: number[] = [];
    let failed = false;
    const attempted = new Map<string, boolean>();
    for (const r of results) {
      // A partition move's freeze is a hold, not a failing owner: it never counts toward a reroute.
      const moving = r.failure?.outcome === "error" && isPartitionMoving(r.failure.error);
      if (!moving) attempted.set(r.lane.key, r.ok);
      seqs.push(...r.committedSeqs);
      st.committedRecords += r.appended;
      if (r.appended + r.duplicates > 0) metrics.committed(r.appended, r.duplicates);
      if (r.fenced > 0) metrics.fenced?.(r.fenced);
      // A refusal or no connection is an answer; a timeout, an abort or any other error leaves the batch in doubt.
      const f = r.failure;
      if (f !== undefined && !(f.outcome === "error" && commitNeverApplied(f.error)))
        markInDoubt(r.lane.key, f.seqs ?? []);
      if (r.failure === undefined || r.failure.outcome === "aborted") continue;
      failed = true;
      if (moving) continue;
      countError(r.failure.outcome === "timeout" ? "timeout" : "commit");
      logger.warn(
        {
          err: r.failure.error,
          outcome: r.failure.outcome,
          topic: r.lane.topic,
          partition: r.lane.partition,
          nodeId: r.lane.nodeId,
          failedPasses: (failures.get(r.lane.key) ?? 0) + 1,
        },
        "commit failed; records kept for the next pass",
      );
    }
    failures = nextFailures(failures, plan.laneKeys, attempted);
    return { seqs, failed };
  }

  function markInDoubt(lane: string, seqs: readonly number[]): void {
    markLaneInDoubt(inDoubt, lane, seqs, nowMs());
  }

  function isInDoubt(lane: string, seq: number): boolean {
    return isLaneSeqInDoubt(inDoubt, lane, seq, nowMs(), inDoubtHoldMs);
  }

  /** Forgets done seqs, seqs below the checkpoint and lanes that had no records this pass. */
  function pruneInDoubt(plan: DispatchPlan, done: SkipSet, cp: number): void {
    pruneLaneDoubts(inDoubt, plan.laneKeys, done, cp);
  }

  /** Reroutes of records whose in-doubt hold ran out: the one place a record may now be stored twice. */
  function reportExpiredDoubts(plan: DispatchPlan): void {
    for (const g of plan.reroutes) {
      const m = inDoubt.get(g.laneKey);
      if (m === undefined) continue;
      const expired = g.moves.filter((mv) => m.has(mv.record.seq)).length;
      if (expired === 0) continue;
      metrics.inDoubtExpired?.(expired);
      logger.warn(
        {
          topic: g.topic,
          partition: g.fromPartition,
          nodeId: g.nodeId,
          records: expired,
          holdMs: inDoubtHoldMs,
        },
        "in-doubt records rerouted after their hold expired; the owner may also have stored them",
      );
    }
  }

  function reportHeld(plan: DispatchPlan): void {
    st.heldRecords = 0;
    for (const h of plan.held) {
      st.heldRecords += h.count;
      logger.debug(
        { topic: h.topic, partition: h.partition, nodeId: h.nodeId, reason: h.reason, records: h.count },
        "holding records",
      );
    }
    metrics.held(st.heldRecords);
  }

  function reportLag(records: readonly WalRecord[], done: SkipSet): void {
    let lagMs = 0;
    for (const r of records) {
      if (skipHas(done, r.seq)) continue;
      lagMs = Math.max(0, nowMs() - r.createdMs);
      break;
    }
    metrics.lagSeconds(lagMs / 1000);
  }

  async function pass(): Promise<PassOutcome> {
    const cp = checkpoint;
    let read: Awaited<ReturnType<typeof readWindow>>;
    try {
      read = await readWindow(wal, {
        from: cp,
        limit: lookaheadLimit(cp, windowRecords, o.lookaheadWindows),
        windowRecords,
        skip,
        maxReadBytes: o.maxBatchBytes,
        maxPassBytes,
      });
    } catch (err) {
      throw new PassError("read", err);
    }
    if (read.absent.length > 0) {
      logger.warn(
        { absent: read.absent },
        "WAL has no records for these seqs (dropped corrupt frames); skipping them",
      );
    }

    let plan: DispatchPlan;
    try {
      plan = planDispatch({
        records: read.records,
        incarnation,
        localNodeId: destinations.localNodeId,
        resolve: (t, p) => destinations.resolve(t, p),
        partitionCount: (t) => destinations.partitionCount(t),
        failures,
        inDoubt: isInDoubt,
        options: o,
      });
    } catch (err) {
      throw new PassError("plan", err);
    }
    reportHeld(plan);

    const committed = recordOutcomes(plan, await commitPlan(plan));
    const rerouted = await reroute(plan);
    if (rerouted.length > 0) reportExpiredDoubts(plan);
    const deleted = await confirmDeletions(plan);

    const doneRanges: SeqRange[] = [
      ...read.absent,
      ...seqsToRanges([...committed.seqs, ...rerouted, ...deleted.seqs]),
    ];
    skip = skipAddRanges(skip, doneRanges);
    windowRecords = plan.nextWindowRecords;
    reportLag(read.records, skipAddRanges([], doneRanges));

    const next = advanceCheckpoint(cp, skip);
    if (next.checkpoint > cp) {
      try {
        await wal.setCheckpoint(next.checkpoint);
      } catch (err) {
        // The done seqs stay in the skip-set; the next pass tries again.
        throw new PassError("checkpoint", err);
      }
    }
    checkpoint = next.checkpoint;
    skip = next.skip;
    pruneInDoubt(plan, skip, checkpoint);

    const done = committed.seqs.length + rerouted.length + deleted.seqs.length;
    const failed = committed.failed || deleted.failed || (plan.reroutes.length > 0 && rerouted.length === 0);
    return { records: read.records.length, done, failed };
  }

  function classify(out: PassOutcome): Next {
    if (out.failed) return "backoff";
    if (out.done > 0) return "now"; // maybe more; an empty follow-up pass is cheap
    if (out.records > 0) return "stuck"; // held or unconfirmed: retry later, sooner if new records come
    return "idle";
  }

  async function loop(): Promise<void> {
    while (running) {
      let next: Next = "idle";
      if (wal.stats().nextSeq > checkpoint) {
        durableSinceSleep = false;
        const started = nowMs();
        try {
          const out = await pass();
          st.passes++;
          st.lastPassMs = nowMs() - started;
          metrics.pass(st.lastPassMs / 1000, out.records);
          next = classify(out);
        } catch (err) {
          const kind = err instanceof PassError ? err.kind : "plan";
          countError(kind);
          logger.error({ err, kind, checkpoint }, "dispatch pass failed; backing off");
          next = "backoff";
        }
      }
      settleDrains();
      if (!running) break;
      if (next === "now") await new Promise<void>((resolve) => setImmediate(resolve));
      else if (next === "idle") await sleep(o.idlePollMs, true);
      else if (next === "stuck") await sleep(o.errorBackoffMs, true);
      else await sleep(o.errorBackoffMs, false);
    }
  }

  return {
    start() {
      if (running) return;
      if (!listening) {
        // The WAL has no unsubscribe; the listener is cheap and inert when stopped.
        wal.onDurable(onDurable);
        listening = true;
      }
      running = true;
      abort = new AbortController();
      checkpoint = Math.max(checkpoint, wal.stats().checkpoint);
      loopDone = loop();
    },

    async stop() {
      if (!running) return;
      running = false;
      abort.abort();
      sleeper?.wake();
      await loopDone;
      for (const w of drainWaiters) {
        clearTimeout(w.timer);
        w.resolve(wal.stats().pendingRecords === 0);
      }
      drainWaiters.clear();
    },

    drain(timeoutMs) {
      if (wal.stats().pendingRecords === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const w = {
          timer: setTimeout(() => {
            drainWaiters.delete(w);
            resolve(false);
          }, timeoutMs),
          resolve,
        };
        drainWaiters.add(w);
        if (sleeper?.wakeOnDurable) sleeper.wake();
      });
    },

    stats(): DispatcherStats {
      return {
        ...st,
        pendingRecords: wal.stats().pendingRecords,
        checkpoint,
        skipSetRecords: skipSize(skip),
      };
    },
  };
}
