// The Ingest RPC's handler: produce a draining peer forwarded, stored in
// this node's WAL (resolves after the fsync) unless this node refuses
// produce itself.

import type { Logger } from "pino";
import { fromIngestRecords } from "../http/produce-forward.ts";
import type { Metastore } from "../meta/types.ts";
import type { BrokerMetrics } from "../metrics.ts";
import type { PbIngestRequest } from "../rpc/proto.ts";
import type { IngressWal } from "../wal/types.ts";

/** A refusal of forwarded produce that provably stored nothing (the caller may try another peer). */
const ingestRefused = (message: string): Error =>
  Object.assign(new Error(message), { code: "INGEST_REFUSED" });

export function peerIngestHandler(d: {
  nodeId: string;
  metastore: Pick<Metastore, "getTopic">;
  wal: Pick<IngressWal, "append" | "stats">;
  /** True while this node refuses produce itself (draining, decommissioned or still starting). */
  refusing: () => boolean;
  metrics: Pick<BrokerMetrics, "ingestedForPeers">;
  logger: Logger;
}): (records: PbIngestRequest["records"], from: string) => Promise<number> {
  return async (records, from) => {
    if (d.refusing() || d.wal.stats().poisoned)
      throw ingestRefused(`node ${d.nodeId} refuses produce itself (draining, starting or WAL failed)`);
    const input = fromIngestRecords(records);
    for (const r of input) {
      const t = d.metastore.getTopic(r.topic);
      if (t === undefined || r.partition >= t.partitions)
        throw ingestRefused(`node ${d.nodeId} does not know ${r.topic}/${r.partition}`);
    }
    await d.wal.append(input);
    d.metrics.ingestedForPeers.inc(input.length);
    d.logger.debug({ from, records: input.length }, "stored produce forwarded by a draining peer");
    return input.length;
  };
}
