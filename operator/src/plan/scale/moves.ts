// Partition moves in flight (status.scale.moves): advance each by what its
// destination answered, swap owners when ready, abort stalled ones, retry.

import type { MoveRetry, PartitionMoveStatus } from "../../../../packages/api/src/v1alpha1/types.ts";
import { cancelConfirmed, nextRetry, stalledForMs, stallReason, trackProgress } from "../move-stall.ts";
import { moveKey, type ScaleInput, type ScalePlan } from "./model.ts";

/**
 * Moves in flight: finished ones leave status, ready ones are swapped,
 * unknown ones (never started, or the destination restarted) are started,
 * failed ones are cancelled and planned again.
 */
export function advanceMoves(plan: ScalePlan, input: ScaleInput): void {
  const kept: PartitionMoveStatus[] = [];
  let done = plan.next?.movesDone ?? 0;
  let retries: MoveRetry[] = [...(plan.next?.moveRetries ?? [])];
  const sameKey = (a: { topic: string; partition: number }, b: { topic: string; partition: number }) =>
    a.topic === b.topic && a.partition === b.partition;
  const dropRetry = (m: PartitionMoveStatus) => {
    retries = retries.filter((r) => !sameKey(r, m));
  };
  const nowIso = new Date(input.nowMs).toISOString();
  for (const prev of plan.next?.moves ?? []) {
    const topic = input.topics.find((t) => t.name === prev.topic);
    const owner = topic?.assignments.find((a) => a.partition === prev.partition)?.owner;
    const probe = input.moveProbes.get(moveKey(prev));
    if (topic === undefined || (owner !== prev.from && owner !== prev.to)) {
      // The topic (or partition) is gone, or someone else reassigned it.
      plan.cancel.push(prev);
      dropRetry(prev);
      plan.events.push({
        type: "Warning",
        reason: "MoveAbandoned",
        message: `move of ${moveKey(prev)} from ${prev.from} to ${prev.to} abandoned: ${topic === undefined ? "topic gone" : `owner is now ${owner ?? "(none)"}`}`,
      });
      continue;
    }
    const m = trackProgress(prev, probe, input.nowMs);
    if (m.aborting !== undefined) {
      if (owner === m.to) {
        // Swapped after all (an earlier term's swap the abort's live read
        // missed, or a hand edit): the destination owns it and must install.
        const { aborting: _, ...rest } = m;
        kept.push(rest);
        plan.events.push({
          type: "Warning",
          reason: "MoveAbortDropped",
          message: `abort of the move of ${moveKey(m)} dropped: ${m.to} owns the partition now, so the move must finish`,
        });
        continue;
      }
      if (cancelConfirmed(probe)) {
        // Over on the destination: the source's freeze is gone with it.
        let next = "";
        if (m.aborting.stalled) {
          const r = nextRetry(
            retries.find((x) => sameKey(x, m)),
            m,
            m.aborting.reason,
            input.nowMs,
            input.timing,
          );
          dropRetry(m);
          retries.push(r);
          next = `; the partition is moved again after ${r.notBefore} (abort ${r.attempts})`;
        }
        plan.events.push({
          type: m.aborting.stalled ? "Warning" : "Normal",
          reason: "MoveCancelled",
          message: `move of ${moveKey(m)} from ${m.from} to ${m.to} cancelled on ${m.to} (${m.aborting.reason})${next}`,
        });
        continue;
      }
      // Not confirmed: cancel again (a cancel that failed, or a destination
      // that was away and resumed the move from its marker).
      const why =
        probe === undefined
          ? "not asked"
          : probe.kind === "unreachable"
            ? probe.error
            : probe.kind === "state"
              ? `still ${probe.state}`
              : "unknown";
      const again = { ...m, aborting: { ...m.aborting, attempts: m.aborting.attempts + 1, lastError: why } };
      plan.cancel.push(again);
      kept.push(again);
      continue;
    }
    const stalled = stalledForMs(m, input.nowMs) >= input.timing.stallMs;
    if (owner === m.to) {
      // Swapped: finished once the destination has installed it.
      const installing =
        probe?.kind === "unreachable" ||
        (probe?.kind === "state" && (probe.state === "copying" || probe.state === "ready"));
      if (installing) {
        const state = probe?.kind === "state" ? probe.state : m.state;
        if (!stalled) {
          kept.push({ ...m, state });
          continue;
        }
        // Never aborted: the destination owns the partition. Reported once.
        if (m.stuckSince === undefined)
          plan.events.push({
            type: "Warning",
            reason: "MoveStuck",
            message: `partition ${moveKey(m)} was handed to ${m.to} but ${stallReason(m, probe, input.nowMs)}; a move past its owner swap is not aborted: ${m.from} keeps its copy until ${m.to} installs it`,
          });
        kept.push({ ...m, state, stuckSince: m.stuckSince ?? nowIso });
        continue;
      }
      done++;
      dropRetry(m);
      const how =
        probe?.kind === "state" && probe.state === "done"
          ? ""
          : ` (destination reports ${probe?.kind === "state" ? probe.state : "no such move"} after the swap)`;
      plan.events.push({
        type: how === "" ? "Normal" : "Warning",
        reason: "PartitionMoved",
        message: `partition ${moveKey(m)} moved from ${m.from} to ${m.to}${how}`,
      });
      continue;
    }
    // Still owned by the source (in the cache).
    if (stalled) {
      const live = input.liveOwners;
      if (live?.has(moveKey(m)) === true) {
        const liveOwner = live.get(moveKey(m));
        if (liveOwner === m.from) {
          const reason = `${stallReason(m, probe, input.nowMs)}; spec.moves.stallTimeoutSeconds ${Math.round(input.timing.stallMs / 1000)}`;
          plan.cancel.push(m);
          plan.aborted.push({
            move: m,
            cause: probe?.kind === "unreachable" ? "unreachable" : "no_progress",
          });
          kept.push({ ...m, aborting: { reason, stalled: true, since: nowIso, attempts: 1 } });
          plan.events.push({
            type: "Warning",
            reason: "MoveAborted",
            message: `move of ${moveKey(m)} from ${m.from} to ${m.to} aborted: ${reason}; cancelling it on ${m.to} (the source unfreezes), the partition is moved again after a backoff`,
          });
          continue;
        }
        if (liveOwner === m.to) {
          // The API server has the swap our cache lacks: never cancel it;
          // the next pass sees it swapped.
          kept.push(m);
          continue;
        }
      }
    }
    // A move not started yet ("pending") may find a finished one of an
    // earlier move of the same partition on its destination: that is stale,
    // start ours (a PUT over a finished move starts a new one).
    const stale =
      m.state === "pending" &&
      probe?.kind === "state" &&
      (probe.state === "done" || probe.state === "failed" || probe.state === "cancelled");
    if (probe === undefined || probe.kind === "unknown" || stale) {
      plan.start.push(m);
      kept.push(m);
    } else if (probe.kind === "unreachable") {
      kept.push(m);
    } else if (probe.state === "ready") {
      plan.swap.push(m);
      kept.push({ ...m, state: "ready" });
    } else if (probe.state === "copying") {
      kept.push({ ...m, state: "copying" });
    } else {
      // failed, cancelled, or "done" without a swap (cannot be trusted): start over.
      plan.cancel.push(m);
      plan.events.push({
        type: "Warning",
        reason: "MoveFailed",
        message: `move of ${moveKey(m)} from ${m.from} to ${m.to} ${probe.state}${probe.error ? `: ${probe.error}` : ""}; it will be planned again`,
      });
    }
  }
  plan.next = { ...plan.next, moves: kept, movesDone: done };
  if (retries.length > 0) plan.next.moveRetries = retries;
  else delete plan.next.moveRetries;
}

/** Records a new pending move in status.scale.moves (started on its destination in a later pass). */
export function addMove(
  plan: ScalePlan,
  input: ScaleInput,
  m: { topic: string; partition: number; from: string; to: string },
): void {
  const move: PartitionMoveStatus = {
    ...m,
    startedAt: new Date(input.nowMs).toISOString(),
    state: "pending",
  };
  const retry = plan.next?.moveRetries?.find((r) => r.topic === m.topic && r.partition === m.partition);
  plan.next = { ...plan.next, moves: [...(plan.next?.moves ?? []), move] };
  plan.events.push({
    type: "Normal",
    reason: "MovePlanned",
    message: `moving partition ${moveKey(m)} from ${m.from} to ${m.to}${retry === undefined ? "" : ` (again, after ${retry.attempts} abort(s))`}`,
  });
}
