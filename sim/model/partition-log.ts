// A partition log on one broker's volume, reduced to what the data path
// decides on: frames in offset order, the HWM, the (incarnation -> highest
// seq) dedup map and the move freeze. commit() follows PartitionLog#commit
// (broker/src/log/partition-log.ts): refuse when frozen, drop every record
// whose seq is <= the highest committed from its incarnation, append the
// rest and publish. A commit is atomic here: recovery exposes every whole
// CRC-valid frame (log/recovery.ts), so a crash between write and publish
// ends up the same as one just after it.
//
// `uid` is ghost state the real log does not have: the topic incarnation
// whose directory this is, so the sim can tell a record committed into the
// wrong incarnation of a re-created topic.

import type { CommitRecord } from "../../broker/src/core/records.ts";

export interface StoredFrame {
  offset: number;
  /** The record's identity in the sim: its payload. */
  id: string;
  incarnation: string;
  seq: number;
}

export class SimLogError extends Error {
  readonly code: "PARTITION_FROZEN" | "PARTITION_MOVING";
  constructor(code: "PARTITION_FROZEN" | "PARTITION_MOVING", message: string) {
    super(message);
    this.code = code;
  }
}

export class SimPartitionLog {
  readonly uid: number;
  readonly frames: StoredFrame[];
  readonly dedup: Map<string, number>;
  /** Memory only: a restarted broker reopens its logs unfrozen (source.ts resume() refreezes moved-away ones). */
  frozen = false;

  constructor(uid: number, frames: StoredFrame[] = [], dedup = new Map<string, number>()) {
    this.uid = uid;
    this.frames = frames;
    this.dedup = dedup;
  }

  get highWatermark(): number {
    return this.frames.length;
  }

  /** Bytes of the single segment: what move-plan's planCopy measures. */
  get bytes(): number {
    return this.frames.length * frameBytes;
  }

  commit(records: readonly CommitRecord[]): { appended: number; duplicates: number; ids: string[] } {
    if (this.frozen) throw new SimLogError("PARTITION_FROZEN", "frozen for a partition move");
    const seen = new Map<string, number>();
    const fresh: CommitRecord[] = [];
    for (const r of records) {
      const highest = seen.get(r.incarnation) ?? this.dedup.get(r.incarnation) ?? -1;
      if (r.seq <= highest) continue;
      seen.set(r.incarnation, r.seq);
      fresh.push(r);
    }
    const ids: string[] = [];
    for (const r of fresh) {
      const id = r.payload.toString();
      this.frames.push({ offset: this.frames.length, id, incarnation: r.incarnation, seq: r.seq });
      ids.push(id);
    }
    for (const [inc, seq] of seen) this.dedup.set(inc, seq);
    return { appended: fresh.length, duplicates: records.length - fresh.length, ids };
  }

  /** A byte-exact copy of the first `bytes` (what the destination stages). */
  prefix(bytes: number): SimPartitionLog {
    const n = Math.min(this.frames.length, Math.floor(bytes / frameBytes));
    const frames = this.frames.slice(0, n).map((f) => ({ ...f }));
    // Recovery rebuilds dedup from the frames, as a staged copy's open does.
    const dedup = new Map<string, number>();
    for (const f of frames) dedup.set(f.incarnation, Math.max(dedup.get(f.incarnation) ?? -1, f.seq));
    return new SimPartitionLog(this.uid, frames, dedup);
  }
}

/** Every frame counts this many bytes in the move planner's arithmetic. */
export const frameBytes = 100;
