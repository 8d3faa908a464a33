// A group's durable frontier: <partition dir>/consumers/<group>.offset,
// 8 bytes big-endian, the first offset not yet acked. Everything below it
// is never redelivered after a restart; everything at or above it may be
// (at-least-once).
//
// Write order and crash points:
//   1. mkdir consumers/ (non-recursive: a partition dir removed by a topic
//      deletion is never recreated; the write fails with ENOENT instead)
//   2. write <group>.offset.tmp, fsync it   (crash → tmp ignored, old value stands)
//   3. rename tmp → <group>.offset          (crash → old or new file, both whole)
//   4. fsync consumers/                     (after this the new value survives power loss)

import { constants as fsConstants } from "node:fs";
import * as fsp from "node:fs/promises";
import { join } from "node:path";

export const consumersDirName = "consumers";
const suffix = ".offset";
const tmpSuffix = ".offset.tmp";
const frontierBytes = 8;
const twoTo32 = 0x1_0000_0000;

function errno(err: unknown): string | undefined {
  return typeof err === "object" && err !== null ? String((err as { code?: unknown }).code) : undefined;
}

export function frontierPath(partitionDir: string, group: string): string {
  return join(partitionDir, consumersDirName, `${group}${suffix}`);
}

/** The persisted frontier, or undefined when missing; malformed files read as undefined. */
export async function readFrontier(partitionDir: string, group: string): Promise<number | undefined> {
  let buf: Buffer;
  try {
    buf = await fsp.readFile(frontierPath(partitionDir, group));
  } catch (err) {
    if (errno(err) === "ENOENT") return undefined;
    throw err;
  }
  if (buf.length !== frontierBytes) return undefined;
  const v = buf.readUInt32BE(0) * twoTo32 + buf.readUInt32BE(4);
  return Number.isSafeInteger(v) ? v : undefined;
}

/** Group names with a frontier file in this partition dir. */
export async function listFrontierGroups(partitionDir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fsp.readdir(join(partitionDir, consumersDirName));
  } catch (err) {
    if (errno(err) === "ENOENT") return [];
    throw err;
  }
  return names
    .filter((n) => n.endsWith(suffix) && n.length > suffix.length)
    .map((n) => n.slice(0, -suffix.length));
}

async function fsyncDir(dir: string): Promise<void> {
  const h = await fsp.open(dir, fsConstants.O_RDONLY);
  try {
    await h.sync();
  } finally {
    await h.close();
  }
}

/** Durably replaces the frontier (order above). */
export async function writeFrontier(partitionDir: string, group: string, value: number): Promise<void> {
  const dir = join(partitionDir, consumersDirName);
  try {
    await fsp.mkdir(dir);
    await fsyncDir(partitionDir);
  } catch (err) {
    if (errno(err) !== "EEXIST") throw err;
  }
  const buf = Buffer.alloc(frontierBytes);
  buf.writeUInt32BE(Math.floor(value / twoTo32), 0);
  buf.writeUInt32BE(value >>> 0, 4);
  const tmp = join(dir, `${group}${tmpSuffix}`);
  const h = await fsp.open(tmp, "w");
  try {
    await h.writeFile(buf);
    await h.sync();
  } finally {
    await h.close();
  }
  await fsp.rename(tmp, frontierPath(partitionDir, group));
  await fsyncDir(dir);
}

/** Removes a group's frontier (and any temp file); resolves whether a file existed. */
export async function removeFrontier(partitionDir: string, group: string): Promise<boolean> {
  const dir = join(partitionDir, consumersDirName);
  let existed = false;
  for (const name of [`${group}${suffix}`, `${group}${tmpSuffix}`]) {
    try {
      await fsp.unlink(join(dir, name));
      existed ||= name.endsWith(suffix);
    } catch (err) {
      if (errno(err) !== "ENOENT") throw err;
    }
  }
  if (existed) await fsyncDir(dir);
  return existed;
}
