// The channels to the other brokers (cluster RPC client side). Channels open
// lazily, on the first call to a peer; membership changes close the ones to
// brokers that left.

import type { Security } from "../auth/setup.ts";
import * as k from "../constants.ts";
import type { Metastore } from "../meta/types.ts";
import { createPeerPool, type PeerPool, peerMembershipSync } from "../rpc/client.ts";
import type { RpcMetrics } from "../rpc/metrics.ts";

export function openPeerPool(d: {
  security: Security;
  rpcMetrics: RpcMetrics;
  metastore: Pick<Metastore, "members" | "onChange">;
}): PeerPool {
  const { security } = d;
  const peers = createPeerPool({
    maxMessageBytes: k.rpcMaxMessageBytes,
    commitRequestBytes: k.rpcCommitRequestBytes,
    readTimeoutMs: k.rpcReadTimeoutMs,
    defaultDeadlineMs: k.rpcDefaultDeadlineMs,
    keepaliveTimeMs: k.rpcKeepaliveTimeMs,
    keepaliveTimeoutMs: k.rpcKeepaliveTimeoutMs,
    reconnectBackoffInitialMs: k.rpcReconnectBackoffInitialMs,
    reconnectBackoffMaxMs: k.rpcReconnectBackoffMaxMs,
    flowControlWindowBytes: k.rpcFlowControlWindowBytes,
    retryAfterSeconds: k.retryAfterSeconds,
    metrics: d.rpcMetrics,
    interceptors: security.rpcClientInterceptors,
    ...(security.rpcTls ? { credentials: security.rpcTls.channel } : {}),
  });
  d.metastore.onChange(peerMembershipSync(peers, () => d.metastore.members()));
  return peers;
}
