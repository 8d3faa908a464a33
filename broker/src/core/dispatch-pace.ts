// What the dispatcher loop does after a pass (pure): run the next pass at
// once, sleep until new records come, or back off. dispatch/dispatcher.ts
// runs the loop; this is its one decision.

/** What one pass did (dispatch/pass.ts). */
export interface PassOutcome {
  /** Undone WAL records the pass read. */
  records: number;
  /** Seqs that became done (committed, rerouted, discarded, parked). */
  done: number;
  /** A commit, reroute or deletion check failed. */
  failed: boolean;
}

/**
 * "now": run again at once; "idle": sleep until new records are durable (or
 * the idle poll); "stuck": records are held, so retry after the backoff or
 * sooner when new records come; "backoff": sleep the backoff whatever comes.
 */
export type Pace = "now" | "idle" | "stuck" | "backoff";

export function paceAfter(out: PassOutcome): Pace {
  // A failing lane alone backs off; with parking, other lanes still moved
  // in this pass, and backing off would throttle them to one pass per backoff.
  if (out.failed && out.done === 0) return "backoff";
  if (out.done > 0) return "now"; // maybe more; an empty follow-up pass is cheap
  if (out.records > 0) return "stuck"; // held or unconfirmed: retry later, sooner if new records come
  return "idle";
}
