// The leader side of ReplicaFetch and OffsetForLeaderEpoch (ADR 0007).
//
// A replicated partition (its log opened in replicated mode by this node's
// leader state): fenced by the leader state's epoch, each fetch first
// records the follower's progress (its fetch offset: everything below is
// durable there, which is what moves the HWM), then long-polls for frames
// above it and answers them up to the durable end, with the HWM, the epoch
// starts and the group frontiers that changed.
//
// A single-copy partition (no leader state) is served read-only below its
// HWM at epoch 0 from its oldest offset (its leader-epochs file, if any):
// how a copy of an unreplicated log is made.

import { isLogError } from "../log/log-errors.ts";
import type { OpenedPartitionLog } from "../log/partition-log.ts";
import type { PartitionLog } from "../log/types.ts";
import { type EpochHistory, epochAt, lastEpoch, offsetForLeaderEpoch } from "../replication/epoch-history.ts";
import { fenceLeader } from "../replication/replica.ts";
import type { PbReplicaFetchRequest, PbReplicaFetchResponse } from "../rpc/proto.ts";
import type { ReplicaLeaderService } from "../rpc/server.ts";
import { readEpochFile } from "./replica-state-files.ts";

/** Durable positions a leader piggybacks on its fetch answers (replica-manager.ts). */
export type ReplicatedPositions = Pick<PbReplicaFetchResponse, "frontiers" | "fanout_cursors">;

/** What the fetch handler needs of a partition this node leads (leader-state.ts). */
export interface LedPartition {
  readonly epoch: number;
  readonly stopped: boolean;
  readonly history: EpochHistory;
  /** Records a follower's fetch offset; returns the HWM after it. */
  recordFetch(member: string, volumeId: string, fetchOffset: number): number;
}

export interface LeaderSourceOptions {
  partitionDir(topic: string, partition: number): string;
  /** The leader state of a replicated partition this node leads now, if any. */
  ledPartition?(topic: string, partition: number): LedPartition | undefined;
  /**
   * The partition's durable positions to send `replica`: group frontiers
   * and fan-out cursors that changed since its previous answer.
   */
  positionsFor?(
    topic: string,
    partition: number,
    replica: string,
    volumeId: string,
  ): Promise<ReplicatedPositions>;
  /** Upper bound on one answer's frames (the follower's max_bytes is capped by it). */
  maxFetchBytes: number;
  /** Upper bound on a long poll. */
  maxWaitMs: number;
}

function isOpened(log: PartitionLog): log is OpenedPartitionLog {
  return typeof (log as Partial<OpenedPartitionLog>).readRawFrames === "function";
}

/** The leader's epoch history: its file, or epoch 0 from the oldest offset when it has none. */
async function leaderHistory(dir: string, log: PartitionLog): Promise<EpochHistory> {
  const st = log.stats();
  // A live leader's file, not a recovery: an epoch that starts at the log end
  // (elected, nothing written yet) is its current one and stays; only
  // entries beyond the end (which cannot be right) are dropped.
  const loaded = await readEpochFile(dir, st.nextOffset + 1);
  if (!loaded.ok) throw new Error(`${dir}: ${loaded.reason}`);
  return loaded.history.length > 0 ? loaded.history : [{ epoch: 0, startOffset: st.oldestOffset }];
}

/** A fetch answer of `log` at `epoch`: the log's bounds as of now, plus `extra`. */
function answerOf(log: PartitionLog, epoch: number) {
  return (
    extra: Partial<PbReplicaFetchResponse> & Pick<PbReplicaFetchResponse, "error">,
  ): PbReplicaFetchResponse => {
    const st = log.stats();
    return {
      message: "",
      frames: Buffer.alloc(0),
      leader_hwm: st.highWatermark,
      leader_epoch: epoch,
      log_start_offset: st.oldestOffset,
      log_end_offset: st.nextOffset,
      epoch_starts: [],
      frontiers: [],
      fanout_cursors: [],
      ...extra,
    };
  };
}

