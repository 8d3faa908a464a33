// A thin, injectable file-I/O surface for the storage engines. Production
// uses nodeFileIo (node:fs/promises); tests wrap it to count operations and
// inject faults (broker/src/testing/faulty-io.ts). Only the calls the WAL and
// logs need, each mapping to one system call so fsync order stays visible.

import { constants as fsConstants } from "node:fs";
import * as fsp from "node:fs/promises";

export interface FileHandleIo {
  /** Positional write; resolves with the bytes written (may be short). */
  write(buf: Buffer, offset: number, length: number, position: number): Promise<number>;
  /** Positional read; resolves with the bytes read (0 at end of file). */
  read(buf: Buffer, offset: number, length: number, position: number): Promise<number>;
  /** fdatasync(2): data and the metadata needed to read it back (size). */
  datasync(): Promise<void>;
  /** fsync(2). */
  sync(): Promise<void>;
  truncate(length: number): Promise<void>;
  size(): Promise<number>;
  close(): Promise<void>;
}

/** How a file is opened: read-only, read-write existing, or create-exclusive read-write. */
export type OpenMode = "read" | "readWrite" | "createExclusive" | "createOrTruncate";

export interface FileIo {
  open(path: string, mode: OpenMode): Promise<FileHandleIo>;
  /** Entry names in `dir`; [] when the directory is missing. */
  readdir(dir: string): Promise<string[]>;
  /** Whole-file read; undefined when the file is missing. */
  readFile(path: string): Promise<Buffer | undefined>;
  /** mkdir -p; resolves true when the directory was created by this call. */
  mkdirp(dir: string): Promise<boolean>;
  rename(from: string, to: string): Promise<void>;
  /** Resolves false when the file was already gone. */
  unlink(path: string): Promise<boolean>;
  /** fsync the directory itself, making created/renamed/removed names durable. */
  fsyncDir(dir: string): Promise<void>;
}

const openFlags: Record<OpenMode, number> = {
  read: fsConstants.O_RDONLY,
  readWrite: fsConstants.O_RDWR,
  createExclusive: fsConstants.O_RDWR | fsConstants.O_CREAT | fsConstants.O_EXCL,
  createOrTruncate: fsConstants.O_RDWR | fsConstants.O_CREAT | fsConstants.O_TRUNC,
};

function isErrno(err: unknown, code: string): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === code;
}

function wrapHandle(h: fsp.FileHandle): FileHandleIo {
  return {
    write: async (buf, offset, length, position) =>
      (await h.write(buf, offset, length, position)).bytesWritten,
    read: async (buf, offset, length, position) => (await h.read(buf, offset, length, position)).bytesRead,
    datasync: () => h.datasync(),
    sync: () => h.sync(),
    truncate: (length) => h.truncate(length),
    size: async () => (await h.stat()).size,
    close: () => h.close(),
  };
}

export const nodeFileIo: FileIo = {
  open: async (path, mode) => wrapHandle(await fsp.open(path, openFlags[mode], 0o644)),
  readdir: async (dir) => {
    try {
      return await fsp.readdir(dir);
    } catch (err) {
      if (isErrno(err, "ENOENT")) return [];
      throw err;
    }
  },
  readFile: async (path) => {
    try {
      return await fsp.readFile(path);
    } catch (err) {
      if (isErrno(err, "ENOENT")) return undefined;
      throw err;
    }
  },
  mkdirp: async (dir) => (await fsp.mkdir(dir, { recursive: true })) !== undefined,
  rename: (from, to) => fsp.rename(from, to),
  unlink: async (path) => {
    try {
      await fsp.unlink(path);
      return true;
    } catch (err) {
      if (isErrno(err, "ENOENT")) return false;
      throw err;
    }
  },
  fsyncDir: async (dir) => {
    const h = await fsp.open(dir, fsConstants.O_RDONLY);
    try {
      await h.sync();
    } finally {
      await h.close();
    }
  },
};

/** Writes all of buf[0, length) at `position`, looping over short writes. */
export async function writeFully(
  h: FileHandleIo,
  buf: Buffer,
  length: number,
  position: number,
): Promise<void> {
  let done = 0;
  while (done < length) {
    const n = await h.write(buf, done, length - done, position + done);
    if (n <= 0) throw new Error(`short write: ${done}/${length} bytes at ${position}`);
    done += n;
  }
}

/** Reads up to `length` bytes at `position`; resolves with the bytes read (short only at EOF). */
export async function readFully(
  h: FileHandleIo,
  buf: Buffer,
  length: number,
  position: number,
): Promise<number> {
  let done = 0;
  while (done < length) {
    const n = await h.read(buf, done, length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}
