// A FileIo test double over the real file system: counts every operation
// and injects faults (errno errors) or delays before chosen operations, so
// tests can hit each named crash/failure point of the storage engines.

import { type FileHandleIo, type FileIo, nodeFileIo } from "../storage/file-io.ts";

export type IoOp =
  | "open"
  | "write"
  | "read"
  | "datasync"
  | "sync"
  | "truncate"
  | "size"
  | "close"
  | "readdir"
  | "readFile"
  | "mkdirp"
  | "rename"
  | "unlink"
  | "fsyncDir";

export interface FaultRule {
  op: IoOp;
  /** Only paths containing this substring match (all paths when omitted). */
  pathIncludes?: string;
  /** How many matching calls fail; Infinity when omitted. */
  times?: number;
  /** errno code of the thrown error (default EIO). */
  code?: string;
  /**
   * For "write" only: write this many bytes of the request first, then fail
   * (a disk that fills up in the middle of a write).
   */
  partialBytes?: number;
}

export interface FaultyIo extends FileIo {
  readonly counts: Record<IoOp, number>;
  /** Every matching operation after this call fails with an errno-style error. */
  inject(rule: FaultRule): void;
  /** Runs (and awaits) before every operation: use it to delay or gate I/O. */
  setHook(hook: ((op: IoOp, path: string) => Promise<void> | undefined) | undefined): void;
  resetCounts(): void;
}

function errnoError(code: string, op: IoOp, path: string): Error {
  return Object.assign(new Error(`${code}: injected fault, ${op} '${path}'`), { code, syscall: op, path });
}

const allOps: IoOp[] = [
  "open",
  "write",
  "read",
  "datasync",
  "sync",
  "truncate",
  "size",
  "close",
  "readdir",
  "readFile",
  "mkdirp",
  "rename",
  "unlink",
  "fsyncDir",
];

function zeroCounts(): Record<IoOp, number> {
  const c = {} as Record<IoOp, number>;
  for (const op of allOps) c[op] = 0;
  return c;
}

export function createFaultyIo(inner: FileIo = nodeFileIo): FaultyIo {
  const rules: Array<FaultRule & { left: number }> = [];
  let hook: ((op: IoOp, path: string) => Promise<void> | undefined) | undefined;
  const self = { counts: zeroCounts() };

  async function before(op: IoOp, path: string): Promise<void> {
    self.counts[op]++;
    const pending = hook?.(op, path);
    if (pending !== undefined) await pending;
    for (const rule of rules) {
      if (rule.op !== op || rule.left <= 0) continue;
      if (rule.pathIncludes !== undefined && !path.includes(rule.pathIncludes)) continue;
      rule.left--;
      throw Object.assign(errnoError(rule.code ?? "EIO", op, path), { partialBytes: rule.partialBytes });
    }
  }

  function wrap(path: string, h: FileHandleIo): FileHandleIo {
    return {
      write: async (buf, offset, length, position) => {
        try {
          await before("write", path);
        } catch (err) {
          const partial = (err as { partialBytes?: number }).partialBytes;
          if (partial !== undefined && partial > 0)
            await h.write(buf, offset, Math.min(partial, length), position);
          throw err;
        }
        return h.write(buf, offset, length, position);
      },
      read: async (buf, offset, length, position) => {
        await before("read", path);
        return h.read(buf, offset, length, position);
      },
      datasync: async () => {
        await before("datasync", path);
        return h.datasync();
      },
      sync: async () => {
        await before("sync", path);
        return h.sync();
      },
      truncate: async (length) => {
        await before("truncate", path);
        return h.truncate(length);
      },
      size: async () => {
        await before("size", path);
        return h.size();
      },
      close: async () => {
        await before("close", path);
        return h.close();
      },
    };
  }

  return {
    get counts() {
      return self.counts;
    },
    inject: (rule) => {
      rules.push({ ...rule, left: rule.times ?? Number.POSITIVE_INFINITY });
    },
    setHook: (h) => {
      hook = h;
    },
    resetCounts: () => {
      self.counts = zeroCounts();
    },
    open: async (path, mode) => {
      await before("open", path);
      return wrap(path, await inner.open(path, mode));
    },
    readdir: async (dir) => {
      await before("readdir", dir);
      return inner.readdir(dir);
    },
    readFile: async (path) => {
      await before("readFile", path);
      return inner.readFile(path);
    },
    mkdirp: async (dir) => {
      await before("mkdirp", dir);
      return inner.mkdirp(dir);
    },
    rename: async (from, to) => {
      await before("rename", to);
      return inner.rename(from, to);
    },
    unlink: async (path) => {
      await before("unlink", path);
      return inner.unlink(path);
    },
    fsyncDir: async (dir) => {
      await before("fsyncDir", dir);
      return inner.fsyncDir(dir);
    },
  };
}
