// A follower's fetch loop for one partition (ADR 0007), the I/O around
// replication/replica.ts: on start it recovers its copy, fences and
// persists the epoch it follows, truncates a divergent tail with
// OffsetForLeaderEpoch (never below its known HWM), then fetches from its
// end: frames are CRC-checked on arrival, appended, fsynced and read back,
// epoch starts are written before the frames they start, and the
// checkpoint (epoch, HWM) is rewritten after each append. A replica whose
// end is below the leader's oldest offset (retention deleted what it lacks)
// starts over there. Run by the broker's replica manager for each partition
// it follows (replication-io/replica-manager.ts).

import type { EpochHistory } from "../replication/epoch-history.ts";
import { lastEpoch, startEpoch, truncateHistory } from "../replication/epoch-history.ts";
import {
  fenceReplica,
  followerHwm,
  planTruncation,
  type ReplicaLog as ReplicaLogState,
  truncationQuery,
} from "../replication/replica.ts";
import type { PeerClient } from "../rpc/client.ts";
import type { PbReplicaFetchResponse } from "../rpc/proto.ts";
import { ReplicaLog } from "./replica-log.ts";
import {
  appendEpoch,
  readCheckpoint,
  readEpochFile,
  rewriteEpochFile,
  writeCheckpoint,
} from "./replica-state-files.ts";

export interface FollowerOptions {
  leader: Pick<PeerClient, "replicaFetch" | "offsetForLeaderEpoch">;
  topic: string;
  partition: number;
  replicaId: string;
  /** This replica's volume identity (sent with every fetch: the leader checks it against the ISR). */
  volumeId: string;
  /** This replica's partition directory (pNNNNN). */
  dir: string;
  /** The epoch of the leader this replica follows (from the partition's assignment record). */
  leaderEpoch: number;
  segmentBytes: number;
  maxFrameBytes: number;
  maxBytes: number;
  maxWaitMs: number;
  signal: AbortSignal;
  /** Clock of the lazy checkpoint (checkpointIntervalMs). */
  nowMs: () => number;
  /** The HWM in the checkpoint is rewritten at most this often (0: after every fetch that moved it). */
  checkpointIntervalMs?: number;
  /** After each durable append (and once after truncation). */
  onProgress?: (p: { logEnd: number; hwm: number; leaderEnd: number }) => void;
  /** After the start-up truncation step. */
  onTruncated?: (t: { from: number; to: number }) => void;
  /** The leader's group frontiers and fan-out cursors that changed (persisted before the next fetch). */
  onPositions?: (p: Pick<PbReplicaFetchResponse, "frontiers" | "fanout_cursors">) => Promise<void>;
  /** The copy was dropped and restarted empty at the leader's oldest offset. */
  onReset?: (r: { from: number; to: number }) => void;
}

export type FollowerStop =
  | { reason: "aborted"; logEnd: number; hwm: number }
  /** A refusal from the leader (or our own fencing): the follower stops and waits for a new assignment. */
  | {
      reason:
        | "fenced_leader_epoch"
        | "unknown_leader_epoch"
        | "not_leader"
        | "unknown_topic"
        | "offset_out_of_range";
      message: string;
      logEnd: number;
      hwm: number;
    };

/** Thrown instead of truncating below the known HWM (an acknowledged record would go). */
export class TruncationRefusedError extends Error {}

