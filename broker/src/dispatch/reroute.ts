// A pass's reroutes (dispatch-plan.ts I2, I4): the records planned for a
// sibling partition are appended to this WAL again under new seqs, aimed at
// the sibling, and only once that append is durable do their old seqs count
// as done (a crash in between leaves both copies, never neither).

import type { DispatchPlan } from "../core/dispatch-plan.ts";
import type { WalRecordInput } from "../core/records.ts";
import type { IngressWal } from "../wal/types.ts";
import type { DispatchStatus } from "./status.ts";
import type { DispatchLogger, DispatchMetricsSink } from "./types.ts";

/** The WAL copies of a plan's reroutes, and the old seqs they replace. */
export function rerouteCopies(plan: DispatchPlan): { input: WalRecordInput[]; oldSeqs: number[] } {
  const input: WalRecordInput[] = [];
  const oldSeqs: number[] = [];
  for (const g of plan.reroutes) {
    for (const m of g.moves) {
      const r = m.record;
      // No producer stamp: producer seqs are per partition, so a stamp moved
      // to another partition could collide with that partition's own seqs
      // and drop a record as a false duplicate. Rerouted records are plain.
      input.push({
        topic: r.topic,
        key: r.key,
        partition: m.toPartition,
        createdMs: r.createdMs,
        payload: r.payload,
        topicUid: g.topicUid,
      });
      oldSeqs.push(r.seq);
    }
  }
  return { input, oldSeqs };
}

/** Re-appends the plan's rerouted records; resolves the old seqs now done ([] on failure: kept for the next pass). */
export async function appendReroutes(
  plan: DispatchPlan,
  d: {
    wal: IngressWal;
    aborted: boolean;
    status: DispatchStatus;
    metrics: DispatchMetricsSink;
    logger: DispatchLogger;
  },
): Promise<number[]> {
  if (plan.reroutes.length === 0 || d.aborted) return [];
  const { input, oldSeqs } = rerouteCopies(plan);
  try {
    const { firstSeq, lastSeq } = await d.wal.append(input);
    for (const g of plan.reroutes) {
      d.status.counters.reroutedRecords += g.moves.length;
      d.metrics.rerouted(g.moves.length, g.reason);
      d.logger.warn(
        {
          topic: g.topic,
          partition: g.fromPartition,
          nodeId: g.nodeId,
          reason: g.reason,
          records: g.moves.length,
          toPartitions: [...new Set(g.moves.map((m) => m.toPartition))],
        },
        "rerouted records to sibling partitions",
      );
    }
    d.logger.debug({ firstSeq, lastSeq }, "reroute copies appended to the WAL");
    return oldSeqs;
  } catch (err) {
    d.status.error("reroute");
    d.logger.error({ err, records: input.length }, "reroute append failed; records kept for the next pass");
    return [];
  }
}
