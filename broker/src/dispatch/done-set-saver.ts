// Saves the dispatcher's done-set (done-set-store.ts) off the pass, at most
// once per interval: a save is three syncs and a rewrite of every range (one
// per done record when a held lane interleaves with healthy ones), which per
// pass cut the pass rate of a node with one held partition several-fold.
// What is not saved yet is only re-dispatched after a crash (duplicates at
// worst, never loss).

import type { SkipSet } from "../core/dispatch-plan.ts";
import type { DoneSetStore } from "./done-set-store.ts";

export interface DoneSetSaverDeps {
  store: DoneSetStore;
  intervalMs: number;
  /** Ranges saved at most (the rest is re-dispatched after a crash). */
  maxRanges: number;
  nowMs: () => number;
  /** The done seqs to save now (read at save time, not at request time). */
  snapshot: () => SkipSet;
  onError: (err: unknown) => void;
}

export interface DoneSetSaver {
  /** Something changed: save it soon (coalesced with other requests); nothing while stopped. */
  request(): void;
  /** Stops waiting out the interval and resolves once a save in progress ended. */
  stop(): Promise<void>;
  /** Takes requests again after stop(). */
  resume(): void;
}

export function createDoneSetSaver(d: DoneSetSaverDeps): DoneSetSaver {
  let dirty = false;
  let stopped = false;
  let saver: Promise<void> | undefined;
  let lastMs = Number.NEGATIVE_INFINITY;
  let wake: (() => void) | undefined;

  async function saveWhileDirty(): Promise<void> {
    while (dirty && !stopped) {
      const waitMs = lastMs + d.intervalMs - d.nowMs();
      if (waitMs > 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, waitMs);
          t.unref();
          wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        wake = undefined;
        if (stopped) return;
      }
      dirty = false;
      try {
        await d.store.save(d.snapshot().slice(0, d.maxRanges));
      } catch (err) {
        // Memory still knows; a crash now only re-dispatches them (duplicates at worst).
        d.onError(err);
      }
      lastMs = d.nowMs();
    }
  }

  return {
    request() {
      if (stopped) return;
      dirty = true;
      saver ??= saveWhileDirty().finally(() => {
        saver = undefined;
      });
    },
    async stop() {
      stopped = true;
      wake?.();
      await saver;
    },
    resume() {
      stopped = false;
    },
  };
}
