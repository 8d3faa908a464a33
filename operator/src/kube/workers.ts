import type { WorkQueue } from "./work-queue.ts";

/** What a reconcile asks of the queue when it returns normally. */
export interface ReconcileResult {
  /** Reconcile this key again after the delay (waiting on something external). */
  requeueAfterMs?: number;
}

export type ReconcileFn = (key: string, signal: AbortSignal) => Promise<ReconcileResult>;

export interface WorkerHooks {
  /** Called after each attempt; error is set when the reconcile threw. */
  onResult?: (key: string, durationMs: number, error: unknown, retryInMs: number | undefined) => void;
  now?: () => number;
}

/**
 * Runs `workers` loops that take keys from the queue, one in flight per key
 * (the queue guarantees it). A throw backs the key off exponentially; a
 * normal return resets its backoff and honours requeueAfterMs. Resolves when
 * the queue is shut down and every loop has finished its current key.
 */
export async function runWorkers(
  queue: WorkQueue,
  workers: number,
  reconcile: ReconcileFn,
  signal: AbortSignal,
  hooks: WorkerHooks = {},
): Promise<void> {
  const now = hooks.now ?? (() => performance.now());
  const loop = async (): Promise<void> => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      const started = now();
      try {
        const result = await reconcile(key, signal);
        queue.forget(key);
        if (result.requeueAfterMs !== undefined && !signal.aborted)
          queue.addAfter(key, result.requeueAfterMs);
        hooks.onResult?.(key, now() - started, undefined, result.requeueAfterMs);
      } catch (err) {
        const retry = signal.aborted ? undefined : queue.addRateLimited(key);
        hooks.onResult?.(key, now() - started, err, retry);
      } finally {
        queue.done(key);
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, loop));
}
