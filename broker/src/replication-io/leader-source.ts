// The leader side of ReplicaFetch and OffsetForLeaderEpoch (ADR 0007), on
// a partition this node owns: its epoch comes from the partition's
// leader-epochs file, its frames from the partition log as stored. Not yet
// wired to the HWM of live topics: the log's HWM is its own durable end.
//
// A partition with no leader-epochs file (every single-copy topic) is led
// at epoch 0 from its oldest offset: a follower of such a log has one epoch.

import { isLogError } from "../log/log-errors.ts";
import type { OpenedPartitionLog } from "../log/partition-log.ts";
import type { PartitionLog } from "../log/types.ts";
import { type EpochHistory, epochAt, lastEpoch, offsetForLeaderEpoch } from "../replication/epoch-history.ts";
import { fenceLeader } from "../replication/replica.ts";
import type { PbReplicaFetchResponse } from "../rpc/proto.ts";
import type { ReplicaLeaderService } from "../rpc/server.ts";
import { readEpochFile } from "./replica-state-files.ts";

export interface LeaderSourceOptions {
  partitionDir(topic: string, partition: number): string;
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

export function leaderSource(o: LeaderSourceOptions): ReplicaLeaderService {
  return {
    partitionDir: o.partitionDir,

    async fetch(log, dir, req, signal) {
      if (!isOpened(log)) throw new Error("replica fetch needs a partition log with raw frame reads");
      const history = await leaderHistory(dir, log);
      const epoch = lastEpoch(history);
      const answer = (
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
          ...extra,
        };
      };
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
      const history = await leaderHistory(dir, log);
      const epoch = lastEpoch(history);
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
