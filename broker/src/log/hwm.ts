// The partition's `hwm` file: 8 bytes big-endian, rewritten in place and
// fdatasync'd. It may lag the in-memory HWM (persisted at most every
// hwmPersistIntervalMs, and on close). Recovery does not take visibility
// from it (see recovery.ts); it is a floor for offset assignment: offsets
// below a persisted HWM may have been served, so they are never reused even
// if the frames holding them were lost to corruption.

import { join } from "node:path";
import type { LogFile, LogIo } from "./log-io.ts";

export const hwmFileName = "hwm";
const hwmBytes = 8;
const twoTo32 = 0x1_0000_0000;

/** The persisted HWM, or null when the file is missing or not exactly 8 bytes. */
export async function readHwmFile(io: LogIo, dir: string): Promise<number | null> {
  const buf = await io.readSmall(join(dir, hwmFileName));
  if (buf === null || buf.length !== hwmBytes) return null;
  const hi = buf.readUInt32BE(0);
  const value = hi * twoTo32 + buf.readUInt32BE(4);
  return Number.isSafeInteger(value) ? value : null;
}

/** Keeps the hwm file open and rewrites its 8 bytes. */
export class HwmFile {
  readonly #file: LogFile;
  readonly #buf = Buffer.alloc(hwmBytes);
  persisted: number;

  private constructor(file: LogFile, persisted: number) {
    this.#file = file;
    this.persisted = persisted;
  }

  /**
   * Opens (creating when missing) and writes `value` durably.
   * Fsync order: write 8 bytes → fdatasync → fsync(dir) when created, so the
   * directory entry survives. Crash point: before the dir fsync the file
   * may vanish; readHwmFile then returns null, which is harmless.
   */
  static async open(io: LogIo, dir: string, value: number): Promise<HwmFile> {
    const path = join(dir, hwmFileName);
    const existed = await io.exists(path);
    const file = await io.open(path, true);
    // A file of the wrong size (never written by us) is reset before use.
    if ((await file.size()) !== hwmBytes) await file.truncate(hwmBytes);
    const hwm = new HwmFile(file, -1);
    await hwm.write(value);
    if (!existed) await io.fsyncDir(dir);
    return hwm;
  }

  /** Rewrites the value in place (one 8-byte pwrite, within one sector) → fdatasync. */
  async write(value: number): Promise<void> {
    this.#buf.writeUInt32BE(Math.floor(value / twoTo32), 0);
    this.#buf.writeUInt32BE(value >>> 0, 4);
    await this.#file.writev([this.#buf], 0);
    await this.#file.datasync();
    this.persisted = value;
  }

  close(): Promise<void> {
    return this.#file.close();
  }
}
