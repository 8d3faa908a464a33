// What the commits of a pass mean (after commit-runner.ts settled them):
// which seqs are done, which batches are now in doubt, which lanes failed and
// why, and each lane's run of failed passes (toward a reroute). Counts and
// logs what happened on the way.

import { type DispatchPlan, nextFailures } from "../core/dispatch-plan.ts";
import type { LaneResult } from "./commit-runner.ts";
import type { InDoubtHolds } from "./in-doubt-holds.ts";
import type { DispatchStatus, FailedLaneReason } from "./status.ts";
import type { Destinations, DispatchLogger, DispatchMetricsSink } from "./types.ts";

export interface LaneOutcomes {
  /** Seqs the owners acknowledged. */
  seqs: number[];
  /** A lane's commit failed (an abort is not a failure). */
  failed: boolean;
  failedLanes: Map<string, FailedLaneReason>;
  /** Lane key → failed passes in a row, for the next plan. */
  failures: Map<string, number>;
}

export function laneOutcomes(
  plan: DispatchPlan,
  results: readonly LaneResult[],
  d: {
    /** Lane key → failed passes in a row before this pass. */
    failures: ReadonlyMap<string, number>;
    destinations: Pick<Destinations, "describeFailure">;
    doubts: InDoubtHolds;
    status: DispatchStatus;
    metrics: DispatchMetricsSink;
    logger: DispatchLogger;
  },
): LaneOutcomes {
  const seqs: number[] = [];
  let failed = false;
  const failedLanes = new Map<string, FailedLaneReason>();
  const attempted = new Map<string, boolean>();
  for (const r of results) {
    // A partition move's freeze is a hold, not a failing owner: it never counts toward a reroute.
    const f = r.failure;
    const failure = f?.outcome === "error" ? d.destinations.describeFailure(f.error) : undefined;
    const moving = failure?.moving === true;
    if (!moving) attempted.set(r.lane.key, r.ok);
    seqs.push(...r.committedSeqs);
    d.status.counters.committedRecords += r.appended;
    if (r.appended + r.duplicates > 0) d.metrics.committed(r.appended, r.duplicates);
    if (r.fenced > 0) d.metrics.fenced?.(r.fenced);
    // A refusal or no connection is an answer; a timeout, an abort or any other error leaves the batch in doubt.
    if (f !== undefined && failure?.applied !== "no")
      d.doubts.mark(r.lane.topic, r.lane.partition, f.seqs ?? []);
    if (r.failure === undefined || r.failure.outcome === "aborted") continue;
    failed = true;
    failedLanes.set(r.lane.key, moving ? "moving" : "commit-failing");
    if (moving) continue;
    d.status.error(r.failure.outcome === "timeout" ? "timeout" : "commit");
    d.logger.warn(
      {
        err: r.failure.error,
        outcome: r.failure.outcome,
        topic: r.lane.topic,
        partition: r.lane.partition,
        nodeId: r.lane.nodeId,
        failedPasses: (d.failures.get(r.lane.key) ?? 0) + 1,
      },
      "commit failed; records kept for the next pass",
    );
  }
  return { seqs, failed, failedLanes, failures: nextFailures(d.failures, plan.laneKeys, attempted) };
}
