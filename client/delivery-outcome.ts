// What one failed produce attempt says about whether its records were stored.
// Pure: the producer feeds it every attempt's error (the transport's retries
// through onRetry, and the last one) and keeps, per batch, whether any
// attempt may have stored it. Only answers that the broker sends before the
// WAL append count as "not stored"; anything else is in doubt.

import { NaradError } from "./errors.ts";

export type AttemptOutcome = "not_stored" | "unknown";

/**
 * 503/429 codes the broker answers before the WAL append (the broker's error-code table, api-errors.ts).
 * Not `commit_timeout` (the records are in the WAL and will still be
 * committed), nor `unavailable` or a 503 without a code (a proxy, a load
 * balancer, or a broker that died while it held the request).
 */
const refusedBeforeWal: ReadonlySet<string> = new Set([
  "rate_limited",
  "draining",
  "not_ready",
  "acks_all_unavailable",
  "registry_unavailable",
  "producer_registry_stale",
  "disk_full",
]);

export function attemptOutcome(err: unknown): AttemptOutcome {
  if (!(err instanceof NaradError)) return "unknown"; // an abort/timeout while the request was out
  // status 0: no answer came back (network, timeout); the broker may have done the work.
  if (err.status === 0) return "unknown";
  // Every 4xx but 429 is a refusal: validation, auth, fenced, out of order, a deleted topic.
  if (err.status >= 400 && err.status < 500 && err.status !== 429) return "not_stored";
  if (err.brokerCode !== undefined && refusedBeforeWal.has(err.brokerCode)) return "not_stored";
  return "unknown";
}

/**
 * The error a delivery is rejected with, flagged for this batch: `notStored`
 * or `inDoubt`. One error instance can reach several batches (a fence, a
 * failed identity load); when it already carries the other flag the batch
 * gets a copy of the same class.
 */
export function flagged(err: unknown, inDoubt: boolean): unknown {
  if (typeof err !== "object" || err === null) return err;
  const e = err as { inDoubt?: boolean; notStored?: boolean };
  const set = e.inDoubt === true || e.notStored === true;
  if (set && e.inDoubt === inDoubt) return err;
  const target = set
    ? (Object.create(Object.getPrototypeOf(err) as object, Object.getOwnPropertyDescriptors(err)) as typeof e)
    : e;
  target.inDoubt = inDoubt;
  target.notStored = !inDoubt;
  return target;
}
