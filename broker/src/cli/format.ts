// Human output helpers: aligned tables, sizes, durations.

export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return (
    cells
      .map((r) =>
        r
          .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
          .join("  ")
          .trimEnd(),
      )
      .join("\n") + "\n"
  );
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

export function duration(ms: number): string {
  if (ms === 0) return "0";
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000}d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

export function count(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/** A payload as one line of text. */
export function payloadText(payload: unknown): string {
  if (typeof payload === "string") return payload;
  if (Buffer.isBuffer(payload)) return `base64:${payload.toString("base64")}`;
  return JSON.stringify(payload);
}
