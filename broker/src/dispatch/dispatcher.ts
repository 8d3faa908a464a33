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
// deletion checks → skip-set → done-set write → checkpoint write. A crash
// before the done-set write re-dispatches what this pass finished: a
// committed record is deduped by its owner, but one rerouted (or committed
// to an owner that is Down by then, and so rerouted after the restart) can be
// stored twice. The done-set (done-set-store.ts) keeps that to one pass's
// records instead of everything done above a checkpoint a held lane pins.

import {
  advanceCheckpoint,
  type DispatchPlan,
  lookaheadLimit,
  mergeBySeq,
  nextFailures,
  planDispatch,
  type SeqRange,
  type SkipSet,
  type StalledLane,
  seqsToRanges,
  skipAddRanges,
  skipHas,
  skipSize,
  skipWithout,
  stalledLanes,
} from "../core/dispatch-plan.ts";
import type { WalRecord, WalRecordInput } from "../core/records.ts";
import type { IngressWal } from "../wal/types.ts";
import { commitLanes, type LaneResult } from "./commit-runner.ts";
import { createDoneSetSaver } from "./done-set-saver.ts";
import type { DoneSetStore } from "./done-set-store.ts";
import {
  doubtsOf,
  type InDoubtMarks,
  isInDoubt as isSeqInDoubt,
  markInDoubt as markSeqsInDoubt,
  pruneInDoubt as pruneLaneDoubts,
} from "./in-doubt.ts";
import type { ParkedStore } from "./parked-store.ts";
import { releaseAndPark } from "./parking.ts";
import {
  type Destinations,
  type DispatchErrorKind,
  type Dispatcher,
  type DispatcherOptions,
  type DispatcherStats,
  type DispatchLogger,
  type DispatchMetricsSink,
  noopDispatchMetrics,
  type StalledLaneStatus,
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
  /**
   * Where lanes that cannot progress are parked so the checkpoint passes
   * them (parked-store.ts). Absent: nothing is parked, and a stuck record
   * stops the pass's reach lookaheadWindows windows past it.
   */
  parked?: ParkedStore;
  /**
   * Where the done seqs above the checkpoint are saved (done-set-store.ts).
   * Absent: they are memory only, and a crash re-dispatches all of them.
   */
  doneSet?: DoneSetStore;
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
  // The done seqs above the checkpoint the process before saved: skipped, not re-sent.
  let skip: SkipSet = deps.doneSet?.initial ?? [];
  let windowRecords = o.windowRecords;
  let failures = new Map<string, number>();
  /** Lane key → seq → when its commit on that lane first failed without an answer. */
  const inDoubt: InDoubtMarks = new Map();
  const inDoubtHoldMs = o.inDoubtHoldMs ?? Number.POSITIVE_INFINITY;

  const parked = deps.parked;
  const st = {
    passes: 0,
    committedRecords: 0,
    lastPassMs: 0,
    heldRecords: 0,
    reroutedRecords: 0,
    errors: 0,
    parkedRecords: parked?.size ?? 0,
    parkRefusedRecords: 0,
  };
  let stalled: StalledLane[] = [];
  /** Records still to dispatch: parked ones are off the WAL's books but not done. */
  const pending = (): number => wal.stats().pendingRecords + (parked?.size ?? 0);

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
    if (drainWaiters.size === 0 || pending() > 0) return;
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
          topicUid: g.topicUid,
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
        confirmed = await destinations.confirmTopicDeleted(m.topic, m.topicUid);
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

  function recordOutcomes(
    plan: DispatchPlan,
    results: LaneResult[],
  ): { seqs: number[]; failed: boolean; failedLanes: Map<string, "commit-failing" | "moving"> } {
    const seqs: number[] = [];
    let failed = false;
    const failedLanes = new Map<string, "commit-failing" | "moving">();
    const attempted = new Map<string, boolean>();
    for (const r of results) {
      // A partition move's freeze is a hold, not a failing owner: it never counts toward a reroute.
      const f = r.failure;
      const failure = f?.outcome === "error" ? destinations.describeFailure(f.error) : undefined;
      const moving = failure?.moving === true;
      if (!moving) attempted.set(r.lane.key, r.ok);
      seqs.push(...r.committedSeqs);
      st.committedRecords += r.appended;
      if (r.appended + r.duplicates > 0) metrics.committed(r.appended, r.duplicates);
      if (r.fenced > 0) metrics.fenced?.(r.fenced);
      // A refusal or no connection is an answer; a timeout, an abort or any other error leaves the batch in doubt.
      if (f !== undefined && failure?.applied !== "no")
        markInDoubt(r.lane.topic, r.lane.partition, f.seqs ?? []);
      if (r.failure === undefined || r.failure.outcome === "aborted") continue;
      failed = true;
      failedLanes.set(r.lane.key, moving ? "moving" : "commit-failing");
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
    return { seqs, failed, failedLanes };
  }

  function markInDoubt(topic: string, partition: number, seqs: readonly number[]): void {
    markSeqsInDoubt(inDoubt, topic, partition, seqs, nowMs());
  }

  function isInDoubt(topic: string, partition: number, seq: number): boolean {
    return isSeqInDoubt(inDoubt, topic, partition, seq, nowMs(), inDoubtHoldMs);
  }

  /** Forgets done seqs only (in-doubt.ts); parked seqs stay marked. */
  function pruneInDoubt(done: SkipSet, cp: number): void {
    pruneLaneDoubts(inDoubt, done, cp, (s) => parked?.has(s) === true);
  }

  /** Reroutes of records whose in-doubt hold ran out: the one place a record may now be stored twice. */
  function reportExpiredDoubts(plan: DispatchPlan): void {
    for (const g of plan.reroutes) {
      const m = doubtsOf(inDoubt, g.topic, g.fromPartition);
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

  /** Parks what a pass left undone past a stalled lane (parking.ts); resolves the seqs parked. */
  async function park(
    stoppedBy: Awaited<ReturnType<typeof readWindow>>["stoppedBy"],
    records: readonly WalRecord[],
    doneSeqs: readonly number[],
  ): Promise<number[]> {
    if (parked === undefined) return [];
    const out = await releaseAndPark(parked, logger, {
      stoppedBy,
      records,
      doneSeqs,
      aborted: abort.signal.aborted,
    });
    st.parkRefusedRecords += out.refusedRecords;
    if (out.failed) countError("park");
    st.parkedRecords = parked.size;
    return out.parkedSeqs;
  }

  function reportStalled(
    plan: DispatchPlan,
    failedLanes: ReadonlyMap<string, "commit-failing" | "moving">,
    records: readonly WalRecord[],
  ): void {
    const createdMsOf = (seq: number): number | undefined => {
      let lo = 0;
      let hi = records.length - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        const r = records[mid]!;
        if (r.seq === seq) return r.createdMs;
        if (r.seq < seq) lo = mid + 1;
        else hi = mid - 1;
      }
      return undefined;
    };
    stalled = stalledLanes(plan, failedLanes, createdMsOf);
    const now = nowMs();
    metrics.stalled?.(
      stalled.map((l) => ({ ...l, oldestAgeMs: Math.max(0, now - l.oldestCreatedMs) })),
      parked?.size ?? 0,
    );
  }

  const doneSetSaver =
    deps.doneSet === undefined
      ? undefined
      : createDoneSetSaver({
          store: deps.doneSet,
          intervalMs: o.doneSetSaveIntervalMs ?? 250,
          maxRanges: o.doneSetMaxRanges ?? 50_000,
          nowMs,
          // Parked seqs are left out: they are done only while the parked store keeps them,
          // and at open it gives back to the WAL those the WAL holds from its checkpoint.
          snapshot: () => skipWithout(skip, parked?.records() ?? []),
          onError: (err) => {
            countError("done-set");
            logger.warn({ err }, "could not save the dispatch done-set");
          },
        });

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

    // Parked records are planned with the window's (their lanes may be able to move now).
    const records = mergeBySeq(parked?.records() ?? [], read.records);
    let plan: DispatchPlan;
    try {
      plan = planDispatch({
        records,
        incarnation,
        localNodeId: destinations.localNodeId,
        resolve: (t, p, uid) => destinations.resolve(t, p, uid),
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

    const doneSeqs = [...committed.seqs, ...rerouted, ...deleted.seqs];
    const parkedNow = await park(read.stoppedBy, records, doneSeqs);
    const doneRanges: SeqRange[] = [...read.absent, ...seqsToRanges([...doneSeqs, ...parkedNow])];
    skip = skipAddRanges(skip, doneRanges);
    windowRecords = plan.nextWindowRecords;
    reportLag(read.records, skipAddRanges([], doneRanges));
    reportStalled(plan, committed.failedLanes, records);

    const next = advanceCheckpoint(cp, skip);
    // Needed only while done seqs sit above the checkpoint; saved in the background.
    if (doneRanges.length > 0 && next.skip.length > 0) doneSetSaver?.request();
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
    pruneInDoubt(skip, checkpoint);

    const done = doneSeqs.length + parkedNow.length;
    const failed = committed.failed || deleted.failed || (plan.reroutes.length > 0 && rerouted.length === 0);
    return { records: read.records.length, done, failed };
  }

  function classify(out: PassOutcome): Next {
    // A failing lane alone backs off; with parking, other lanes still moved
    // in this pass, and backing off would throttle them to one pass per backoff.
    if (out.failed && out.done === 0) return "backoff";
    if (out.done > 0) return "now"; // maybe more; an empty follow-up pass is cheap
    if (out.records > 0) return "stuck"; // held or unconfirmed: retry later, sooner if new records come
    return "idle";
  }

  async function loop(): Promise<void> {
    while (running) {
      let next: Next = "idle";
      if (wal.stats().nextSeq > checkpoint || (parked?.size ?? 0) > 0) {
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
      doneSetSaver?.resume();
      abort = new AbortController();
      checkpoint = Math.max(checkpoint, wal.stats().checkpoint);
      loopDone = loop();
    },

    async stop() {
      if (!running) return;
      running = false;
      abort.abort();
      sleeper?.wake();
      const saverStopped = doneSetSaver?.stop();
      await loopDone;
      await saverStopped;
      for (const w of drainWaiters) {
        clearTimeout(w.timer);
        w.resolve(pending() === 0);
      }
      drainWaiters.clear();
    },

    drain(timeoutMs) {
      if (pending() === 0) return Promise.resolve(true);
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
        pendingRecords: pending(),
        checkpoint,
        skipSetRecords: skipSize(skip),
        parkedRecords: parked?.size ?? 0,
      };
    },

    stalledLanes(): StalledLaneStatus[] {
      const now = nowMs();
      return stalled.map((l) => ({
        topic: l.topic,
        partition: l.partition,
        nodeId: l.nodeId,
        reason: l.reason,
        records: l.records,
        oldestAgeMs: Math.max(0, now - l.oldestCreatedMs),
      }));
    },
  };
}
