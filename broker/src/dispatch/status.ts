// What the dispatcher tells the node about itself: the counters behind
// stats(), the lanes the last pass left undone, and the per-pass gauges and
// logs (held records, lag, stalled lanes). Every write of a counter or a
// gauge goes through here, so the pass code only says what happened.

import {
  type DispatchPlan,
  type SkipSet,
  type StalledLane,
  skipHas,
  stalledLanes,
} from "../core/dispatch-plan.ts";
import type { WalRecord } from "../core/records.ts";
import type {
  DispatchErrorKind,
  DispatcherStats,
  DispatchLogger,
  DispatchMetricsSink,
  StalledLaneStatus,
} from "./types.ts";

/** The counters of DispatcherStats the dispatcher keeps itself (the rest it reads when asked). */
export type DispatchCounters = Omit<DispatcherStats, "pendingRecords" | "checkpoint" | "skipSetRecords"> & {
  /** Records that needed parking but did not fit the parked store, since start. */
  parkRefusedRecords: number;
};

/** Why a committed lane made no progress this pass. */
export type FailedLaneReason = "commit-failing" | "moving";

export class DispatchStatus {
  readonly counters: DispatchCounters;
  #stalled: StalledLane[] = [];
  readonly #metrics: DispatchMetricsSink;
  readonly #logger: DispatchLogger;
  readonly #nowMs: () => number;
  readonly #parkedSize: () => number;

  constructor(d: {
    metrics: DispatchMetricsSink;
    logger: DispatchLogger;
    nowMs: () => number;
    /** Records in the parked store now (0 without one). */
    parkedSize: () => number;
  }) {
    this.#metrics = d.metrics;
    this.#logger = d.logger;
    this.#nowMs = d.nowMs;
    this.#parkedSize = d.parkedSize;
    this.counters = {
      passes: 0,
      committedRecords: 0,
      lastPassMs: 0,
      heldRecords: 0,
      reroutedRecords: 0,
      errors: 0,
      parkedRecords: d.parkedSize(),
      parkRefusedRecords: 0,
    };
  }

  error(kind: DispatchErrorKind): void {
    this.counters.errors++;
    this.#metrics.error(kind);
  }

  passDone(ms: number, records: number): void {
    this.counters.passes++;
    this.counters.lastPassMs = ms;
    this.#metrics.pass(ms / 1000, records);
  }

  /** The records this pass held, as a gauge and in the debug log. */
  held(plan: DispatchPlan): void {
    this.counters.heldRecords = 0;
    for (const h of plan.held) {
      this.counters.heldRecords += h.count;
      this.#logger.debug(
        { topic: h.topic, partition: h.partition, nodeId: h.nodeId, reason: h.reason, records: h.count },
        "holding records",
      );
    }
    this.#metrics.held(this.counters.heldRecords);
  }

  /** The age of the oldest record of the window the pass left undone (0 when caught up). */
  lag(records: readonly WalRecord[], done: SkipSet): void {
    let lagMs = 0;
    for (const r of records) {
      if (skipHas(done, r.seq)) continue;
      lagMs = Math.max(0, this.#nowMs() - r.createdMs);
      break;
    }
    this.#metrics.lagSeconds(lagMs / 1000);
  }

  /** The lanes this pass left undone (`records`: the pass's, in seq order). */
  stalled(
    plan: DispatchPlan,
    failedLanes: ReadonlyMap<string, FailedLaneReason>,
    records: readonly WalRecord[],
  ): void {
    this.#stalled = stalledLanes(plan, failedLanes, (seq) => createdMsOf(records, seq));
    const now = this.#nowMs();
    this.#metrics.stalled?.(
      this.#stalled.map((l) => ({ ...l, oldestAgeMs: Math.max(0, now - l.oldestCreatedMs) })),
      this.#parkedSize(),
    );
  }

  stalledLanes(): StalledLaneStatus[] {
    const now = this.#nowMs();
    return this.#stalled.map((l) => ({
      topic: l.topic,
      partition: l.partition,
      nodeId: l.nodeId,
      reason: l.reason,
      records: l.records,
      oldestAgeMs: Math.max(0, now - l.oldestCreatedMs),
    }));
  }
}

/** createdMs of the record with `seq` in seq-ordered `records` (binary search). */
function createdMsOf(records: readonly WalRecord[], seq: number): number | undefined {
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
}
