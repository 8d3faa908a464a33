// Knobs of one simulated run: cluster shape, timings (scaled down from
// broker/src/constants.ts so that timeouts, freeze ttls and grace periods
// all happen within a few hundred steps, keeping their production ORDER:
// renew < ttl/3, commit timeout < in-doubt hold, and so on), fault rates, and
// one flag per fault family that reaches a known, not-yet-fixed bug.

import type { DispatcherOptions } from "../broker/src/dispatch/types.ts";

/**
 * Fault families that reach bugs known from the review of issue #13. Each
 * is off in the default budget until its fix lands; `--all` turns all on.
 */
export interface FaultFlags {
  /** Delete a topic and re-create one of the same name while WAL records of the old one are pending. */
  topicRecreate: boolean;
  /** Let a broker's metastore view lag past a move's freeze ttl (the moved-away source keeps committing). */
  longViewLag: boolean;
  /** Small dispatch windows that grow and shrink, so a lane can drop out of a pass while it has records in doubt. */
  shrinkingWindow: boolean;
  /**
   * The in-doubt prune (dispatch/in-doubt.ts pruneInDoubt forgets every lane
   * that had no records in a pass). On: duplicates of records whose doubt
   * was pruned while still undone are violations. Off: they are counted and
   * excused. Reached through shrinkingWindow, and also without it: a move
   * changes the lane key (owner id), so the old lane's doubts are pruned
   * although the data, in doubt, moved with the partition (F3).
   */
  inDoubtPrune: boolean;
  /** Maintenance (a held owner) lasting longer than the stall bound, with a small lookahead. */
  longMaintenance: boolean;
  /**
   * Found by this sim (F1): the skip-set is memory. A node that crashes while
   * done seqs sit above its checkpoint (a held partition pins it) redoes them
   * after the restart: a rerouted one is rerouted again (a second copy under
   * another new seq), a committed one whose owner is Down by then is
   * rerouted to a sibling. Both copies are stored; no dedup sees them. Off:
   * such duplicates are counted and excused; on: they are violations.
   */
  skipSetCrash: boolean;
  /**
   * Found by this sim (F2): the source of a move restarts after the owner
   * swap but before the destination installed; its resume() re-freezes the
   * moved-away copy under token "", which refused the destination's freeze
   * (fixed: a moved-away freeze accepts any move's token).
   * Off: the sim does not restart a swapped move's source.
   */
  sourceRestartAfterSwap: boolean;
}

/** The default budget: every fault family whose bug is fixed (so a failure is a new bug); off only what is still open. */
export const fixedFamilyFlags: FaultFlags = {
  topicRecreate: true, // topic identity: records carry the uid, the sim models resolve/commit/confirm by uid
  longViewLag: true, // the handoff freeze at install is permanent (sim/moves models it)
  shrinkingWindow: true, // the prune fix is in (dispatch/in-doubt.ts)
  inDoubtPrune: true, // and doubts are keyed by partition, so a move keeps them (F3)
  longMaintenance: true, // passes 200 seeds; the sim does not model parking (the real fix of the stall)
  skipSetCrash: false, // F1 is not fixed (the skip-set is memory), although 200 seeds do not reach a duplicate
  sourceRestartAfterSwap: true, // F2: a moved-away freeze accepts any move's token (source.ts, modelled)
};

export const allFlags: FaultFlags = {
  topicRecreate: true,
  longViewLag: true,
  shrinkingWindow: true,
  inDoubtPrune: true,
  longMaintenance: true,
  skipSetCrash: true,
  sourceRestartAfterSwap: true,
};

export interface Timing {
  /** Simulated ms the clock moves per step: uniform in [0, maxTickMs]. */
  maxTickMs: number;
  /** One-way RPC latency range (ms). */
  rpcMinMs: number;
  rpcMaxMs: number;
  freezeTtlMs: number;
  renewIntervalMs: number;
  moveRetryMs: number;
  sourceDeleteDelayMs: number;
  downGraceMs: number;
  /** Bounded view lag when `longViewLag` is off: every view gets each change within this. */
  viewLagBoundMs: number;
}

export interface SimConfig {
  seed: number;
  steps: number;
  brokers: number;
  flags: FaultFlags;
  timing: Timing;
  dispatcher: DispatcherOptions;
  /** Probability that a step is a fault rather than normal work. */
  faultRate: number;
  /** Steps a healthy partition may go without any dispatch progress before it counts as stalled. */
  stallSteps: number;
  /** Steps allowed after the faults stop for every WAL to drain and every move to finish. */
  quiesceSteps: number;
  /** How many trace lines a failure prints. */
  traceTail: number;
}

export function dispatcherOptions(flags: FaultFlags): DispatcherOptions {
  const small = flags.shrinkingWindow || flags.longMaintenance;
  return {
    idlePollMs: 10,
    // Small windows make passes partial (the shape production has under load);
    // large ones read every pending record of the sim in one pass.
    windowRecords: small ? 4 : 4096,
    windowCapRecords: small ? 32 : 65_536,
    targetPerPartition: small ? 2 : 64,
    lookaheadWindows: flags.longMaintenance ? 2 : 16,
    rerouteAfterPasses: 3,
    commitTimeoutMs: 600,
    errorBackoffMs: 100,
    commitFanout: 16,
    // Small enough that a lane splits into several batches.
    maxBatchBytes: 400,
    inDoubtHoldMs: 120_000,
  };
}

export function defaultConfig(seed: number, steps: number, flags: FaultFlags = fixedFamilyFlags): SimConfig {
  return {
    seed,
    steps,
    brokers: 3,
    flags,
    timing: {
      maxTickMs: 30,
      rpcMinMs: 5,
      rpcMaxMs: 60,
      freezeTtlMs: 2_400,
      renewIntervalMs: 600,
      moveRetryMs: 200,
      sourceDeleteDelayMs: 800,
      downGraceMs: 500,
      viewLagBoundMs: 400,
    },
    dispatcher: dispatcherOptions(flags),
    faultRate: 0.12,
    stallSteps: 400,
    quiesceSteps: 4_000,
    traceTail: 40,
  };
}
