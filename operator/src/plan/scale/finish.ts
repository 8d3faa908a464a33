// The last step of every scale decision: the Degraded/stuck summary and the
// status.scale to write.

import type { ScaleStatus } from "../../../../packages/api/src/v1alpha1/types.ts";
import { inBackoff, stalledForMs } from "../move-stall.ts";
import { moveKey, type ScaleInput, type ScalePlan } from "./model.ts";

/** Every step ends here: the stuck summary (Degraded MoveStuck) and the status.scale to write. */
export function finish(plan: ScalePlan, input: ScaleInput): ScalePlan {
  const n = plan.next;
  if (n !== undefined) {
    // A retry entry lives while its backoff runs or its partition moves
    // again; after that a new abort starts the backoff afresh.
    const moving = new Set((n.moves ?? []).map(moveKey));
    const retries = (n.moveRetries ?? []).filter((r) => inBackoff(r, input.nowMs) || moving.has(moveKey(r)));
    if (retries.length > 0) n.moveRetries = retries;
    else delete n.moveRetries;
  }
  plan.stuck = stuckMessage(n, input);
  if (
    n !== undefined &&
    n.decommissioning === undefined &&
    (n.moves ?? []).length === 0 &&
    n.rebalanceHandled === undefined &&
    n.moveRetries === undefined &&
    (n.movesDone ?? 0) === 0
  )
    plan.next = undefined;
  else if (n !== undefined && (n.moves ?? []).length === 0) delete n.moves;
  return plan;
}

/** The Degraded (MoveStuck) message: stalled aborts, moves stuck past their swap, partitions in backoff. */
function stuckMessage(n: ScaleStatus | undefined, input: ScaleInput): string | undefined {
  const parts: string[] = [];
  for (const m of n?.moves ?? []) {
    if (m.aborting?.stalled === true)
      parts.push(
        `move of ${moveKey(m)} from ${m.from} to ${m.to} aborted (${m.aborting.reason}); ${m.to} has not confirmed the cancel after ${m.aborting.attempts} attempt(s)${m.aborting.lastError ? ` (${m.aborting.lastError})` : ""}`,
      );
    else if (m.stuckSince !== undefined)
      parts.push(
        `partition ${moveKey(m)} was handed to ${m.to} (owner swapped) but ${m.to} has not installed it for ${Math.round(stalledForMs(m, input.nowMs) / 1000)}s: a move past its swap is never aborted; ${m.from} keeps its copy until ${m.to} installs it`,
      );
  }
  for (const r of n?.moveRetries ?? [])
    if (inBackoff(r, input.nowMs))
      parts.push(
        `move of ${moveKey(r)} aborted ${r.attempts} time(s) (last: ${r.reason}); moved again after ${r.notBefore}`,
      );
  return parts.length === 0 ? undefined : parts.join("; ");
}
