// Cluster RPC metrics, registered on the broker's own registry (one per
// broker, so several brokers can share a process in tests).

import { Counter, Histogram, type Registry } from "prom-client";

export interface RpcMetrics {
  /** Client calls by method and final gRPC status name (OK, UNAVAILABLE, DEADLINE_EXCEEDED, …). */
  clientRequests: Counter<"method" | "code">;
  clientSeconds: Histogram<"method">;
  serverRequests: Counter<"method" | "code">;
  serverSeconds: Histogram<"method">;
  /** Records the owner received in CommitBatch, by result (appended | duplicate). */
  serverCommitRecords: Counter<"result">;
}

const latencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function createRpcMetrics(registry: Registry): RpcMetrics {
  const registers = [registry];
  return {
    clientRequests: new Counter({
      name: "narad_rpc_client_requests_total",
      help: "Cluster RPC calls made to peers, by method and gRPC status",
      labelNames: ["method", "code"],
      registers,
    }),
    clientSeconds: new Histogram({
      name: "narad_rpc_client_seconds",
      help: "Cluster RPC call latency seen by the caller",
      labelNames: ["method"],
      buckets: latencyBuckets,
      registers,
    }),
    serverRequests: new Counter({
      name: "narad_rpc_server_requests_total",
      help: "Cluster RPC calls served, by method and gRPC status",
      labelNames: ["method", "code"],
      registers,
    }),
    serverSeconds: new Histogram({
      name: "narad_rpc_server_seconds",
      help: "Cluster RPC handling time on this node",
      labelNames: ["method"],
      buckets: latencyBuckets,
      registers,
    }),
    serverCommitRecords: new Counter({
      name: "narad_rpc_commit_records_total",
      help: "Records received in CommitBatch as owner: appended, or dropped as (incarnation, seq) duplicates",
      labelNames: ["result"],
      registers,
    }),
  };
}
