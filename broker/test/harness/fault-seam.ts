// Fault seam for process-level tests (faulty-serve.ts starts the broker
// with it): when NARAD_TEST_FAULTS names a control file, the ingress WAL's
// file I/O goes through faulty-io driven by that file, so a test can make fdatasync fail (EIO), writes fail (ENOSPC) or
// fdatasync slow, on a running broker. Unset, it returns
// the real I/O untouched. None of this is in the broker's production code or
// its image: the seam is passed in through startBroker's walIo option. The control file is JSON, re-read every
// 100 ms; a missing or empty file means no faults:
//   {"datasyncError": "EIO", "writeError": "ENOSPC", "datasyncDelayMs": 200}

import { readFileSync } from "node:fs";
import type { FileIo } from "../../src/storage/file-io.ts";
import { createFaultyIo } from "../../src/testing/faulty-io.ts";

export interface FaultControl {
  datasyncError?: string;
  writeError?: string;
  datasyncDelayMs?: number;
}

function readControl(path: string): FaultControl {
  try {
    const text = readFileSync(path, "utf8").trim();
    return text === "" ? {} : (JSON.parse(text) as FaultControl);
  } catch {
    return {};
  }
}

function errno(code: string, op: string, path: string): Error {
  return Object.assign(new Error(`${code}: test fault (NARAD_TEST_FAULTS), ${op} '${path}'`), { code, path });
}

/** `inner` itself unless `controlFile` is set. */
export function withTestFaults(inner: FileIo, controlFile: string | undefined): FileIo {
  if (controlFile === undefined || controlFile === "") return inner;
  let control = readControl(controlFile);
  setInterval(() => {
    control = readControl(controlFile);
  }, 100).unref();
  const io = createFaultyIo(inner);
  io.setHook((op, path) => {
    const c = control;
    if (op === "write" && c.writeError !== undefined) return Promise.reject(errno(c.writeError, op, path));
    if (op !== "datasync") return undefined;
    const delay = c.datasyncDelayMs ?? 0;
    const fail = c.datasyncError;
    if (delay <= 0 && fail === undefined) return undefined;
    return new Promise<void>((resolve, reject) =>
      setTimeout(() => (fail === undefined ? resolve() : reject(errno(fail, op, path))), delay),
    );
  });
  return io;
}
