// Polls a file for changes by re-stating its path (not watching an inode):
// Kubernetes updates Secret volumes by swapping a symlink, which fs.watch on
// the old inode would miss. A change of device, inode, size or mtime triggers
// a read; identical bytes are ignored. Errors go to onError and the poll goes
// on, so a briefly missing file (mid-swap) is picked up when it returns.

import { readFile, stat } from "node:fs/promises";

export interface WatchedFile {
  close(): void;
}

export function watchFile(
  path: string,
  intervalMs: number,
  onChange: (content: Buffer) => void,
  onError: (err: Error) => void,
  /** Bytes already loaded by the caller (no change event for those). */
  initial?: Buffer,
): WatchedFile {
  let lastKey = "";
  let lastContent = initial;
  let running = false;
  let lastErrorMessage = "";
  const poll = async () => {
    if (running) return;
    running = true;
    try {
      const st = await stat(path);
      const key = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
      if (key === lastKey) return;
      const content = await readFile(path);
      lastKey = key;
      lastErrorMessage = "";
      if (lastContent !== undefined && content.equals(lastContent)) return;
      lastContent = content;
      onChange(content);
    } catch (err) {
      // Report a persisting error once, not every poll.
      const message = (err as Error).message;
      if (message !== lastErrorMessage) onError(err as Error);
      lastErrorMessage = message;
      lastKey = "";
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void poll(), intervalMs);
  timer.unref();
  return { close: () => clearInterval(timer) };
}
