// Maps the dispatcher's metric callbacks onto the broker's prom-client metrics.

import type { BrokerMetrics } from "../metrics.ts";
import type { DispatchMetricsSink } from "./types.ts";

export function dispatchMetricsSink(m: BrokerMetrics): DispatchMetricsSink {
  return {
    pass() {},
    commitBatch(records, seconds, outcome) {
      m.dispatchBatchRecords.observe(records);
      m.dispatchCommitSeconds.observe(seconds);
      if (outcome !== "ok") m.dispatchErrors.inc();
    },
    committed(appended) {
      m.dispatchCommittedRecords.inc(appended);
    },
    fenced(records) {
      m.producerFencedRecords.inc(records);
    },
    rerouted(records, reason) {
      m.dispatchRerouted.inc({ reason }, records);
    },
    inDoubtExpired(records) {
      m.dispatchInDoubtExpired.inc(records);
    },
    discarded(records) {
      m.dispatchDiscarded.inc(records);
    },
    held(records) {
      m.dispatchHeld.set(records);
    },
    lagSeconds(seconds) {
      m.dispatchLagSeconds.set(seconds);
    },
    stalled(lanes, parkedRecords) {
      // Reset each pass: a lane that moved again must not keep its last value.
      m.dispatchStalledLaneRecords.reset();
      let oldestMs = 0;
      for (const l of lanes) {
        m.dispatchStalledLaneRecords.inc(
          { topic: l.topic, partition: String(l.partition), reason: l.reason },
          l.records,
        );
        if (l.oldestAgeMs > oldestMs) oldestMs = l.oldestAgeMs;
      }
      m.dispatchOldestStalledSeconds.set(oldestMs / 1000);
      m.dispatchParkedRecords.set(parkedRecords);
    },
    error(kind) {
      m.dispatchPassErrors.inc({ kind });
    },
  };
}
