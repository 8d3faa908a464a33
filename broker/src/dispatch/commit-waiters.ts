// acks=all: produce requests wait here for their WAL seqs to be committed at
// the partition owner. The dispatcher's Destinations are wrapped
// (withCommitWaiters): every commit answer that carries per-record outcomes
// (CommitResult.outcomes) settles the waiters of those seqs, whichever pass,
// retry or late answer it comes from. Nothing here changes what the
// dispatcher does: a request that stops waiting (timeout, hang-up) leaves its
// records in the WAL, committed as usual.

import { Counter, type Registry } from "prom-client";
import type { CommitResult } from "../log/types.ts";
import type { Destinations } from "./types.ts";

/** One record's outcome at its owner: an offset, or a CommitResult outcome code (negative). */
export type CommitOutcome = number;

interface Waiter {
  resolve(outcome: CommitOutcome): void;
}

export class CommitWaiters {
  readonly #waiting = new Map<number, Waiter>();
  /** Outcomes of seqs committed while acks=all requests were in progress (a commit may beat the registration). */
  readonly #recent = new Map<number, CommitOutcome>();
  readonly #maxRecent: number;
  #armed = 0;

  constructor(maxRecent = 65_536) {
    this.#maxRecent = maxRecent;
  }

  /** Call before the WAL append of an acks=all request; release with the returned function. */
  arm(): () => void {
    this.#armed++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#armed--;
      if (this.#armed === 0) this.#recent.clear();
    };
  }

  get waiting(): number {
    return this.#waiting.size;
  }

  /** Settles the waiter of `seq` (or remembers the outcome while armed). */
  notify(seq: number, outcome: CommitOutcome): void {
    const w = this.#waiting.get(seq);
    if (w !== undefined) {
      this.#waiting.delete(seq);
      w.resolve(outcome);
      return;
    }
    if (this.#armed === 0) return;
    this.#recent.set(seq, outcome);
    if (this.#recent.size > this.#maxRecent) {
      const first = this.#recent.keys().next().value;
      if (first !== undefined) this.#recent.delete(first);
    }
  }

  /**
   * Outcomes of seqs [first, last], or undefined for those not settled within
   * timeoutMs or before `signal` aborts (the client hung up: its admission
   * share is back, so its records must not stay referenced here for the
   * rest of the timeout).
   */
  async wait(
    first: number,
    last: number,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Array<CommitOutcome | undefined>> {
    const out = new Array<CommitOutcome | undefined>(last - first + 1);
    const pending: Array<Promise<void>> = [];
    const registered: number[] = [];
    for (let seq = first; seq <= last; seq++) {
      const known = this.#recent.get(seq);
      if (known !== undefined) {
        out[seq - first] = known;
        this.#recent.delete(seq);
        continue;
      }
      registered.push(seq);
      pending.push(
        new Promise<void>((resolve) => {
          this.#waiting.set(seq, {
            resolve: (o) => {
              out[seq - first] = o;
              resolve();
            },
          });
        }),
      );
    }
    if (pending.length === 0) return out;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    await Promise.race([
      Promise.all(pending),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
        onAbort = resolve;
        if (signal?.aborted) resolve();
        else signal?.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
    for (const seq of registered) this.#waiting.delete(seq);
    return out;
  }
}

/** Counts, per record the owner did not append, why (from the commit outcomes this node's dispatcher got). */
export interface CommitOutcomeSink {
  notAppended(reason: "duplicate" | "fenced" | "out_of_order", records: number): void;
}

/** narad_commit_not_appended_records_total{reason}: every record an owner answered without appending it. */
export function commitOutcomeMetrics(registry: Registry): CommitOutcomeSink {
  const c = new Counter({
    name: "narad_commit_not_appended_records_total",
    help: "Records this node dispatched that their owner did not append: duplicate (answered with the original offset), fenced or out_of_order (refused)",
    labelNames: ["reason"],
    registers: [registry],
  });
  return { notAppended: (reason, n) => c.inc({ reason }, n) };
}

/** Destinations whose commit answers also settle `waiters` (and count what was not appended). */
export function withCommitWaiters(
  d: Destinations,
  waiters: CommitWaiters,
  sink?: CommitOutcomeSink,
): Destinations {
  return {
    ...d,
    localNodeId: d.localNodeId,
    resolve: (t, p, uid) => d.resolve(t, p, uid),
    partitionCount: (t) => d.partitionCount(t),
    confirmTopicDeleted: (t, uid) => d.confirmTopicDeleted(t, uid),
    describeFailure: (err) => d.describeFailure(err),
    async commit(nodeId, topic, partition, records, deadlineMs) {
      const result: CommitResult = await d.commit(nodeId, topic, partition, records, deadlineMs);
      const outcomes = result.outcomes;
      if (outcomes !== undefined && outcomes.length === records.length) {
        for (let i = 0; i < records.length; i++) waiters.notify(records[i]!.seq, outcomes[i]!);
      }
      if (sink !== undefined) {
        const fenced = result.fenced ?? 0;
        const outOfOrder = result.outOfOrder ?? 0;
        if (result.duplicates > 0) sink.notAppended("duplicate", result.duplicates);
        if (fenced > 0) sink.notAppended("fenced", fenced);
        if (outOfOrder > 0) sink.notAppended("out_of_order", outOfOrder);
      }
      return result;
    },
  };
}
