// Human output helpers: aligned tables, sizes, durations.

import type { Message, TopicInfo } from "../../../client/index.ts";

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

/** One message as a human line: topic/partition@offset, key, payload. */
export function messageLine(m: Message): string {
  return `${m.topic}/${m.partition}@${m.offset}  key=${m.key}  ${payloadText(m.payload)}\n`;
}

/** A two-column key/value block without a header row. */
export function keyValues(rows: Array<[string, string | number]>): string {
  return table(["", ""], rows).split("\n").slice(1).join("\n");
}

export function topicInfoText(t: TopicInfo, groups: Array<{ name: string; lag: number }>): string {
  let s = keyValues([
    ["topic", t.name],
    ["partitions", t.partitions],
    [
      "retention",
      `${duration(t.retentionMs)}, ${t.retentionBytes === 0 ? "no size cap" : bytes(t.retentionBytes)}`,
    ],
    ["visibility timeout", duration(t.visibilityTimeoutMs)],
    [
      "max in flight / acked ahead",
      `${t.maxInFlightPerPartition} / ${t.maxAckedAheadPerPartition} per partition`,
    ],
    ["replication", `factor ${t.replicationFactor}, min in-sync ${t.minInsyncReplicas}`],
    ["created", t.createdAt],
  ]);
  // Replicated partitions: who leads, who holds a copy, who is in sync, at which epoch.
  const replicated = t.partitionStats.some((p) => p.replicas !== undefined);
  const list = (ids: string[] | undefined) => (ids === undefined || ids.length === 0 ? "-" : ids.join(","));
  s += `\n${table(
    [
      "PARTITION",
      replicated ? "LEADER" : "OWNER",
      ...(replicated ? ["REPLICAS", "ISR", "EPOCH"] : []),
      "OLDEST",
      "HWM",
      "SEGMENTS",
      "SIZE",
    ],
    t.partitionStats.map((p) => [
      p.index,
      (p.replicas === undefined ? p.ownerNode : (p.leader ?? "(offline)")) || "-",
      ...(replicated ? [list(p.replicas), list(p.isr), p.leaderEpoch ?? "-"] : []),
      p.oldestOffset,
      p.highWatermark,
      p.segments,
      bytes(p.sizeBytes),
    ]),
  )}`;
  if (groups.length > 0)
    s += `\n${table(
      ["GROUP", "LAG"],
      groups.map((g) => [g.name, g.lag]),
    )}`;
  return s;
}
