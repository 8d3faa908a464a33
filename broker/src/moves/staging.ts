// The destination's staged copy of a partition being moved in:
// <dataDir>/moves/<topic>/pNNNNN/ holds segment files copied byte for byte
// from the source, and <dataDir>/moves/<topic>/pNNNNN.json marks a move in
// progress (so a restarted destination resumes it instead of opening an
// empty log for a partition it may already own). Every chunk is fdatasync'd
// as it is written (a restarted destination resumes from the staged lengths,
// so they must not outrun the bytes on disk). At finalize the staged copy
// must checksum the same as the source (moves/checksum.ts), and its HWM is
// what recovery finds in its frames, never a number written beforehand;
// then it gets the consumer frontiers and the source's dedup floor (the
// highest committed seq per ingress incarnation, which the copied segments
// alone no longer tell once the source's retention deleted some), and the
// log store renames it into topics/.

import { constants as fsConstants } from "node:fs";
import * as fsp from "node:fs/promises";
import { join } from "node:path";
import { writeFrontier } from "../consumer/frontier-file.ts";
import { isIncarnation } from "../core/log-codec.ts";
import type { Extent } from "../core/move-plan.ts";
import { writeDedupFloor } from "../log/dedup-floor.ts";
import { HwmFile, hwmFileName } from "../log/hwm.ts";
import { nodeLogIo } from "../log/log-io.ts";
import { partitionDirName } from "../log/log-store.ts";
import { openPartitionLog } from "../log/partition-log.ts";
import { parseSegmentFileName, segmentFileName } from "../log/segment.ts";
import { checksumMismatch, type SegmentChecksum, segmentChecksums } from "./checksum.ts";

export interface StagedLogOptions {
  segmentBytes: number;
  indexIntervalBytes: number;
  maxFrameBytes: number;
}

export function movesRoot(dataDir: string): string {
  return join(dataDir, "moves");
}

export function stagingDir(dataDir: string, topic: string, partition: number): string {
  return join(movesRoot(dataDir), topic, partitionDirName(partition));
}

function markerPath(dataDir: string, topic: string, partition: number): string {
  return `${stagingDir(dataDir, topic, partition)}.json`;
}

export interface MoveMarker {
  topic: string;
  partition: number;
  from: string;
  /** The move's freeze token: a restarted destination renews the same freeze. */
  token: string;
}

/** Writes the in-progress marker durably (tmp → fsync → rename → fsync dir). */
export async function writeMarker(dataDir: string, m: MoveMarker): Promise<void> {
  const path = markerPath(dataDir, m.topic, m.partition);
  const dir = join(movesRoot(dataDir), m.topic);
  await fsp.mkdir(dir, { recursive: true });
  const tmp = `${path}.tmp`;
  const h = await fsp.open(tmp, "w");
  try {
    await h.writeFile(JSON.stringify(m));
    await h.sync();
  } finally {
    await h.close();
  }
  await fsp.rename(tmp, path);
  await nodeLogIo.fsyncDir(dir);
}

/** Markers left by moves in progress (after a restart). Malformed ones are ignored. */
export async function readMarkers(dataDir: string): Promise<MoveMarker[]> {
  const out: MoveMarker[] = [];
  for (const topic of await nodeLogIo.list(movesRoot(dataDir))) {
    for (const name of await nodeLogIo.list(join(movesRoot(dataDir), topic))) {
      if (!name.endsWith(".json")) continue;
      try {
        const m = JSON.parse(await fsp.readFile(join(movesRoot(dataDir), topic, name), "utf8")) as MoveMarker;
        if (
          m.topic === topic &&
          Number.isSafeInteger(m.partition) &&
          typeof m.from === "string" &&
          typeof m.token === "string"
        )
          out.push(m);
      } catch {
        // torn or foreign file: the move is forgotten, its leftovers removed by discardAll
      }
    }
  }
  return out;
}

/** Removes the staged copy and the marker of one move. */
export async function discardStaged(dataDir: string, topic: string, partition: number): Promise<void> {
  await fsp.rm(stagingDir(dataDir, topic, partition), { recursive: true, force: true });
  await fsp.rm(markerPath(dataDir, topic, partition), { force: true });
}

