// The file operations partition logs need, behind an interface so tests can
// inject faults (failing fsync, corrupted read-back) without touching disk
// semantics elsewhere. `nodeLogIo` is the real node:fs implementation.
// (When broker/src/storage grows a shared Storage interface, this should
// become an adapter over it.)

import { constants as fsConstants } from "node:fs";
import * as fsp from "node:fs/promises";

export interface LogFile {
  /** Positional read; returns bytes read (short only at end of file). */
  read(buf: Buffer, bufOffset: number, length: number, position: number): Promise<number>;
  /** Positional gather write of every byte of `bufs`, starting at `position`. */
  writev(bufs: readonly Buffer[], position: number): Promise<void>;
  /** fdatasync: data and the metadata needed to read it back (file size). */
  datasync(): Promise<void>;
  truncate(length: number): Promise<void>;
  size(): Promise<number>;
  close(): Promise<void>;
}

export interface LogIo {
  /** Opens an existing file read-write, or creates it when `create` is set. */
  open(path: string, create: boolean): Promise<LogFile>;
  /** File names in `dir`; [] when the directory does not exist. */
  list(dir: string): Promise<string[]>;
  mkdirp(dir: string): Promise<void>;
  unlink(path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  removeTree(path: string): Promise<void>;
  /** fsync on the directory so created, renamed and unlinked entries are durable. */
  fsyncDir(dir: string): Promise<void>;
  /** Whole small file, or null when it does not exist. */
  readSmall(path: string): Promise<Buffer | null>;
  exists(path: string): Promise<boolean>;
}

function isNotFound(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === "ENOENT";
}

class NodeLogFile implements LogFile {
  readonly #fh: fsp.FileHandle;
  constructor(fh: fsp.FileHandle) {
    this.#fh = fh;
  }
  async read(buf: Buffer, bufOffset: number, length: number, position: number): Promise<number> {
    let done = 0;
    // pread may return short counts before EOF; loop until EOF or filled.
    while (done < length) {
      const { bytesRead } = await this.#fh.read(buf, bufOffset + done, length - done, position + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return done;
  }
  async writev(bufs: readonly Buffer[], position: number): Promise<void> {
    let pending = bufs.filter((b) => b.length > 0);
    let pos = position;
    while (pending.length > 0) {
      const { bytesWritten } = await this.#fh.writev(pending, pos);
      pos += bytesWritten;
      let left = bytesWritten;
      const rest: Buffer[] = [];
      for (const b of pending) {
        if (left >= b.length) left -= b.length;
        else {
          rest.push(left > 0 ? b.subarray(left) : b);
          left = 0;
        }
      }
      pending = rest;
    }
  }
  datasync(): Promise<void> {
    return this.#fh.datasync();
  }
  truncate(length: number): Promise<void> {
    return this.#fh.truncate(length);
  }
  async size(): Promise<number> {
    return (await this.#fh.stat()).size;
  }
  close(): Promise<void> {
    return this.#fh.close();
  }
}

export const nodeLogIo: LogIo = {
  async open(path, create) {
    const flags = create ? fsConstants.O_RDWR | fsConstants.O_CREAT : fsConstants.O_RDWR;
    return new NodeLogFile(await fsp.open(path, flags, 0o644));
  },
  async list(dir) {
    try {
      return await fsp.readdir(dir);
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  },
  async mkdirp(dir) {
    await fsp.mkdir(dir, { recursive: true });
  },
  async unlink(path) {
    await fsp.unlink(path);
  },
  async rename(from, to) {
    await fsp.rename(from, to);
  },
  async removeTree(path) {
    await fsp.rm(path, { recursive: true, force: true });
  },
  async fsyncDir(dir) {
    const fh = await fsp.open(dir, fsConstants.O_RDONLY);
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  },
  async readSmall(path) {
    try {
      return await fsp.readFile(path);
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  },
  async exists(path) {
    try {
      await fsp.stat(path);
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  },
};
