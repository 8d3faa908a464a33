// The destination's staged copy of a partition being moved in:
// <dataDir>/moves/<topic>/pNNNNN/ holds segment files copied byte for byte
// from the source, and <dataDir>/moves/<topic>/pNNNNN.json marks a move in
// progress (so a restarted destination resumes it instead of opening an
// empty log for a partition it may already own). At finalize the staged
// directory gets the source's consumer frontiers and HWM, is fsynced and
// opened once as a partition log (recovery CRC-checks every frame) before
// the log store renames it into topics/.

import { constants as fsConstants } from "node:fs";
import * as fsp from "node:fs/promises";
import { join } from "node:path";
import { writeFrontier } from "../consumer/frontier-file.ts";
import type { Extent } from "../core/move-plan.ts";
import { HwmFile } from "../log/hwm.ts";
import { nodeLogIo } from "../log/log-io.ts";
import { partitionDirName } from "../log/log-store.ts";
import { openPartitionLog } from "../log/partition-log.ts";
import { parseSegmentFileName, segmentFileName } from "../log/segment.ts";

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

/** Writes source bytes at their own position in the staged segment (no fsync: finalize syncs). */
export async function writeChunk(dir: string, base: number, position: number, data: Buffer): Promise<void> {
  await fsp.mkdir(dir, { recursive: true });
  const h = await fsp.open(join(dir, segmentFileName(base)), fsConstants.O_RDWR | fsConstants.O_CREAT, 0o644);
  try {
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await h.write(data, done, data.length - done, position + done);
      done += bytesWritten;
    }
  } finally {
    await h.close();
  }
}

export interface FinalizeInput {
  highWatermark: number;
  frontiers: ReadonlyArray<{ group: string; offset: number }>;
}

/**
 * Makes the staged copy a complete partition directory and proves it: every
 * segment fdatasync'd, consumer frontiers and the HWM written, then one open
 * as a partition log, whose recovery must find nothing torn and the same HWM.
 * Resolves that HWM.
 */
export async function finalizeStaged(
  dir: string,
  input: FinalizeInput,
  o: StagedLogOptions,
): Promise<number> {
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
  for (const f of input.frontiers) await writeFrontier(dir, f.group, f.offset);
  const hwm = await HwmFile.open(nodeLogIo, dir, input.highWatermark);
  await hwm.close();
  await nodeLogIo.fsyncDir(dir);
  const log = await openPartitionLog({
    dir,
    segmentBytes: o.segmentBytes,
    indexIntervalBytes: o.indexIntervalBytes,
    maxFrameBytes: o.maxFrameBytes,
    hwmPersistIntervalMs: 60_000,
    nowMs: () => Date.now(),
  });
  try {
    const r = log.recovery;
    const got = log.stats().highWatermark;
    if (r.truncatedBytes > 0 || r.corruptTailBytes > 0 || got !== input.highWatermark) {
      throw new Error(
        `staged copy failed verification: hwm ${got} (source ${input.highWatermark}), truncated ${r.truncatedBytes}, corrupt tail ${r.corruptTailBytes}`,
      );
    }
    return got;
  } finally {
    await log.close();
  }
}
