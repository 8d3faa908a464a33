// The partition's `dedup-floor` file: the highest committed seq per ingress
// WAL incarnation, written whenever retention is about to delete segments.
//
// Why: the (incarnation, seq) dedup map is rebuilt at open from the records
// in the segments on disk. Once retention deleted the segments that held an
// incarnation's highest seqs, a reopened log would remember a lower seq (or
// none) and accept a WAL record the dispatcher re-sends (a crash between
// the owner's commit and the WAL checkpoint, a long outage during which
// retention ran) as new: a duplicate. The floor keeps what the deleted
// segments knew. It is written (temp file, fdatasync, rename, fsync dir)
// before the first unlink, so at every crash point the floor plus the
// remaining segments cover every committed seq.
//
// Format: JSON {"version":1,"seqs":{"<16 hex incarnation>":<seq>,...}}.
// Small: one entry per ingress WAL that ever committed here.

import { join } from "node:path";
import { frameBytes, frameHeaderBytes, parseFrameHeader, scanFrameIds } from "../core/log-codec.ts";
import type { LogIo } from "./log-io.ts";

export const dedupFloorFileName = "dedup-floor";
const incarnationPattern = /^[0-9a-f]{16}$/;

interface FloorFile {
  version: 1;
  seqs: Record<string, number>;
}

/** Pure: the floor parsed from the file's bytes, or why it cannot be used. */
export function parseDedupFloor(
  buf: Buffer,
): { ok: true; seqs: Map<string, number> } | { ok: false; why: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(buf.toString("utf8"));
  } catch {
    return { ok: false, why: "not JSON" };
  }
  const f = parsed as Partial<FloorFile> | null;
  if (f === null || typeof f !== "object" || f.version !== 1 || typeof f.seqs !== "object" || f.seqs === null)
    return { ok: false, why: "unknown shape" };
  const seqs = new Map<string, number>();
  for (const [inc, seq] of Object.entries(f.seqs)) {
    if (!incarnationPattern.test(inc) || !Number.isSafeInteger(seq) || seq < 0)
      return { ok: false, why: `bad entry ${inc}` };
    seqs.set(inc, seq);
  }
  return { ok: true, seqs };
}

export function encodeDedupFloor(seqs: ReadonlyMap<string, number>): Buffer {
  const f: FloorFile = {
    version: 1,
    seqs: Object.fromEntries([...seqs].sort(([a], [b]) => (a < b ? -1 : 1))),
  };
  return Buffer.from(`${JSON.stringify(f)}\n`, "utf8");
}

/** The persisted floor; empty when there is none (a log retention never trimmed). Throws on a damaged file. */
export async function readDedupFloor(io: LogIo, dir: string): Promise<Map<string, number>> {
  const buf = await io.readSmall(join(dir, dedupFloorFileName));
  if (buf === null) return new Map();
  const parsed = parseDedupFloor(buf);
  // Never guess: a floor we cannot read could let re-sent records in twice.
  if (!parsed.ok) throw new Error(`${join(dir, dedupFloorFileName)}: ${parsed.why}`);
  return parsed.seqs;
}

/** Replaces the floor durably: temp file → fdatasync → rename → fsync(dir). */
export async function writeDedupFloor(
  io: LogIo,
  dir: string,
  seqs: ReadonlyMap<string, number>,
): Promise<void> {
  const tmp = join(dir, `${dedupFloorFileName}.tmp`);
  const file = await io.open(tmp, true);
  try {
    const bytes = encodeDedupFloor(seqs);
    await file.truncate(0);
    await file.writev([bytes], 0);
    await file.datasync();
  } finally {
    await file.close();
  }
  await io.rename(tmp, join(dir, dedupFloorFileName));
  await io.fsyncDir(dir);
}

/**
 * Raises `floor` with the highest (incarnation, seq) of every whole frame in
 * the first `bytes` of the segment file at `path`, read frame by frame. For
 * a replicated partition's leader: its in-memory dedup map also holds the
 * seqs of records above the HWM, which a new leader may never have had and
 * this copy's fetcher cuts once deposed; a floor written from that map would
 * later drop their re-send as a duplicate of records that are gone.
 */
export async function raiseFloorFromSegment(
  io: LogIo,
  path: string,
  bytes: number,
  maxFrameBytes: number,
  floor: Map<string, number>,
  /** Corrupt ranges recovery skipped: start position → end position. */
  gaps: ReadonlyMap<number, number> = new Map(),
): Promise<void> {
  const file = await io.open(path, false);
  try {
    const head = Buffer.allocUnsafe(frameHeaderBytes);
    let pos = 0;
    while (pos + frameHeaderBytes <= bytes) {
      const gapEnd = gaps.get(pos);
      if (gapEnd !== undefined) {
        pos = gapEnd;
        continue;
      }
      if ((await file.read(head, 0, frameHeaderBytes, pos)) !== frameHeaderBytes) break;
      const parsed = parseFrameHeader(head, 0, maxFrameBytes);
      if (!parsed.ok) throw new Error(`${path}: frame header at ${pos} cannot be read (${parsed.problem})`);
      const size = frameBytes(parsed.header);
      const buf = Buffer.allocUnsafe(size);
      if ((await file.read(buf, 0, size, pos)) !== size) throw new Error(`${path}: short frame at ${pos}`);
      const ids = scanFrameIds(buf, 0, parsed.header);
      if (ids === null) throw new Error(`${path}: frame at ${pos} cannot be read for the dedup floor`);
      for (const [inc, seq] of ids.maxSeq) if (seq > (floor.get(inc) ?? -1)) floor.set(inc, seq);
      pos += size;
    }
  } finally {
    await file.close();
  }
}