/** Removes every staged move except `keep` (topic/partition keys). */
export async function discardOthers(dataDir: string, keep: ReadonlySet<string>): Promise<void> {
  for (const topic of await nodeLogIo.list(movesRoot(dataDir))) {
    for (const name of await nodeLogIo.list(join(movesRoot(dataDir), topic))) {
      const m = /^p(\d{5})(\.json)?$/.exec(name);
      if (m !== null && keep.has(`${topic}/${Number(m[1])}`)) continue;
      await fsp.rm(join(movesRoot(dataDir), topic, name), { recursive: true, force: true });
    }
  }
}

/** Segments of the staged copy with their byte lengths, oldest first. */
export async function stagedExtents(dir: string): Promise<Extent[]> {
  const out: Extent[] = [];
  for (const name of await nodeLogIo.list(dir)) {
    const base = parseSegmentFileName(name);
    if (base === null) continue;
    out.push({ base, bytes: (await fsp.stat(join(dir, name))).size });
  }
  return out.sort((a, b) => a.base - b.base);
}

export async function removeStagedSegment(dir: string, base: number): Promise<void> {
  await fsp.rm(join(dir, segmentFileName(base)), { force: true });
}

export async function resetStagedSegment(dir: string, base: number): Promise<void> {
  await fsp.truncate(join(dir, segmentFileName(base)), 0);
}

/**
 * Writes source bytes at their own position in the staged segment and
 * fdatasyncs them: after a crash the staged file's length is where the copy
 * resumes, so a length whose bytes never reached the disk (a hole of zeros)
 * would be skipped for good. A new file's directory entry is fsynced too.
 */
export async function writeChunk(dir: string, base: number, position: number, data: Buffer): Promise<void> {
  await fsp.mkdir(dir, { recursive: true });
  const path = join(dir, segmentFileName(base));
  const created = !(await nodeLogIo.exists(path));
  const h = await fsp.open(path, fsConstants.O_RDWR | fsConstants.O_CREAT, 0o644);
  try {
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await h.write(data, done, data.length - done, position + done);
      done += bytesWritten;
    }
    await h.datasync();
  } finally {
    await h.close();
  }
  if (created) await nodeLogIo.fsyncDir(dir);
}

/** Reads [position, position+length) of a staged segment file (shorter at its end, null when missing). */
async function readStaged(
  dir: string,
  base: number,
  position: number,
  length: number,
): Promise<Buffer | null> {
  let h: fsp.FileHandle;
  try {
    h = await fsp.open(join(dir, segmentFileName(base)), "r");
  } catch {
    return null;
  }
  try {
    const buf = Buffer.allocUnsafe(length);
    const { bytesRead } = await h.read(buf, 0, length, position);
    return buf.subarray(0, bytesRead);
  } finally {
    await h.close();
  }
}

/** CRC-32C of the staged segments' prefixes (what the source is asked to match). */
export function stagedChecksums(
  dir: string,
  extents: ReadonlyArray<{ base: number; bytes: number }>,
): Promise<SegmentChecksum[]> {
  return segmentChecksums((b, p, n) => readStaged(dir, b, p, n), extents);
}

export interface FinalizeInput {
  /** The frozen source's HWM. */
  highWatermark: number;
  frontiers: ReadonlyArray<{ group: string; offset: number }>;
  /** The source's CRC-32C of every segment, over the lengths the copy has (MoveVerify). */
  sourceChecksums: readonly SegmentChecksum[];
  /**
   * The frozen source's highest committed seq per ingress incarnation
   * (MoveManifest.dedup_floor). Kept as the copy's dedup floor: the copied
   * segments hold only what the source's retention kept, so without it a
   * WAL record re-sent to the new owner, whose segment the source had
   * deleted, would be committed a second time.
   */
  dedupFloor: ReadonlyArray<{ incarnation: string; seq: number }>;
}

/** Pure: the source's floor as a map, or why a peer's answer cannot be used (it would make the copy unopenable). */
export function parseMovedFloor(
  entries: ReadonlyArray<{ incarnation: string; seq: number }>,
): { ok: true; seqs: Map<string, number> } | { ok: false; why: string } {
  const seqs = new Map<string, number>();
  for (const e of entries) {
    if (!isIncarnation(e.incarnation) || !Number.isSafeInteger(e.seq) || e.seq < 0)
      return { ok: false, why: `bad dedup floor entry ${JSON.stringify(e)}` };
    seqs.set(e.incarnation, Math.max(seqs.get(e.incarnation) ?? 0, e.seq));
  }
  return { ok: true, seqs };
}

