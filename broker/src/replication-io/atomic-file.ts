// Small files replaced atomically: write a temp file, fsync it, rename it
// over the target, fsync the directory. A crash at any step leaves either
// the old file or the new one under the target name, never a torn one (a
// leftover temp file is ignored by readers and overwritten next time).

import { open, readFile, rename } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

function isNotFound(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === "ENOENT";
}

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export async function writeFileAtomic(path: string, data: Buffer): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.tmp`);
  const fh = await open(tmp, "w");
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  // Crash point: before the rename the target is the old file; after it, the new one.
  await rename(tmp, path);
  await fsyncDir(dirname(path));
}

/** The whole file, or null when it does not exist. */
export async function readIfExists(path: string): Promise<Buffer | null> {
  try {
    return await readFile(path);
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}
