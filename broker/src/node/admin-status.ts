// The answer to a peer's (or the operator's) AdminStatus call: what this node
// owns and how much of its WAL is not yet in the partition logs.

import type { Metastore } from "../meta/types.ts";
import type { PbAdminStatusResponse } from "../rpc/proto.ts";
import type { IngressWal } from "../wal/types.ts";

export function adminStatusOf(d: {
  nodeId: string;
  metastore: Pick<Metastore, "listTopics" | "ownerOf">;
  wal: Pick<IngressWal, "stats">;
  /** Parked records count as WAL backlog: they are not in their partition logs yet. */
  parkedRecords: () => number;
  ready: () => boolean;
  draining: () => boolean;
}): () => PbAdminStatusResponse {
  return () => {
    const w = d.wal.stats();
    const owned: Array<{ topic: string; partition: number }> = [];
    for (const t of d.metastore.listTopics()) {
      for (let p = 0; p < t.partitions; p++) {
        if (d.metastore.ownerOf(t.name, p) === d.nodeId) owned.push({ topic: t.name, partition: p });
      }
    }
    return {
      node_id: d.nodeId,
      ready: d.ready(),
      draining: d.draining(),
      wal_pending_records: w.pendingRecords + d.parkedRecords(),
      checkpoint_seq: w.checkpoint,
      last_accepted_seq: w.nextSeq - 1,
      owned_partitions: owned,
    };
  };
}
