// One broker's dispatcher, step by step: the same pass as
// broker/src/dispatch/pass.ts (read window → planDispatch → commit
// lanes → reroute → deletion checks → skip-set → checkpoint → prune doubts),
// calling the real pure functions (readWindow, planDispatch, nextFailures,
// advanceCheckpoint, the skip-set helpers, in-doubt.ts, commitNeverApplied,
// isPartitionMoving). What is modelled instead of run: commit-runner.ts's
// lanes (batches of a lane one after another, a lane stops at its first
// failure, every batch has a deadline) and the loop's sleeps, because they
// are timers and promises; the sim drives them from its own clock.

import {
  advanceCheckpoint,
  type CommitLane,
  clipDoneSet,
  type Destination,
  type DispatchPlan,
  lookaheadLimit,
  nextFailures,
  planDispatch,
  type SeqRange,
  type SkipSet,
  seqsToRanges,
  skipAddRanges,
  skipHas,
} from "../broker/src/core/dispatch-plan.ts";
import type { CommitRecord, WalRecordInput } from "../broker/src/core/records.ts";
import {
  doubtsOf,
  type InDoubtMarks,
  isInDoubt,
  markInDoubt,
  pruneInDoubt,
} from "../broker/src/dispatch/in-doubt.ts";
import type { DispatcherOptions } from "../broker/src/dispatch/types.ts";
import { readWindow } from "../broker/src/dispatch/window-reader.ts";
import { commitNeverApplied, isPartitionMoving } from "../broker/src/rpc/status.ts";
import type { SimWal } from "./model/wal.ts";

export interface CommitAnswer {
  appended: number;
  duplicates: number;
}

/** What the dispatcher needs from its node and the cluster (dispatch/types.ts Destinations, plus the sim's hooks). */
export interface DispatchEnv {
  readonly localNodeId: string;
  now(): number;
  /** Where (topic, partition) of incarnation `topicUid` lives; topic-missing when that incarnation is gone. */
  resolve(topic: string, partition: number, topicUid?: string): Destination;
  partitionCount(topic: string): number;
  /** The local PartitionLog.commitDurable; throws its errors. */
  commitLocal(topic: string, partition: number, records: readonly CommitRecord[]): CommitAnswer;
  /** A CommitBatch RPC; `answer` is called at most once, maybe synchronously (not connected), maybe never (lost). */
  sendCommit(
    nodeId: string,
    topic: string,
    partition: number,
    records: readonly CommitRecord[],
    deadlineMs: number,
    answer: (result: CommitAnswer | { error: Error }) => void,
  ): void;
  /** The stale-replica defense (Metastore.confirmTopicDeleted); may throw (API unreachable). */
  confirmTopicDeleted(topic: string, uid?: string): boolean;
  /** A named crash point: true means this broker dies here (the caller stops at once). */
  crashAt(point: string): boolean;
  trace(msg: string): void;
  /** Records discarded as belonging to a confirmed-deleted topic (ids = payloads). */
  discarded(ids: readonly string[], topic: string): void;
  /** Undone records whose in-doubt marks pruneInDoubt dropped (the known prune bug). */
  prunedDoubts(ids: readonly string[]): void;
  /** In-doubt records rerouted after their hold expired: the documented seam where a copy may be stored twice. */
  expiredDoubts(ids: readonly string[]): void;
}

type Failure = { outcome: "error" | "timeout"; error?: unknown; seqs: number[] };

interface LaneRun {
  lane: CommitLane;
  batch: number;
  committedSeqs: number[];
  ok: boolean;
  settled: boolean;
  failure?: Failure;
  waiting?: { token: number; deadlineMs: number; seqs: number[] };
}

interface Pass {
  checkpoint: number;
  plan: DispatchPlan;
  absent: SeqRange[];
  runs: LaneRun[];
  records: number;
}

export class SimDispatcher {
  readonly #wal: SimWal;
  readonly #env: DispatchEnv;
  readonly #o: DispatcherOptions;
  checkpoint: number;
  skip: SkipSet = [];
  #windowRecords: number;
  #failures = new Map<string, number>();
  readonly inDoubt: InDoubtMarks = new Map();
  #pass: Pass | undefined;
  #reading = false;
  #wakeAtMs = 0;
  #wakeOnDurable = true;
  #durableSinceSleep = false;
  #token = 0;
  /** Set when a crash point fired: the broker is dead, nothing more may happen here. */
  dead = false;
  passes = 0;

