// Commits the lanes of one pass: at most `fanout` lanes at once; within a
// lane, batches go one after another in seq order and the lane stops at the
// first failure (the owner keeps only the highest seq per incarnation, so a
// later batch must never land before an earlier one: dispatch-plan.ts I2).
// Each batch gets a deadline; a timed-out commit is abandoned, not cancelled,
// and its records stay undone so a later pass re-sends them (the owner then
// drops whatever did land as duplicates).

import type { CommitBatch, CommitLane } from "../core/dispatch-plan.ts";
import type { CommitResult } from "../log/types.ts";
import type { BatchOutcome } from "./types.ts";

export interface LaneResult {
  lane: CommitLane;
  /** Seqs of the batches the owner acknowledged. */
  committedSeqs: number[];
  ok: boolean;
  appended: number;
  duplicates: number;
  /** Records the owner refused: fenced (producer epoch below the current one) or out of order. */
  fenced: number;
  /** The batch that failed: `seqs` were sent and may or may not have reached the owner's log. */
  failure?: { outcome: Exclude<BatchOutcome, "ok">; error?: unknown; seqs?: number[] };
}

export interface CommitLanesOptions {
  fanout: number;
  timeoutMs: number;
  nowMs: () => number;
  signal: AbortSignal;
  commit: (lane: CommitLane, batch: CommitBatch, deadlineMs: number) => Promise<CommitResult>;
  onBatch?: (lane: CommitLane, batch: CommitBatch, outcome: BatchOutcome, ms: number) => void;
}

type Settled<T> =
  | { kind: "ok"; value: T }
  | { kind: "error"; error: unknown }
  | { kind: "timeout" }
  | { kind: "aborted" };

/** Races a promise against a deadline and an abort signal; always clears its timer and listener. */
export function settleWithin<T>(p: Promise<T>, timeoutMs: number, signal: AbortSignal): Promise<Settled<T>> {
  if (signal.aborted) {
    p.catch(() => {}); // the abandoned promise must not surface as unhandled
    return Promise.resolve({ kind: "aborted" });
  }
  return new Promise((resolve) => {
    let finished = false;
    const finish = (s: Settled<T>): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      resolve(s);
    };
    const onAbort = (): void => finish({ kind: "aborted" });
    const timer = setTimeout(() => finish({ kind: "timeout" }), timeoutMs);
    signal.addEventListener("abort", onAbort);
    p.then(
      (value) => finish({ kind: "ok", value }),
      (error: unknown) => finish({ kind: "error", error }),
    );
  });
}

async function commitLane(lane: CommitLane, o: CommitLanesOptions): Promise<LaneResult> {
  const res: LaneResult = { lane, committedSeqs: [], ok: true, appended: 0, duplicates: 0, fenced: 0 };
  for (const batch of lane.batches) {
    if (o.signal.aborted) {
      res.ok = false;
      res.failure = { outcome: "aborted" };
      return res;
    }
    const started = o.nowMs();
    let call: Promise<CommitResult>;
    try {
      call = o.commit(lane, batch, started + o.timeoutMs);
    } catch (error) {
      call = Promise.reject(error);
    }
    const s = await settleWithin(call, o.timeoutMs, o.signal);
    const outcome: BatchOutcome = s.kind;
    let failure: LaneResult["failure"];
    if (s.kind === "ok") {
      // An owner that accounts for fewer records than sent has not said they
      // are durable: treat it as a failure rather than risk losing them.
      const fenced = (s.value.fenced ?? 0) + (s.value.outOfOrder ?? 0);
      if (s.value.appended + s.value.duplicates + fenced !== batch.records.length) {
        failure = {
          outcome: "error",
          error: new Error(
            `owner acknowledged ${s.value.appended}+${s.value.duplicates} of ${batch.records.length} records`,
          ),
        };
      } else {
        res.appended += s.value.appended;
        res.duplicates += s.value.duplicates;
        res.fenced += fenced;
        for (const r of batch.records) res.committedSeqs.push(r.seq);
      }
    } else if (s.kind === "error") {
      failure = { outcome: "error", error: s.error };
    } else {
      failure = { outcome: s.kind };
    }
    o.onBatch?.(lane, batch, failure === undefined ? outcome : failure.outcome, o.nowMs() - started);
    if (failure !== undefined) {
      res.ok = false;
      res.failure = { ...failure, seqs: batch.records.map((r) => r.seq) };
      return res;
    }
  }
  return res;
}

/** Runs every lane (fanout at a time) and reports each lane's outcome, in lane order. */
export async function commitLanes(
  lanes: readonly CommitLane[],
  o: CommitLanesOptions,
): Promise<LaneResult[]> {
  const results = new Array<LaneResult>(lanes.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < lanes.length) {
      const i = next++;
      results[i] = await commitLane(lanes[i]!, o);
    }
  };
  const workers = Math.max(1, Math.min(o.fanout, lanes.length));
  await Promise.all(Array.from({ length: workers }, worker));
  return results;
}
