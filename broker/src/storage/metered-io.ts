// Wraps a FileIo so every fdatasync is timed and every write sized, without
// the WAL knowing about metrics: one write + one fdatasync per group commit
// makes these the group-commit histograms.

import type { FileHandleIo, FileIo } from "./file-io.ts";

export interface IoMeter {
  write(bytes: number): void;
  sync(seconds: number): void;
}

export function meteredIo(inner: FileIo, meter: IoMeter): FileIo {
  const wrap = (h: FileHandleIo): FileHandleIo => ({
    write: async (buf, offset, length, position) => {
      const n = await h.write(buf, offset, length, position);
      meter.write(n);
      return n;
    },
    read: (buf, offset, length, position) => h.read(buf, offset, length, position),
    datasync: async () => {
      const t0 = performance.now();
      await h.datasync();
      meter.sync((performance.now() - t0) / 1000);
    },
    sync: async () => {
      const t0 = performance.now();
      await h.sync();
      meter.sync((performance.now() - t0) / 1000);
    },
    truncate: (length) => h.truncate(length),
    size: () => h.size(),
    close: () => h.close(),
  });
  return {
    ...inner,
    open: async (path, mode) => wrap(await inner.open(path, mode)),
  };
}
