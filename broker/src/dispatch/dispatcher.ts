// The dispatcher (ARCHITECTURE.md §3, §5) moves acknowledged records from the
// ingress WAL to their partitions' owners. This module composes it and runs
// its loop, one pass at a time; the parts, one job each:
//   pass.ts            one pass, in order, and the invariants it keeps
//   lane-outcomes.ts   what a pass's commits mean (done, in doubt, failing)
//   reroute.ts         copies for sibling partitions, appended to the WAL
//   deletions.ts       records of topics whose deletion must be confirmed
//   parking.ts         stalled lanes off the WAL (parked-store.ts)
//   in-doubt-holds.ts  seqs held for their owner (dispatch-plan.ts I4)
//   status.ts          counters, stalled lanes, per-pass gauges and logs
//   loop-waits.ts      the sleep between passes, drain() waiters
// and the pure decisions in core/dispatch-plan.ts (what goes where) and
// core/dispatch-pace.ts (what the loop does after a pass).

import { type Pace, paceAfter } from "../core/dispatch-pace.ts";
import { skipSize, skipWithout } from "../core/dispatch-plan.ts";
import type { IngressWal } from "../wal/types.ts";
import { createDoneSetSaver } from "./done-set-saver.ts";
import type { DoneSetStore } from "./done-set-store.ts";
import { InDoubtHolds } from "./in-doubt-holds.ts";
import { DrainWaiters, LoopSleep } from "./loop-waits.ts";
import type { ParkedStore } from "./parked-store.ts";
import { PassError, type PassState, runPass } from "./pass.ts";
import { DispatchStatus } from "./status.ts";
import {
  type Destinations,
  type Dispatcher,
  type DispatcherOptions,
  type DispatcherStats,
  type DispatchLogger,
  type DispatchMetricsSink,
  noopDispatchMetrics,
  type StalledLaneStatus,
} from "./types.ts";

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

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { wal, options: o, logger, nowMs, parked } = deps;
  const metrics = deps.metrics ?? noopDispatchMetrics;
  const status = new DispatchStatus({ metrics, logger, nowMs, parkedSize: () => parked?.size ?? 0 });
  const state: PassState = {
    checkpoint: wal.stats().checkpoint,
    // The done seqs above the checkpoint the process before saved: skipped, not re-sent.
    skip: deps.doneSet?.initial ?? [],
    windowRecords: o.windowRecords,
    failures: new Map(),
  };
  /** Records still to dispatch: parked ones are off the WAL's books but not done. */
  const pending = (): number => wal.stats().pendingRecords + (parked?.size ?? 0);

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
          snapshot: () => skipWithout(state.skip, parked?.records() ?? []),
          onError: (err) => {
            status.error("done-set");
            logger.warn({ err }, "could not save the dispatch done-set");
          },
        });

  let running = false;
  let loopDone: Promise<void> = Promise.resolve();
  let abort = new AbortController();
  let listening = false;
  const naps = new LoopSleep();
  const drains = new DrainWaiters(pending);

  const passDeps = {
    wal,
    destinations: deps.destinations,
    incarnation: deps.incarnation,
    options: o,
    // A pass holds at most this many record bytes: what fanout lanes of full
    // batches can carry, so memory follows the commit capacity.
    maxPassBytes: o.maxPassBytes ?? o.maxBatchBytes * o.commitFanout,
    logger,
    metrics,
    nowMs,
    signal: () => abort.signal,
    status,
    doubts: new InDoubtHolds({
      nowMs,
      holdMs: o.inDoubtHoldMs ?? Number.POSITIVE_INFINITY,
      isParked: (s) => parked?.has(s) === true,
      metrics,
      logger,
    }),
    parked,
    doneSetSaver,
  };

  async function loop(): Promise<void> {
    while (running) {
      let next: Pace = "idle";
      if (wal.stats().nextSeq > state.checkpoint || (parked?.size ?? 0) > 0) {
        naps.passStarting();
        const started = nowMs();
        try {
          const out = await runPass(state, passDeps);
          status.passDone(nowMs() - started, out.records);
          next = paceAfter(out);
        } catch (err) {
          const kind = err instanceof PassError ? err.kind : "plan";
          status.error(kind);
          logger.error({ err, kind, checkpoint: state.checkpoint }, "dispatch pass failed; backing off");
          next = "backoff";
        }
      }
      drains.settle();
      if (!running) break;
      if (next === "now") await new Promise<void>((resolve) => setImmediate(resolve));
      else if (next === "idle") await naps.sleep(o.idlePollMs, true);
      else if (next === "stuck") await naps.sleep(o.errorBackoffMs, true);
      else await naps.sleep(o.errorBackoffMs, false);
    }
  }

  return {
    start() {
      if (running) return;
      if (!listening) {
        // The WAL has no unsubscribe; the listener is cheap and inert when stopped.
        wal.onDurable(naps.onDurable);
        listening = true;
      }
      running = true;
      doneSetSaver?.resume();
      abort = new AbortController();
      state.checkpoint = Math.max(state.checkpoint, wal.stats().checkpoint);
      loopDone = loop();
    },

    async stop() {
      if (!running) return;
      running = false;
      abort.abort();
      naps.wake();
      const saverStopped = doneSetSaver?.stop();
      await loopDone;
      await saverStopped;
      drains.stop();
    },

    drain(timeoutMs) {
      if (pending() === 0) return Promise.resolve(true);
      const drained = drains.wait(timeoutMs);
      naps.wakeIfWaitingForRecords();
      return drained;
    },

    stats(): DispatcherStats {
      return {
        ...status.counters,
        pendingRecords: pending(),
        checkpoint: state.checkpoint,
        skipSetRecords: skipSize(state.skip),
        parkedRecords: parked?.size ?? 0,
      };
    },

    stalledLanes(): StalledLaneStatus[] {
      return status.stalledLanes();
    },
  };
}
