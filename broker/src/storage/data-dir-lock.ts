// Refuses to start a second broker on the same data directory: two WAL
// writers would interleave frames. The lock file holds the owner's pid; a
// lock left by a dead process (kill -9) is taken over.

import { open, readFile, unlink } from "node:fs/promises";
import { join } from "node:path";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export async function acquireDataDirLock(dataDir: string): Promise<{ release(): Promise<void> }> {
  const path = join(dataDir, "LOCK");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fh = await open(path, "wx");
      await fh.writeFile(`${process.pid}\n`);
      await fh.sync();
      await fh.close();
      return { release: () => unlink(path).catch(() => undefined) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const pid = Number((await readFile(path, "utf8").catch(() => "")).trim());
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new Error(`data dir ${dataDir} is in use by process ${pid}`);
      }
      await unlink(path).catch(() => undefined);
    }
  }
  throw new Error(`could not lock data dir ${dataDir}`);
}
