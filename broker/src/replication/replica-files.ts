// Encodings of the per-partition replica files of ADR 0007, and what a
// load makes of them. Pure: replication-io/ does the reads, appends and
// atomic rewrites.
//
// - `leader-epochs`: one "<epoch> <startOffset>\n" line per epoch start,
//   appended and fsynced when the epoch starts. A crash mid-append leaves at
//   most a partial last line (no newline), which was never durable and is
//   dropped; entries at or above the recovered log end are dropped too (the
//   record that started the epoch may not have been durable).
// - `replica-checkpoint`: the highest leader epoch seen and the HWM known,
//   one JSON line with a CRC-32C, rewritten atomically.

import { type EpochHistory, startEpoch, truncateHistory } from "./epoch-history.ts";

export const epochFileName = "leader-epochs";
export const checkpointFileName = "replica-checkpoint";

export function encodeEpochLine(epoch: number, startOffset: number): string {
  return `${epoch} ${startOffset}\n`;
}

export function encodeEpochFile(h: EpochHistory): Buffer {
  return Buffer.from(h.map((e) => encodeEpochLine(e.epoch, e.startOffset)).join(""));
}

export type EpochFileLoad =
  | {
      ok: true;
      history: EpochHistory;
      /** Entries dropped: a partial last line, or starts at or above the log end. */
      dropped: number;
    }
  | { ok: false; reason: string };

const linePattern = /^(\d{1,15}) (\d{1,16})$/;

/** The epoch history in `raw` (null: no file), cut to a log that recovered to `logEnd`. */
export function loadEpochFile(raw: Buffer | null, logEnd: number): EpochFileLoad {
  if (raw === null) return { ok: true, history: [], dropped: 0 };
  const text = raw.toString("latin1");
  const lines = text.split("\n");
  // The text after the last newline is a torn append (or "" when none).
  const torn = lines.pop() ?? "";
  let h: EpochHistory = [];
  for (const [i, line] of lines.entries()) {
    const m = linePattern.exec(line);
    if (m === null)
      return { ok: false, reason: `line ${i + 1} is not "<epoch> <startOffset>": ${JSON.stringify(line)}` };
    const epoch = Number(m[1]);
    const start = Number(m[2]);
    if (!Number.isSafeInteger(start)) return { ok: false, reason: `line ${i + 1}: offset out of range` };
    try {
      h = startEpoch(h, epoch, start);
    } catch (err) {
      return { ok: false, reason: `line ${i + 1}: ${(err as Error).message}` };
    }
  }
  const kept = truncateHistory(h, logEnd);
  return { ok: true, history: kept, dropped: h.length - kept.length + (torn === "" ? 0 : 1) };
}

export interface ReplicaCheckpoint {
  /** Highest leader epoch this replica has seen (fencing: lower ones are refused). */
  leaderEpoch: number;
  /** Highest HWM learned from a leader; nothing below it is ever truncated. */
  hwm: number;
}

export function encodeCheckpoint(c: ReplicaCheckpoint, crc32c: (b: Buffer) => number): Buffer {
  const body = JSON.stringify({ leaderEpoch: c.leaderEpoch, hwm: c.hwm });
  return Buffer.from(`${body} ${crc32c(Buffer.from(body)).toString(16).padStart(8, "0")}\n`);
}

export type CheckpointLoad =
  | { ok: true; checkpoint: ReplicaCheckpoint | null }
  | { ok: false; reason: string };

/** null raw: no checkpoint yet (a new replica). A malformed one is an error, never a guess. */
export function decodeCheckpoint(raw: Buffer | null, crc32c: (b: Buffer) => number): CheckpointLoad {
  if (raw === null) return { ok: true, checkpoint: null };
  const m = /^(\{.*\}) ([0-9a-f]{8})\n$/.exec(raw.toString("utf8"));
  if (m === null) return { ok: false, reason: "the replica checkpoint is not one checksummed line" };
  const body = m[1]!;
  if (crc32c(Buffer.from(body)) !== Number.parseInt(m[2]!, 16))
    return { ok: false, reason: "the replica checkpoint's checksum does not match" };
  const o = JSON.parse(body) as Record<string, unknown>;
  const { leaderEpoch, hwm } = o;
  if (!Number.isSafeInteger(leaderEpoch) || !Number.isSafeInteger(hwm) || (hwm as number) < 0)
    return { ok: false, reason: "the replica checkpoint has no valid leaderEpoch and hwm" };
  return { ok: true, checkpoint: { leaderEpoch: leaderEpoch as number, hwm: hwm as number } };
}
