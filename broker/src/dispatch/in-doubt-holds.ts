// This node's in-doubt holds (dispatch-plan.ts I4): one set of marks, read
// with the dispatcher's clock and hold by the rules of in-doubt.ts, and the
// report of the one event that may store a record twice (a reroute after a
// hold ran out). Memory only: a restart forgets them.

import type { DispatchPlan, SkipSet } from "../core/dispatch-plan.ts";
import { doubtsOf, type InDoubtMarks, isInDoubt, markInDoubt, pruneInDoubt } from "./in-doubt.ts";
import type { DispatchLogger, DispatchMetricsSink } from "./types.ts";

export class InDoubtHolds {
  /** doubtKey(topic, partition) → seq → when its commit there first failed without an answer. */
  readonly #marks: InDoubtMarks = new Map();
  readonly #nowMs: () => number;
  readonly #holdMs: number;
  readonly #isParked: (seq: number) => boolean;
  readonly #metrics: DispatchMetricsSink;
  readonly #logger: DispatchLogger;

  constructor(d: {
    nowMs: () => number;
    /** How long a seq stays held (options.inDoubtHoldMs; unset: until its owner answers). */
    holdMs: number;
    /** Parked seqs sit below the checkpoint without being done: their marks stay. */
    isParked: (seq: number) => boolean;
    metrics: DispatchMetricsSink;
    logger: DispatchLogger;
  }) {
    this.#nowMs = d.nowMs;
    this.#holdMs = d.holdMs;
    this.#isParked = d.isParked;
    this.#metrics = d.metrics;
    this.#logger = d.logger;
  }

  /** These seqs' commit on the partition failed without an answer. */
  mark(topic: string, partition: number, seqs: readonly number[]): void {
    markInDoubt(this.#marks, topic, partition, seqs, this.#nowMs());
  }

  /** Whether the seq is still held for its owner (planDispatch's inDoubt). */
  readonly held = (topic: string, partition: number, seq: number): boolean =>
    isInDoubt(this.#marks, topic, partition, seq, this.#nowMs(), this.#holdMs);

  /** After a pass: forgets done seqs only (in-doubt.ts); parked seqs stay marked. */
  prune(done: SkipSet, checkpoint: number): void {
    pruneInDoubt(this.#marks, done, checkpoint, this.#isParked);
  }

  /** Reroutes of records whose hold ran out: the one place a record may now be stored twice. */
  reportExpired(plan: DispatchPlan): void {
    for (const g of plan.reroutes) {
      const m = doubtsOf(this.#marks, g.topic, g.fromPartition);
      if (m === undefined) continue;
      const expired = g.moves.filter((mv) => m.has(mv.record.seq)).length;
      if (expired === 0) continue;
      this.#metrics.inDoubtExpired?.(expired);
      this.#logger.warn(
        {
          topic: g.topic,
          partition: g.fromPartition,
          nodeId: g.nodeId,
          records: expired,
          holdMs: this.#holdMs,
        },
        "in-doubt records rerouted after their hold expired; the owner may also have stored them",
      );
    }
  }
}
