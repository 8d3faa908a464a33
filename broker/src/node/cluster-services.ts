// The service ports that reach peers in cluster mode: consume/ack of a
// peer's partition go to its owner, and produce this node refuses (draining,
// decommissioned) is forwarded to a healthy peer's WAL.

import type { Logger } from "pino";
import * as k from "../constants.ts";
import { createProduceForwarder } from "../http/produce-forward.ts";
import type { Metastore } from "../meta/types.ts";
import type { PeerPool } from "../rpc/client.ts";
import { createClusterConsumers } from "../rpc/queue-access.ts";
import type { BrokerServices, Consumers } from "../services.ts";

export function clusterServices(d: {
  nodeId: string;
  metastore: Metastore;
  /** This node's own queues. */
  local: Consumers;
  peers: PeerPool;
  logger: Logger;
  monoMs: () => number;
}): Pick<BrokerServices, "consumers"> & Required<Pick<BrokerServices, "forwardProduce">> {
  const { nodeId, metastore, peers } = d;
  return {
    consumers: createClusterConsumers({
      nodeId,
      metastore,
      local: d.local,
      peers,
      retryAfterSeconds: k.retryAfterSeconds,
      reprobeIntervalMs: k.consumeReprobeIntervalMs,
      nowMs: d.monoMs,
      logger: d.logger.child({ component: "consume" }),
    }),
    forwardProduce: createProduceForwarder({
      nodeId,
      members: () => metastore.members(),
      ingest: (address, records, deadlineMs) =>
        peers.peer(address).ingest({ records, from_node: nodeId }, deadlineMs),
      nowMs: d.monoMs,
      timeoutMs: k.rpcDefaultDeadlineMs,
    }),
  };
}
