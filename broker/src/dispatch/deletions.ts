// A pass's records of topics the node does not know: discarded only when
// Destinations.confirmTopicDeleted says the topic (that incarnation) is
// authoritatively gone; otherwise kept for the next pass (dispatch-plan.ts I5).

import type { DispatchPlan } from "../core/dispatch-plan.ts";
import type { DispatchStatus } from "./status.ts";
import type { Destinations, DispatchLogger, DispatchMetricsSink } from "./types.ts";

/** Asks for each missing topic's deletion; resolves the seqs that may be discarded. */
export async function confirmDeletions(
  plan: DispatchPlan,
  d: {
    destinations: Pick<Destinations, "confirmTopicDeleted">;
    /** Read before each topic: a stop ends the checks. */
    aborted: () => boolean;
    status: DispatchStatus;
    metrics: DispatchMetricsSink;
    logger: DispatchLogger;
  },
): Promise<{ seqs: number[]; failed: boolean }> {
  const seqs: number[] = [];
  let failed = false;
  for (const m of plan.missingTopics) {
    if (d.aborted()) break;
    let confirmed = false;
    try {
      confirmed = await d.destinations.confirmTopicDeleted(m.topic, m.topicUid);
    } catch (err) {
      failed = true;
      d.status.error("confirm");
      d.logger.warn(
        { err, topic: m.topic, records: m.seqs.length },
        "topic deletion check failed; records kept",
      );
    }
    if (confirmed) {
      seqs.push(...m.seqs);
      d.metrics.discarded(m.seqs.length);
      d.logger.warn({ topic: m.topic, records: m.seqs.length }, "discarded records of a deleted topic");
    } else if (!failed) {
      d.logger.info(
        { topic: m.topic, records: m.seqs.length },
        "topic missing but deletion not confirmed; records kept",
      );
    }
  }
  return { seqs, failed };
}
