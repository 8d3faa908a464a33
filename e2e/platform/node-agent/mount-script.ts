// Builds the shell prologue that runs inside `unshare --mount` (pure).
//
// Each container gets a private mount namespace so its volumes can appear at
// their real `mountPath` without touching the host's mount table:
//
//   unshare --mount --propagation private sh -c '<mounts>; exec "$@"' sh <argv...>
//
// unshare without --fork execs in place, so the PID we spawn is the PID that
// ends up running the container's program and signals reach it directly.

export interface BindMount {
  /** Host path (a directory, or a file for subPath mounts of single files). */
  readonly source: string;
  readonly target: string;
  readonly readOnly: boolean;
  readonly isFile: boolean;
}

export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

function parentDir(p: string): string {
  const i = p.lastIndexOf("/");
  return i <= 0 ? "/" : p.slice(0, i);
}

/** Shallow targets first, so a mount at /a/b lands on top of one at /a rather than under it. */
export function mountScript(mounts: readonly BindMount[]): string {
  const sorted = [...mounts].sort((a, b) => a.target.split("/").length - b.target.split("/").length);
  const lines = ["set -e"];
  for (const m of sorted) {
    const t = shellQuote(m.target);
    if (m.isFile) {
      lines.push(`mkdir -p ${shellQuote(parentDir(m.target))}`, `[ -e ${t} ] || : > ${t}`);
    } else {
      lines.push(`mkdir -p ${t}`);
    }
    lines.push(`mount --bind ${shellQuote(m.source)} ${t}`);
    if (m.readOnly) lines.push(`mount -o remount,bind,ro ${t}`);
  }
  lines.push(`exec "$@"`);
  return lines.join("\n");
}

export function unshareArgv(mounts: readonly BindMount[], argv: readonly string[]): string[] {
  return ["unshare", "--mount", "--propagation", "private", "sh", "-c", mountScript(mounts), "sh", ...argv];
}
