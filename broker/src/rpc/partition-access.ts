// Reads and stats of a partition wherever it lives, for the HTTP routes: the
// local log when this node owns it, else a Read/Stats call to the owner.
// Routing is core/routing.ts; an owner that is Down/Removed, unknown or
// unreachable is a 503 with Retry-After (never a 421: any node serves).

import { NaradError } from "../errors.ts";
import type { PartitionLog, PartitionStats } from "../log/types.ts";
import type { Metastore } from "../meta/types.ts";
import type { PartitionRead, Partitions } from "../services.ts";
import type { PeerPool } from "./client.ts";
import { fromPbStats, fromPbStoredRecord } from "./codec.ts";
import { ownerRoute } from "./owner-route.ts";

/** The replay contract on one log: 410 below the oldest offset, nothing at or above the HWM. */
export async function readFromLog(
  log: PartitionLog,
  offset: number,
  maxRecords: number,
  maxBytes: number,
): Promise<PartitionRead> {
  const st = log.stats();
  if (offset < st.oldestOffset) {
    throw new NaradError(
      "OFFSET_EXPIRED",
      `offset ${offset} was removed by retention; oldest is ${st.oldestOffset}`,
    );
  }
  const records = offset >= st.highWatermark ? [] : await log.read(offset, maxRecords, maxBytes);
  return { records, highWatermark: st.highWatermark, oldestOffset: st.oldestOffset };
}

export interface PartitionAccessDeps {
  nodeId: string;
  metastore: Pick<Metastore, "ownerOf" | "members">;
  logs: {
    get(topic: string, partition: number): Promise<PartitionLog>;
    peekStats(topic: string, partition: number): Promise<PartitionStats>;
  };
  /** Undefined on a single node (file metastore): every partition is local. */
  peers: PeerPool | undefined;
  retryAfterSeconds: number;
}

export function createPartitionAccess(d: PartitionAccessDeps): Partitions {
  const route = (topic: string, partition: number) =>
    d.peers === undefined ? { kind: "local" as const } : ownerRoute(d, topic, partition);

  return {
    async read(topic, partition, offset, maxRecords, maxBytes) {
      const r = route(topic, partition);
      if (r.kind === "local")
        return readFromLog(await d.logs.get(topic, partition), offset, maxRecords, maxBytes);
      const res = await d.peers!.peer(r.address).read({
        topic,
        partition,
        offset,
        max_records: maxRecords,
        max_bytes: maxBytes,
      });
      return {
        records: res.records.map(fromPbStoredRecord),
        highWatermark: res.high_watermark,
        oldestOffset: res.oldest_offset,
      };
    },
    async stats(topic, partition): Promise<PartitionStats> {
      const r = route(topic, partition);
      // peekStats: a metadata read must not open (or create) an empty partition log.
      if (r.kind === "local") return d.logs.peekStats(topic, partition);
      return fromPbStats(await d.peers!.peer(r.address).stats(topic, partition));
    },
  };
}
