// The small files a move source keeps in a partition directory so that a
// restart remembers what the move was promised:
//
//   move-freeze  a freeze is in force (its token). A destination may install
//                its copy counting on that freeze, so a restarted source
//                freezes the partition again, for a whole ttl, under the same
//                token, before its dispatcher can commit into it.
//   moved-away   the partition was given away ("handoff" when the
//                destination confirmed the install); the copy is deleted
//                once the new owner proves it holds every byte.
//
// Both are written durably (temp file, fsync, rename, fsync of the directory)
// before the answer that depends on them goes out. Removing one is not made
// durable: a mark that reappears after a crash only freezes a partition for
// one more ttl, or keeps a copy until it is verified again.

import { constants as fsConstants } from "node:fs";
import { open, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";

export const freezeMarkFile = "move-freeze";
export const movedAwayFile = "moved-away";
export const handoffMark = "handoff";

export async function writeMark(dir: string, name: string, content: string): Promise<void> {
  const path = join(dir, name);
  const tmp = `${path}.tmp`;
  const file = await open(tmp, "w", 0o644);
  try {
    await file.writeFile(content);
    await file.datasync();
  } finally {
    await file.close();
  }
  await rename(tmp, path);
  const d = await open(dir, fsConstants.O_RDONLY);
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

/** The mark's content; undefined when it is absent. */
export async function readMark(dir: string, name: string): Promise<string | undefined> {
  try {
    return await readFile(join(dir, name), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

export async function removeMark(dir: string, name: string): Promise<void> {
  await rm(join(dir, name), { force: true });
}