/**
 * Makes the staged copy a complete partition directory and proves it:
 * every segment fdatasync'd, then the same CRC-32C as the source over every
 * byte of every segment (a missing, zeroed or corrupt frame anywhere fails),
 * then one open as a partition log with no hwm file, so its HWM is the end
 * of the frames recovery actually found; it must equal the source's HWM and
 * nothing may be torn. Only then are the frontiers (and, when the source's
 * HWM is a floor above its own last frame, that floor) written. Resolves
 * the HWM.
 */
export async function finalizeStaged(
  dir: string,
  input: FinalizeInput,
  o: StagedLogOptions,
): Promise<number> {
  const floor = parseMovedFloor(input.dedupFloor);
  if (!floor.ok) throw new Error(`staged copy failed verification: ${floor.why}`);
  await fsp.mkdir(dir, { recursive: true });
  for (const name of await nodeLogIo.list(dir)) {
    if (parseSegmentFileName(name) === null) continue;
    const h = await fsp.open(join(dir, name), "r+");
    try {
      await h.datasync();
    } finally {
      await h.close();
    }
  }
  const extents = await stagedExtents(dir);
  const mine = await stagedChecksums(dir, extents);
  const mismatch =
    checksumMismatch(input.sourceChecksums, mine) ??
    // The copy may not hold segments the source did not vouch for either.
    checksumMismatch(mine, input.sourceChecksums);
  if (mismatch !== undefined) throw new Error(`staged copy failed verification: ${mismatch}`);
  // An hwm file from an earlier finalize would become the HWM floor: gone
  // before the open, so the HWM below comes from the frames alone.
  await fsp.rm(join(dir, hwmFileName), { force: true });
  const log = await openPartitionLog({
    dir,
    segmentBytes: o.segmentBytes,
    indexIntervalBytes: o.indexIntervalBytes,
    maxFrameBytes: o.maxFrameBytes,
    hwmPersistIntervalMs: 60_000,
    nowMs: () => Date.now(),
  });
  let recoveredEnd: number;
  let found: Map<string, number>;
  try {
    found = log.committedSeqs();
    const r = log.recovery;
    recoveredEnd = r.recoveredEnd;
    if (r.truncatedBytes > 0 || r.corruptTailBytes > 0 || r.hwmFile !== null) {
      throw new Error(
        `staged copy failed verification: truncated ${r.truncatedBytes}, corrupt tail ${r.corruptTailBytes}, hwm file ${r.hwmFile}`,
      );
    }
    // A source whose own HWM floor is above its last frame (it lost data
    // before and never reuses those offsets) hands that floor on; a copy
    // whose frames end short of the source's HWM for any other reason is
    // incomplete. The checksums above prove the bytes are the source's, so
    // a recovered end below the HWM can only be the source's own floor when
    // the source's last segment ends where ours does.
    if (recoveredEnd > input.highWatermark) {
      throw new Error(
        `staged copy failed verification: frames end at ${recoveredEnd}, past the source's HWM ${input.highWatermark}`,
      );
    }
  } finally {
    await log.close();
  }
  if (recoveredEnd < input.highWatermark) {
    // Bytes proven identical: the source's frames end here too, and its
    // hwm floor must survive the move (offsets below it may have been served).
    const hwm = await HwmFile.open(nodeLogIo, dir, input.highWatermark);
    await hwm.close();
  }
  // The floor is the source's map merged with what the copied frames hold
  // (equal for a source that sent one; the frames alone for an older source).
  // Written durably before finalize resolves: the copy is installed only after.
  for (const [inc, seq] of found) floor.seqs.set(inc, Math.max(floor.seqs.get(inc) ?? 0, seq));
  await writeDedupFloor(nodeLogIo, dir, floor.seqs);
  for (const f of input.frontiers) await writeFrontier(dir, f.group, f.offset);
  await nodeLogIo.fsyncDir(dir);
  return input.highWatermark;
}
