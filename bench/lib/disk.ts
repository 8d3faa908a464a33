// The disk's own durable-write bandwidth, measured in the same run: 1 MiB
// writes each followed by fdatasync, as the WAL does at its largest groups.
// Batch produce can at best approach this (the WAL and the partition log
// each write every byte once).

import { open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export async function diskSyncMiBPerSec(seconds: number, dir = tmpdir()): Promise<number> {
  const path = join(dir, `narad-disk-bench-${process.pid}`);
  const fh = await open(path, "w");
  const block = Buffer.alloc(1 << 20, 7);
  let written = 0;
  const start = performance.now();
  try {
    while (performance.now() - start < seconds * 1000) {
      await fh.write(block, 0, block.length, written);
      await fh.datasync();
      written += block.length;
    }
  } finally {
    await fh.close();
    await rm(path, { force: true });
  }
  return written / (1 << 20) / ((performance.now() - start) / 1000);
}
