// The platform code reports progress as plain lines, so callers can route it
// to stderr, a test logger or a file without adapting to a logging library.
export type Log = (line: string) => void;

/** A Log that writes timestamped lines to stderr. */
export function stderrLog(prefix = "platform"): Log {
  return (line) => {
    const time = new Date().toISOString().slice(11, 19);
    process.stderr.write(`[${prefix} ${time}] ${line}\n`);
  };
}

/** A Log that drops everything (quiet tests). */
export const silentLog: Log = () => {};