export async function runFollower(o: FollowerOptions): Promise<FollowerStop> {
  const cp = await readCheckpoint(o.dir);
  if (!cp.ok) throw new Error(`${o.dir}: ${cp.reason}`);
  let knownEpoch = cp.checkpoint?.leaderEpoch ?? -1;
  let hwm = cp.checkpoint?.hwm ?? 0;
  const log = await ReplicaLog.open(
    { dir: o.dir, segmentBytes: o.segmentBytes, maxFrameBytes: o.maxFrameBytes },
    hwm,
  );
  const loaded = await readEpochFile(o.dir, log.endOffset);
  if (!loaded.ok) throw new Error(`${o.dir}: ${loaded.reason}`);
  let history: EpochHistory = loaded.history;
  if (loaded.dropped > 0) await rewriteEpochFile(o.dir, history);
  if (hwm > log.endOffset)
    throw new Error(`${o.dir}: the checkpoint's HWM ${hwm} is above the recovered log end ${log.endOffset}`);

  let checkpointed = hwm;
  let checkpointedAtMs = Number.NEGATIVE_INFINITY;
  const saveCheckpoint = async (): Promise<void> => {
    await writeCheckpoint(o.dir, { leaderEpoch: knownEpoch, hwm });
    checkpointed = hwm;
    checkpointedAtMs = o.nowMs();
  };

  const stop = (reason: Exclude<FollowerStop["reason"], "aborted">, message: string): FollowerStop => ({
    reason,
    message,
    logEnd: log.endOffset,
    hwm,
  });

  const fence = fenceReplica(knownEpoch, o.leaderEpoch);
  if (!fence.ok)
    return stop(fence.code, `asked to follow epoch ${o.leaderEpoch}; this replica has seen ${knownEpoch}`);
  if (o.leaderEpoch > knownEpoch) {
    // Persisted before acting on it: after a crash, a lower epoch is still refused.
    knownEpoch = o.leaderEpoch;
    await writeCheckpoint(o.dir, { leaderEpoch: knownEpoch, hwm });
  }

  // Epoch-based truncation, at every start (a crash mid-truncation re-runs it).
  const before = log.endOffset;
  if (log.startOffset === log.endOffset) {
    // An empty copy (new, or restarted at the leader's oldest offset by a
    // reset that crashed before its first append) holds nothing to cut, and
    // epochs it kept of records it no longer has say nothing: asking about
    // them would answer an offset below its start (and its HWM), refused.
    if (history.length > 0) {
      history = [];
      await rewriteEpochFile(o.dir, history);
    }
  } else
    for (;;) {
      const state: ReplicaLogState = { logEnd: log.endOffset, hwm, history };
      const asked = truncationQuery(state);
      const res = await o.leader.offsetForLeaderEpoch({
        topic: o.topic,
        partition: o.partition,
        epoch: asked,
        leader_epoch: o.leaderEpoch,
      });
      if (res.error !== "") return stop(res.error as Exclude<FollowerStop["reason"], "aborted">, res.message);
      const step = planTruncation(state, asked, { epoch: res.epoch, endOffset: res.end_offset });
      if (step.kind === "refuse") throw new TruncationRefusedError(`${o.dir}: ${step.reason}`);
      if (step.truncateTo < log.endOffset) {
        await log.truncateTo(step.truncateTo);
        history = truncateHistory(history, log.endOffset);
        await rewriteEpochFile(o.dir, history);
      }
      if (step.kind === "follow") break;
    }
  o.onTruncated?.({ from: before, to: log.endOffset });

  while (!o.signal.aborted) {
    let res: Awaited<ReturnType<FollowerOptions["leader"]["replicaFetch"]>>;
    try {
      res = await o.leader.replicaFetch(
        {
          topic: o.topic,
          partition: o.partition,
          fetch_offset: log.endOffset,
          leader_epoch: o.leaderEpoch,
          max_bytes: o.maxBytes,
          max_wait_ms: o.maxWaitMs,
          replica_id: o.replicaId,
          replica_volume_id: o.volumeId,
        },
        o.signal,
      );
    } catch (err) {
      if (o.signal.aborted) break;
      throw err;
    }
    if (res.error === "offset_out_of_range" && log.endOffset < res.log_start_offset) {
      // Nothing below the leader's oldest offset can be fetched any more, and
      // nothing this copy holds is needed: everything acknowledged is on the
      // leader. Start over at its oldest offset.
      const from = log.endOffset;
      await log.resetTo(res.log_start_offset);
      history = [];
      await rewriteEpochFile(o.dir, history);
      hwm = res.log_start_offset;
      await writeCheckpoint(o.dir, { leaderEpoch: knownEpoch, hwm });
      o.onReset?.({ from, to: res.log_start_offset });
      continue;
    }
    if (res.error !== "") return stop(res.error as Exclude<FollowerStop["reason"], "aborted">, res.message);
    if (res.frontiers.length > 0 || res.fanout_cursors.length > 0) await o.onPositions?.(res);
    if (res.frames.length > 0) {
      const from = log.endOffset;
      // Epoch starts first (fsynced): the load rule drops any at or above the log end after a crash.
      for (const e of res.epoch_starts) {
        if (e.epoch <= lastEpoch(history)) continue;
        const at = Math.max(e.start_offset, from);
        history = startEpoch(history, e.epoch, at);
        await appendEpoch(o.dir, e.epoch, at);
      }
      await log.append(res.frames);
    }
    // Retention follows the leader's: what it deleted, the copy drops too.
    if (res.log_start_offset > log.startOffset) await log.deleteBelow(res.log_start_offset);
    hwm = followerHwm(hwm, res.leader_hwm, log.endOffset);
    // The HWM is persisted lazily (at most every checkpointIntervalMs, and
    // when the loop ends), like the leader's hwm file: a lagging value only
    // weakens the truncation guard and lowers the HWM a new leader starts
    // from, both of which the protocol allows. The epoch is written eagerly
    // above, before it is acted on. Two fsyncs fewer per fetch round.
    if (hwm !== checkpointed && o.nowMs() - checkpointedAtMs >= (o.checkpointIntervalMs ?? 0))
      await saveCheckpoint();
    o.onProgress?.({ logEnd: log.endOffset, hwm, leaderEnd: res.log_end_offset });
  }
  if (hwm !== checkpointed) await saveCheckpoint().catch(() => undefined);
  return { reason: "aborted", logEnd: log.endOffset, hwm };
}
