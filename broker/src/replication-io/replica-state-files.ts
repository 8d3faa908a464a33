// The per-partition replica files of ADR 0007 on disk (encodings and load
// rules: replication/replica-files.ts): the leader-epochs file, appended and
// fsynced when an epoch starts and rewritten atomically after a truncation,
// and the replica checkpoint, rewritten atomically.

import { open } from "node:fs/promises";
import { join } from "node:path";
import { crc32c } from "@node-rs/crc32";
import type { EpochHistory } from "../replication/epoch-history.ts";
import {
  type CheckpointLoad,
  checkpointFileName,
  decodeCheckpoint,
  type EpochFileLoad,
  encodeCheckpoint,
  encodeEpochFile,
  encodeEpochLine,
  epochFileName,
  loadEpochFile,
  type ReplicaCheckpoint,
} from "../replication/replica-files.ts";
import { fsyncDir, readIfExists, writeFileAtomic } from "./atomic-file.ts";

const crc = (b: Buffer): number => crc32c(b);

/** The epoch history of the partition in `dir`, cut to the recovered log end. */
export async function readEpochFile(dir: string, logEnd: number): Promise<EpochFileLoad> {
  return loadEpochFile(await readIfExists(join(dir, epochFileName)), logEnd);
}

/**
 * Appends one epoch start and fsyncs it (and the directory when the file is
 * new). A torn append is at most a partial last line, which loads as absent.
 */
export async function appendEpoch(dir: string, epoch: number, startOffset: number): Promise<void> {
  const path = join(dir, epochFileName);
  const created = (await readIfExists(path)) === null;
  const fh = await open(path, "a");
  try {
    await fh.appendFile(encodeEpochLine(epoch, startOffset));
    await fh.datasync();
  } finally {
    await fh.close();
  }
  if (created) await fsyncDir(dir);
}

/** Replaces the history (after a truncation dropped entries, or a load dropped a torn line). */
export async function rewriteEpochFile(dir: string, h: EpochHistory): Promise<void> {
  await writeFileAtomic(join(dir, epochFileName), encodeEpochFile(h));
}

export async function readCheckpoint(dir: string): Promise<CheckpointLoad> {
  return decodeCheckpoint(await readIfExists(join(dir, checkpointFileName)), crc);
}

export async function writeCheckpoint(dir: string, c: ReplicaCheckpoint): Promise<void> {
  await writeFileAtomic(join(dir, checkpointFileName), encodeCheckpoint(c, crc));
}
