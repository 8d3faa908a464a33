// Where a partition is served from right now, for the owner-routed reads and
// queue operations (partition-access.ts, queue-access.ts): this node, or the
// owner's cluster address. The decision is core/routing.ts routeRead; this
// turns "no one can serve it" into the client-facing 503 with Retry-After.

import { type ReadRoute, routeRead } from "../core/routing.ts";
import { NaradError } from "../errors.ts";
import type { Metastore } from "../meta/types.ts";

export interface OwnerRouteDeps {
  nodeId: string;
  metastore: Pick<Metastore, "ownerOf" | "members">;
  retryAfterSeconds: number;
}

export type ServableRoute = Exclude<ReadRoute, { kind: "unavailable" }>;

/** The route to `topic/partition`'s owner; throws UNAVAILABLE (503) when it has none that can serve. */
export function ownerRoute(d: OwnerRouteDeps, topic: string, partition: number): ServableRoute {
  const r = routeRead(
    d.nodeId,
    d.metastore.ownerOf(topic, partition),
    d.metastore.members(),
    d.retryAfterSeconds,
  );
  if (r.kind === "unavailable") {
    throw new NaradError("UNAVAILABLE", `${topic}/${partition} is unavailable: ${r.reason}`, {
      retryAfterSeconds: r.retryAfterSeconds,
    });
  }
  return r;
}
