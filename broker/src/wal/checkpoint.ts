// The `checkpoint` file: 8 bytes, big-endian, the first seq not yet
// dispatched. Replaced atomically so a crash leaves either the old or the new
// value, both of which are safe (an old one only causes re-dispatch, which the
// owner's (incarnation, seq) dedup absorbs).

import { join } from "node:path";
import { type FileIo, writeFully } from "../storage/file-io.ts";
import type { WalLogger } from "./errors.ts";

export const checkpointFileName = "checkpoint";
export const checkpointTempFileName = "checkpoint.tmp";
const checkpointBytes = 8;

/** Reads the checkpoint; missing → 1 (nothing dispatched). Removes a leftover temp file. */
export async function readCheckpoint(io: FileIo, dir: string, log: WalLogger): Promise<number> {
  // A temp file is the residue of a crash before rename (crash point C1/C2 below); the
  // real file still holds the previous value.
  if (await io.unlink(join(dir, checkpointTempFileName))) {
    log.warn({ dir }, "removed a checkpoint temp file left by an interrupted checkpoint write");
  }
  const buf = await io.readFile(join(dir, checkpointFileName));
  if (buf === undefined) return 1;
  const high = buf.length === checkpointBytes ? buf.readUInt32BE(0) : -1;
  const value = high * 0x1_0000_0000 + (buf.length === checkpointBytes ? buf.readUInt32BE(4) : 0);
  if (high < 0 || !Number.isSafeInteger(value) || value < 1) {
    // Falling back to 1 re-dispatches everything still in the WAL: duplicates, never loss.
    log.error({ dir, bytes: buf.length }, "checkpoint file is malformed; restarting dispatch from seq 1");
    return 1;
  }
  return value;
}

/**
 * Durably replaces the checkpoint. Order and crash points:
 *   1. write checkpoint.tmp, fsync it      (C1: crash → tmp ignored, old value stands)
 *   2. rename tmp → checkpoint             (C2: crash → old or new name, both whole files)
 *   3. fsync the directory                 (C3: after this the new value survives power loss)
 * Only after step 3 may segments below `seq` be deleted.
 */
export async function writeCheckpoint(io: FileIo, dir: string, seq: number): Promise<void> {
  const buf = Buffer.alloc(checkpointBytes);
  buf.writeUInt32BE(Math.floor(seq / 0x1_0000_0000), 0);
  buf.writeUInt32BE(seq >>> 0, 4);
  const tmp = join(dir, checkpointTempFileName);
  const h = await io.open(tmp, "createOrTruncate");
  try {
    await writeFully(h, buf, checkpointBytes, 0);
    await h.sync();
  } finally {
    await h.close();
  }
  await io.rename(tmp, join(dir, checkpointFileName));
  await io.fsyncDir(dir);
}