  constructor(wal: SimWal, env: DispatchEnv, options: DispatcherOptions) {
    this.#wal = wal;
    this.#env = env;
    this.#o = options;
    this.checkpoint = wal.checkpoint;
    // The done-set the process before saved (openDoneSetStore clips it).
    this.skip = clipDoneSet(wal.doneSet, wal.checkpoint, wal.nextSeq);
    this.#windowRecords = options.windowRecords;
  }

  #markedSeqs(): number[] {
    const out: number[] = [];
    for (const m of this.inDoubt.values()) out.push(...m.keys());
    return out;
  }

  /**
   * Seqs whose commit outcome this process does not know: marked in doubt, or
   * sent in the pass still running. A crash forgets them (the documented seam
   * of dispatch/pass.ts: a restart of this node together with the owner may
   * store such a record twice).
   */
  unansweredSeqs(): number[] {
    const out: number[] = [];
    for (const m of this.inDoubt.values()) out.push(...m.keys());
    for (const run of this.#pass?.runs ?? []) {
      if (run.waiting !== undefined) out.push(...run.waiting.seqs);
      if (run.failure !== undefined) out.push(...run.failure.seqs);
    }
    return out;
  }

  /**
   * Seqs only memory knows are done: in the skip-set above the checkpoint
   * (committed, rerouted or discarded), or acknowledged in the pass still running.
   */
  doneAboveCheckpoint(): number[] {
    const out: number[] = [];
    for (const r of this.skip)
      for (let s = r.from; s < r.to; s++) if (!skipHas(this.#wal.doneSet, s)) out.push(s);
    for (const run of this.#pass?.runs ?? []) out.push(...run.committedSeqs);
    return out;
  }

  onDurable(): void {
    this.#durableSinceSleep = true;
  }

  /** Whether the loop would start a pass now. */
  runnable(): boolean {
    if (this.dead || this.#pass !== undefined || this.#reading) return false;
    if (this.#wal.nextSeq <= this.checkpoint) return false;
    return this.#env.now() >= this.#wakeAtMs || (this.#wakeOnDurable && this.#durableSinceSleep);
  }

  get inPass(): boolean {
    return this.#pass !== undefined;
  }

  async startPass(): Promise<void> {
    const cp = this.checkpoint;
    this.#durableSinceSleep = false;
    this.#reading = true;
    const wal = this.#wal;
    const read = await readWindow(
      {
        read: async (from, count) => wal.read(from, count),
        stats: () => ({
          incarnation: wal.incarnation,
          nextSeq: wal.nextSeq,
          checkpoint: wal.checkpoint,
          pendingRecords: wal.pending,
          segments: 1,
          diskBytes: 0,
          corruptFrames: 0,
          poisoned: false,
        }),
      },
      {
        from: cp,
        limit: lookaheadLimit(cp, this.#windowRecords, this.#o.lookaheadWindows),
        windowRecords: this.#windowRecords,
        skip: this.skip,
        maxReadBytes: this.#o.maxBatchBytes,
        maxPassBytes: this.#o.maxPassBytes ?? this.#o.maxBatchBytes * this.#o.commitFanout,
      },
    );
    this.#reading = false;
    if (this.dead) return;
    const now = this.#env.now();
    const holdMs = this.#o.inDoubtHoldMs ?? Number.POSITIVE_INFINITY;
    const plan = planDispatch({
      records: read.records,
      incarnation: wal.incarnation,
      localNodeId: this.#env.localNodeId,
      resolve: (t, p, uid) => this.#env.resolve(t, p, uid),
      partitionCount: (t) => this.#env.partitionCount(t),
      failures: this.#failures,
      inDoubt: (topic, partition, seq) => isInDoubt(this.inDoubt, topic, partition, seq, now, holdMs),
      options: this.#o,
    });
    this.passes++;
    this.#env.trace(
      `${this.#env.localNodeId} pass cp=${cp} read=${read.records.length} lanes=${plan.lanes.length} held=${plan.held.map((h) => `${h.topic}/${h.partition}:${h.reason}x${h.count}`).join(",")} reroutes=${plan.reroutes.reduce((n, g) => n + g.moves.length, 0)} missing=${plan.missingTopics.map((m) => m.topic).join(",")}`,
    );
    const runs: LaneRun[] = plan.lanes.map((lane) => ({
      lane,
      batch: 0,
      committedSeqs: [],
      ok: true,
      settled: false,
    }));
    this.#pass = { checkpoint: cp, plan, absent: read.absent, runs, records: read.records.length };
    // Fanout bounds concurrency; the sim's lane counts stay under it, so every lane starts now.
    for (const run of runs) {
      this.#issue(run);
      if (this.dead) return;
    }
    this.#maybeFinish();
  }

  #settle(run: LaneRun, failure?: Failure): void {
    run.waiting = undefined;
    run.settled = true;
    if (failure !== undefined) {
      run.ok = false;
      run.failure = failure;
    }
  }

  /** Sends the lane's next batch, or settles the lane when none is left. */
  #issue(run: LaneRun): void {
    for (;;) {
      const batch = run.lane.batches[run.batch];
      if (batch === undefined) {
        this.#settle(run);
        return;
      }
      const seqs = batch.records.map((r) => r.seq);
      const now = this.#env.now();
      if (run.lane.local) {
        try {
          const res = this.#env.commitLocal(run.lane.topic, run.lane.partition, batch.records);
          if (this.dead) return;
          if (!this.#accept(run, res, seqs)) return;
          continue;
        } catch (error) {
          this.#settle(run, { outcome: "error", error, seqs });
          return;
        }
      }
      const token = ++this.#token;
      const deadlineMs = now + this.#o.commitTimeoutMs;
      run.waiting = { token, deadlineMs, seqs };
      this.#env.sendCommit(
        run.lane.nodeId,
        run.lane.topic,
        run.lane.partition,
        batch.records,
        deadlineMs,
        (r) => {
          if (this.dead || run.waiting?.token !== token) return; // abandoned: timed out already
          if ("error" in r) {
            this.#settle(run, { outcome: "error", error: r.error, seqs });
          } else if (this.#accept(run, r, seqs)) {
            run.waiting = undefined;
            this.#issue(run);
            if (this.dead) return;
          }
          this.#maybeFinish();
        },
      );
      return;
    }
  }

  /** commit-runner.ts: an owner that accounts for fewer records than sent has not said they are durable. */
  #accept(run: LaneRun, res: CommitAnswer, seqs: number[]): boolean {
    if (res.appended + res.duplicates !== seqs.length) {
      this.#settle(run, { outcome: "error", error: new Error("short acknowledgement"), seqs });
      return false;
    }
    run.committedSeqs.push(...seqs);
    run.batch++;
    return true;
  }

  /** Settles every batch whose deadline passed (settleWithin's timer). */
  checkTimeouts(): void {
    const p = this.#pass;
    if (p === undefined || this.dead) return;
    const now = this.#env.now();
    let any = false;
    for (const run of p.runs) {
      if (run.waiting !== undefined && run.waiting.deadlineMs <= now) {
        this.#settle(run, { outcome: "timeout", seqs: run.waiting.seqs });
        any = true;
      }
    }
    if (any) this.#maybeFinish();
  }

  #maybeFinish(): void {
    const p = this.#pass;
    if (p === undefined || this.dead || !p.runs.every((r) => r.settled)) return;
    this.#finish(p);
  }

  /** dispatch/pass.ts: laneOutcomes → appendReroutes → confirmDeletions → checkpoint → prune doubts; then the pace. */
  #finish(p: Pass): void {
    const env = this.#env;
    const now = env.now();
    const committed: number[] = [];
    let failed = false;
    const attempted = new Map<string, boolean>();
    for (const r of p.runs) {
      const moving = r.failure?.outcome === "error" && isPartitionMoving(r.failure.error);
      if (!moving) attempted.set(r.lane.key, r.ok);
      committed.push(...r.committedSeqs);
      const f = r.failure;
      if (f !== undefined && !(f.outcome === "error" && commitNeverApplied(f.error))) {
        markInDoubt(this.inDoubt, r.lane.topic, r.lane.partition, f.seqs, now);
        env.trace(
          `${env.localNodeId} in doubt on ${r.lane.topic}/${r.lane.partition}@${r.lane.nodeId}: seqs ${f.seqs.join(",")} (${f.outcome}${f.outcome === "error" && f.error instanceof Error ? `: ${f.error.message}` : ""})`,
        );
      }
      if (f === undefined) continue;
      failed = true;
    }
    this.#failures = nextFailures(this.#failures, p.plan.laneKeys, attempted);

    // Reroute: copies appended (durable) before the old seqs count as done.
    const rerouted: number[] = [];
    if (p.plan.reroutes.length > 0) {
      const input: WalRecordInput[] = [];
      for (const g of p.plan.reroutes) {
        const marks = doubtsOf(this.inDoubt, g.topic, g.fromPartition);
        const expired = g.moves.filter((mv) => marks?.has(mv.record.seq) === true);
        if (expired.length > 0) env.expiredDoubts(expired.map((mv) => mv.record.payload.toString()));
        for (const m of g.moves) {
          const r = m.record;
          input.push({
            topic: r.topic,
            // The copy keeps the incarnation the group resolved to (dispatch/reroute.ts).
            ...(g.topicUid === undefined ? {} : { topicUid: g.topicUid }),
            key: r.key,
            partition: m.toPartition,
            createdMs: r.createdMs,
            payload: r.payload,
          });
          rerouted.push(r.seq);
        }
        env.trace(
          `${env.localNodeId} reroute ${g.topic}/${g.fromPartition} (${g.reason}) x${g.moves.length}`,
        );
      }
      this.#wal.append(input);
      this.onDurable();
    }

    const deleted: number[] = [];
    for (const m of p.plan.missingTopics) {
      let confirmed = false;
      try {
        confirmed = env.confirmTopicDeleted(m.topic, m.topicUid);
      } catch {
        failed = true;
      }
      if (confirmed) {
        deleted.push(...m.seqs);
        env.discarded(
          m.seqs.map((s) => this.#wal.get(s)!.payload.toString()),
          m.topic,
        );
        env.trace(`${env.localNodeId} discarded ${m.seqs.length} records of deleted topic ${m.topic}`);
      }
    }

    const doneRanges: SeqRange[] = [...p.absent, ...seqsToRanges([...committed, ...rerouted, ...deleted])];
    this.skip = skipAddRanges(this.skip, doneRanges);
    this.#windowRecords = p.plan.nextWindowRecords;
    const next = advanceCheckpoint(p.checkpoint, this.skip);
    this.#pass = undefined;
    if (next.checkpoint > p.checkpoint || (doneRanges.length > 0 && next.skip.length > 0)) {
      if (env.crashAt("commit-before-checkpoint")) return;
    }
    // dispatch/pass.ts: the whole done-set, before the checkpoint write.
    // dispatch/pass.ts saves in the background at most every 250 ms (doneSetSaveIntervalMs):
    // modelled as a save here only when the last one is that old.
    if (doneRanges.length > 0 && next.skip.length > 0 && env.now() - this.#wal.doneSetSavedAtMs >= 250) {
      this.#wal.doneSet = this.skip;
      this.#wal.doneSetSavedAtMs = env.now();
    }
    if (next.checkpoint > p.checkpoint) this.#wal.setCheckpoint(next.checkpoint);
    this.checkpoint = next.checkpoint;
    this.skip = next.skip;
    const before = this.#markedSeqs();
    pruneInDoubt(this.inDoubt, this.skip, this.checkpoint);
    const after = new Set(this.#markedSeqs());
    const forgotten = before.filter((s) => !after.has(s) && s >= this.checkpoint && !skipHas(this.skip, s));
    if (forgotten.length > 0) {
      env.trace(`${env.localNodeId} pruned in-doubt marks of undone seqs ${forgotten.join(",")}`);
      env.prunedDoubts(forgotten.map((s) => this.#wal.get(s)!.payload.toString()));
    }

    const done = committed.length + rerouted.length + deleted.length;
    if (failed) this.#sleep(this.#o.errorBackoffMs, false);
    else if (done > 0) this.#sleep(0, true);
    else if (p.records > 0) this.#sleep(this.#o.errorBackoffMs, true);
    else this.#sleep(this.#o.idlePollMs, true);
  }

  #sleep(ms: number, wakeOnDurable: boolean): void {
    this.#wakeAtMs = this.#env.now() + ms;
    this.#wakeOnDurable = wakeOnDurable;
  }
}
