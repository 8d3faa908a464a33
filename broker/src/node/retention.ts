// The retention timer: every --retention-check-interval, sealed segments past
// their topic's retention_ms / retention_bytes are deleted.

import type { Logger } from "pino";
import type { LogStore } from "../log/log-store.ts";
import type { Metastore } from "../meta/types.ts";

/** Starts the timer (unref'd: it never keeps the process alive); returns its stop. */
export function startRetentionTimer(d: {
  metastore: Pick<Metastore, "listTopics">;
  logs: Pick<LogStore, "retentionPass">;
  intervalMs: number;
  logger: Logger;
}): () => void {
  const retentionPass = async () => {
    const policies = new Map(
      d.metastore
        .listTopics()
        .map((t) => [t.name, { retentionMs: t.retention_ms, maxBytes: t.retention_bytes }]),
    );
    const deleted = await d.logs.retentionPass(policies);
    if (deleted > 0) d.logger.info({ segments: deleted }, "retention removed sealed segments");
  };
  const timer = setInterval(() => {
    retentionPass().catch((err: unknown) => d.logger.error({ err }, "retention pass failed"));
  }, d.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