export function leaderSource(o: LeaderSourceOptions): ReplicaLeaderService {
  /** A replicated partition's fetch: progress first, then frames up to the durable end. */
  const fetchReplicated = async (
    log: OpenedPartitionLog,
    req: PbReplicaFetchRequest,
    signal: AbortSignal,
  ): Promise<PbReplicaFetchResponse> => {
    const led = o.ledPartition?.(req.topic, req.partition);
    const answer = answerOf(log, led?.epoch ?? -1);
    if (led === undefined || led.stopped)
      return answer({
        error: "not_leader",
        message: `${req.topic}/${req.partition} is not led by this node now`,
      });
    const fence = fenceLeader(led.epoch, req.leader_epoch);
    if (!fence.ok)
      return answer({
        error: fence.code,
        message: `fetch at epoch ${req.leader_epoch}; this leader is at epoch ${led.epoch}`,
      });
    const st = log.stats();
    // A follower ahead of the durable end kept a tail of an older epoch: it
    // must truncate first (it does so at every start).
    if (req.fetch_offset < st.oldestOffset || req.fetch_offset > st.nextOffset)
      return answer({
        error: "offset_out_of_range",
        message: `fetch offset ${req.fetch_offset} outside [${st.oldestOffset}, ${st.nextOffset}]`,
      });
    led.recordFetch(req.replica_id, req.replica_volume_id, req.fetch_offset);
    await log.waitForEndAbove(req.fetch_offset, Math.min(req.max_wait_ms, o.maxWaitMs), signal);
    if (led.stopped)
      return answer({ error: "not_leader", message: `${req.topic}/${req.partition}: leadership ended` });
    let got: Awaited<ReturnType<OpenedPartitionLog["readRawFrames"]>>;
    try {
      got = await log.readRawFrames(
        req.fetch_offset,
        Math.max(1, Math.min(req.max_bytes, o.maxFetchBytes)),
        "end",
      );
    } catch (err) {
      if (isLogError(err, "OFFSET_OUT_OF_RANGE") || isLogError(err, "OFFSET_EXPIRED"))
        return answer({ error: "offset_out_of_range", message: (err as Error).message });
      throw err;
    }
    const history = led.history;
    const from = epochAt(history, req.fetch_offset);
    const starts = history
      .filter((e) => e.epoch >= from && e.startOffset < Math.max(got.nextOffset, req.fetch_offset + 1))
      .map((e) => ({ epoch: e.epoch, start_offset: e.startOffset }));
    const positions = (await o.positionsFor?.(
      req.topic,
      req.partition,
      req.replica_id,
      req.replica_volume_id,
    )) ?? {
      frontiers: [],
      fanout_cursors: [],
    };
    return answer({ error: "", frames: got.frames, epoch_starts: starts, ...positions });
  };

  return {
    partitionDir: o.partitionDir,

    async fetch(log, dir, req, signal) {
      if (!isOpened(log)) throw new Error("replica fetch needs a partition log with raw frame reads");
      if (log.replicated) return fetchReplicated(log, req, signal);
      const history = await leaderHistory(dir, log);
      const epoch = lastEpoch(history);
      const answer = answerOf(log, epoch);
      const fence = fenceLeader(epoch, req.leader_epoch);
      if (!fence.ok)
        return answer({
          error: fence.code,
          message: `fetch at epoch ${req.leader_epoch}; this leader is at epoch ${epoch}`,
        });
      const st = log.stats();
      if (req.fetch_offset < st.oldestOffset || req.fetch_offset > st.highWatermark)
        return answer({
          error: "offset_out_of_range",
          message: `fetch offset ${req.fetch_offset} outside [${st.oldestOffset}, ${st.highWatermark}]`,
        });
      await log.waitForHwmAbove(req.fetch_offset, Math.min(req.max_wait_ms, o.maxWaitMs), signal);
      let got: Awaited<ReturnType<OpenedPartitionLog["readRawFrames"]>>;
      try {
        got = await log.readRawFrames(
          req.fetch_offset,
          Math.max(1, Math.min(req.max_bytes, o.maxFetchBytes)),
        );
      } catch (err) {
        if (isLogError(err, "OFFSET_OUT_OF_RANGE") || isLogError(err, "OFFSET_EXPIRED"))
          return answer({ error: "offset_out_of_range", message: (err as Error).message });
        throw err;
      }
      // The epoch of fetch_offset and every later start below the frames' end.
      const from = epochAt(history, req.fetch_offset);
      const starts = history
        .filter((e) => e.epoch >= from && e.startOffset < Math.max(got.nextOffset, req.fetch_offset + 1))
        .map((e) => ({ epoch: e.epoch, start_offset: e.startOffset }));
      return answer({ error: "", frames: got.frames, epoch_starts: starts });
    },

    async offsetForLeaderEpoch(log, dir, req) {
      const replicated = isOpened(log) && log.replicated;
      const led = replicated ? o.ledPartition?.(req.topic, req.partition) : undefined;
      if (replicated && (led === undefined || led.stopped))
        return {
          error: "not_leader",
          message: `${req.topic}/${req.partition} is not led by this node now`,
          epoch: -1,
          end_offset: 0,
          leader_epoch: -1,
        };
      const history = led?.history ?? (await leaderHistory(dir, log));
      const epoch = led?.epoch ?? lastEpoch(history);
      const fence = fenceLeader(epoch, req.leader_epoch);
      if (!fence.ok)
        return {
          error: fence.code,
          message: `request at epoch ${req.leader_epoch}; this leader is at epoch ${epoch}`,
          epoch: -1,
          end_offset: 0,
          leader_epoch: epoch,
        };
      const end = offsetForLeaderEpoch(history, log.stats().nextOffset, req.epoch);
      return { error: "", message: "", epoch: end.epoch, end_offset: end.endOffset, leader_epoch: epoch };
    },
  };
}
