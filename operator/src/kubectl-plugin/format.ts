// Text helpers of the plugin's output: aligned columns and kubectl-style ages.

/** Rows under a header, columns padded to their widest cell, trailing spaces trimmed. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  return [header, ...rows].map((cells) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd(),
  );
}

/** "45s", "12m", "3h", "2d" since an RFC 3339 time (kubectl's AGE column, coarser); "-" if unparsable. */
export function formatAge(iso: string, nowMs: number): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return "-";
  const seconds = Math.max(0, Math.floor((nowMs - at) / 1000));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}
