// A node's ready/draining state: what /readyz, produce admission and the
// cluster Ingest handler ask before they accept anything.

import type { Logger } from "pino";
import type { Metastore } from "../meta/types.ts";
import type { Lifecycle } from "../services.ts";

export interface NodeLifecycle {
  /** The port the HTTP routes see (services.lifecycle). */
  lifecycle: Lifecycle;
  /** Startup finished: listening, storage recovered. */
  markReady(): void;
  /** Raw flags, without the decommissioning view (the Ingest refusal and admin status read these). */
  isReady(): boolean;
  isDraining(): boolean;
}

export function createNodeLifecycle(d: {
  nodeId: string;
  metastore: Pick<Metastore, "members">;
  logger: Logger;
  walPending: () => number;
  waitDrained: (timeoutMs: number) => Promise<boolean>;
}): NodeLifecycle {
  // A Decommissioning member refuses new produce (clients go elsewhere) but
  // keeps dispatching its WAL and serving reads until it owns nothing. A
  // Removed one refuses too: the operator judged its WAL empty and is about
  // to delete its pod (and maybe its volume), so a 202 now would be a record
  // only a SIGTERM drain stands between and loss.
  const decommissioning = (): boolean =>
    d.metastore
      .members()
      .some((m) => m.id === d.nodeId && (m.state === "Decommissioning" || m.state === "Removed"));

  let ready = false;
  let draining = false;
  return {
    lifecycle: {
      ready: () => ready && !draining,
      draining: () => draining || decommissioning(),
      startDrain: (reason) => {
        if (!draining) d.logger.info({ reason, pending: d.walPending() }, "draining: produce refused");
        draining = true;
      },
      cancelDrain: () => {
        if (draining) d.logger.info("drain cancelled: produce accepted again");
        draining = false;
      },
      waitDrained: (timeoutMs) => d.waitDrained(timeoutMs),
    },
    markReady: () => {
      ready = true;
    },
    isReady: () => ready,
    isDraining: () => draining,
  };
}
