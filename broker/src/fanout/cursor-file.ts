// A fan-out cursor's durable position: <parent partition dir>/fanout-<child>.offset,
// JSON {"epoch": "<attach epoch>", "next_offset": N}, as Narad (Go) keeps it.
// It sits next to the log it indexes, so deleting the parent partition
// deletes it too.
//
// Write order and crash points:
//   1. write fanout-<child>.offset.tmp, fsync it  (crash → tmp ignored, old value stands)
//   2. rename tmp → fanout-<child>.offset          (crash → old or new file, both whole)
//   3. fsync the partition dir                      (after this the new value survives power loss)
// The partition dir is never created here: once a topic deletion removed it,
// the write fails with ENOENT instead of resurrecting the directory.

import { createHash } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import * as fsp from "node:fs/promises";
import { join } from "node:path";

export interface CursorPosition {
  epoch: string;
  nextOffset: number;
}

const prefix = "fanout-";
const suffix = ".offset";
/** Longest child name used as is; longer ones (names go to 255) are hashed to stay under NAME_MAX. */
const maxPlainName = 200;

export function cursorFileName(child: string): string {
  const name = child.length <= maxPlainName ? child : `h${createHash("sha256").update(child).digest("hex")}`;
  return `${prefix}${name}${suffix}`;
}

function errno(err: unknown): string | undefined {
  return typeof err === "object" && err !== null ? String((err as { code?: unknown }).code) : undefined;
}

/** Parses a cursor file's text; anything malformed reads as no cursor (the cursor re-derives). */
export function parseCursor(text: string): CursorPosition | undefined {
  try {
    const v = JSON.parse(text) as { epoch?: unknown; next_offset?: unknown };
    if (typeof v.epoch !== "string" || v.epoch === "") return undefined;
    if (typeof v.next_offset !== "number" || !Number.isSafeInteger(v.next_offset) || v.next_offset < 0)
      return undefined;
    return { epoch: v.epoch, nextOffset: v.next_offset };
  } catch {
    return undefined;
  }
}

/** What a cursor found in its position file at start. */
export type SavedCursor =
  | { state: "missing" }
  | { state: "malformed" }
  | { state: "ok"; position: CursorPosition };

export async function readCursor(partitionDir: string, child: string): Promise<CursorPosition | undefined> {
  const saved = await readCursorFile(partitionDir, child);
  return saved.state === "ok" ? saved.position : undefined;
}

/** The cursor file as found: missing, malformed (torn, corrupt, edited) or a position. */
export async function readCursorFile(partitionDir: string, child: string): Promise<SavedCursor> {
  let text: string;
  try {
    text = await fsp.readFile(join(partitionDir, cursorFileName(child)), "utf8");
  } catch (err) {
    if (errno(err) === "ENOENT") return { state: "missing" };
    throw err;
  }
  const position = parseCursor(text);
  return position === undefined ? { state: "malformed" } : { state: "ok", position };
}

/** Durably replaces the cursor (order above). Rejects with ENOENT when the partition dir is gone. */
export function writeCursor(partitionDir: string, child: string, pos: CursorPosition): Promise<void> {
  return writeCursorFile(partitionDir, cursorFileName(child), pos);
}

/** Whether `name` is a cursor file's name (cursorFileName's shape; never a path). */
export function isCursorFileName(name: string): boolean {
  return /^fanout-[A-Za-z0-9._-]{1,220}\.offset$/.test(name) && !name.includes("..");
}

/**
 * Every cursor position kept in a partition dir, by file name (replication
 * sends them to followers, which keep them under the same names).
 */
export async function listCursorFiles(
  partitionDir: string,
): Promise<Array<{ file: string; position: CursorPosition }>> {
  let names: string[];
  try {
    names = await fsp.readdir(partitionDir);
  } catch (err) {
    if (errno(err) === "ENOENT") return [];
    throw err;
  }
  const out: Array<{ file: string; position: CursorPosition }> = [];
  for (const file of names.filter(isCursorFileName).sort()) {
    const text = await fsp.readFile(join(partitionDir, file), "utf8").catch(() => undefined);
    const position = text === undefined ? undefined : parseCursor(text);
    if (position !== undefined) out.push({ file, position });
  }
  return out;
}

/** Durably replaces the cursor file `fileName` (a cursorFileName) in the partition dir. */
export async function writeCursorFile(
  partitionDir: string,
  fileName: string,
  pos: CursorPosition,
): Promise<void> {
  if (!isCursorFileName(fileName)) throw new Error(`not a cursor file name: ${JSON.stringify(fileName)}`);
  const file = join(partitionDir, fileName);
  const tmp = `${file}.tmp`;
  const h = await fsp.open(tmp, "w");
  try {
    await h.writeFile(`${JSON.stringify({ epoch: pos.epoch, next_offset: pos.nextOffset })}\n`);
    await h.sync();
  } finally {
    await h.close();
  }
  await fsp.rename(tmp, file);
  const d = await fsp.open(partitionDir, fsConstants.O_RDONLY);
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

/**
 * Removes a stopped cursor's file, only while it still holds that cursor's
 * epoch: the file is named by the child's name, so a child deleted and
 * re-created (or detached and re-attached) under that name may already have
 * a new cursor whose position this must not erase. The caller serialises
 * this with that cursor's writes (engine.ts).
 */
export async function removeCursor(partitionDir: string, child: string, epoch: string): Promise<void> {
  const saved = await readCursorFile(partitionDir, child).catch(() => undefined);
  if (saved?.state !== "ok" || saved.position.epoch !== epoch) return;
  await fsp.rm(join(partitionDir, cursorFileName(child)), { force: true });
}
