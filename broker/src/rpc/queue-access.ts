// Queue consumption (GET …/consume without offset, POST …/ack) from any node
// of a cluster. The local ConsumerManager keeps leases and frontiers of the
// partitions this node owns; a peer's partition is served by its owner over
// the Consume / Ack RPCs. Routing is core/routing.ts (routeRead,
// queueConsumePlan):
//   - with `partition`: local, or forwarded to the owner (long-poll included);
//     a Down/Removed/unknown/unreachable owner is 503 + Retry-After;
//   - without: local partitions first, then one non-blocking probe (wait 0) of
//     each peer partition, then a local long-poll for the rest of `wait` (as
//     Narad v1); a node owning none of the topic's partitions re-probes its
//     peers every reprobeIntervalMs until `wait` ends;
//   - ack/extend/nack: to the owner of the partition the handle names.

import { setTimeout as sleep } from "node:timers/promises";
import { topicNamePattern } from "../api-contract.ts";
import { mergeGroups, type PartitionGroups } from "../consumer/group-list.ts";
import type { Delivery, SettleAction } from "../consumer/manager.ts";
import { defaultGroup, parseHandle } from "../core/consumer-handle.ts";
import { queueConsumePlan } from "../core/routing.ts";
import type { Metastore, TopicConfig } from "../meta/types.ts";
import type { Consumers } from "../services.ts";
import type { PeerPool } from "./client.ts";
import { fromPbStoredRecord, seekTargetToPb } from "./codec.ts";
import { ownerRoute } from "./owner-route.ts";
import type { PbAckRequest } from "./proto.ts";

export interface QueueAccessDeps {
  nodeId: string;
  metastore: Pick<Metastore, "ownerOf" | "members">;
  /** This node's queues (consumer/manager.ts). */
  local: Consumers;
  peers: PeerPool;
  retryAfterSeconds: number;
  /** How often a node owning none of a topic's partitions re-probes the owners during a long-poll. */
  reprobeIntervalMs: number;
  nowMs: () => number;
  logger?: { debug(obj: object, msg: string): void };
}

export function createClusterConsumers(d: QueueAccessDeps): Consumers {
  let probeStart = 0;

  const route = (topic: string, partition: number) => ownerRoute(d, topic, partition);

  const remoteConsume = async (
    address: string,
    topic: string,
    partition: number,
    group: string,
    waitMs: number,
    signal: AbortSignal | undefined,
  ): Promise<Delivery | undefined> => {
    const res = await d.peers
      .peer(address)
      .consume({ topic, partition, group: group === defaultGroup ? "" : group, wait_ms: waitMs }, signal);
    if (!res.found || res.record === null) return undefined;
    return {
      partition: res.partition,
      record: fromPbStoredRecord(res.record),
      receiptHandle: res.receipt_handle,
    };
  };

  const owners = (topic: TopicConfig): string[] =>
    Array.from({ length: topic.partitions }, (_, p) => d.metastore.ownerOf(topic.name, p));

  /** One non-blocking try of every peer partition; an unreachable owner is skipped. */
  const probePeers = async (
    topic: TopicConfig,
    group: string,
    signal: AbortSignal | undefined,
  ): Promise<{ found: Delivery | undefined; local: number[] }> => {
    const plan = queueConsumePlan(d.nodeId, owners(topic), d.metastore.members(), probeStart++);
    for (const r of plan.remote) {
      if (signal?.aborted) break;
      try {
        const got = await remoteConsume(r.address, topic.name, r.partition, group, 0, signal);
        if (got !== undefined) return { found: got, local: plan.local };
      } catch (err) {
        d.logger?.debug(
          { err, topic: topic.name, partition: r.partition, owner: r.nodeId },
          "consume probe failed",
        );
      }
    }
    return { found: undefined, local: plan.local };
  };

  return {
    validGroup: (name) => d.local.validGroup(name),
    partitionGroups: (topic, partition) => d.local.partitionGroups(topic, partition),

    // Each partition from its owner: a node's own files know only the partitions it owns.
    async listGroups(topic) {
      const parts = await Promise.all(
        Array.from({ length: topic.partitions }, async (_, p): Promise<PartitionGroups> => {
          const r = route(topic.name, p);
          if (r.kind === "local") return d.local.partitionGroups(topic, p);
          const res = await d.peers.peer(r.address).groupStats(topic.name, p);
          return { partition: p, highWatermark: res.high_watermark, groups: res.groups };
        }),
      );
      return mergeGroups(topic, parts);
    },

    // This node's state, then every other owner's (an unreachable owner fails
    // the request with its 503; repeating the delete is safe).
    async deleteGroup(topic, group) {
      let existed = await d.local.deleteGroup(topic, group);
      const peers = new Set<string>();
      for (let p = 0; p < topic.partitions; p++) {
        const r = route(topic.name, p);
        if (r.kind !== "local") peers.add(r.address);
      }
      for (const address of peers) {
        const res = await d.peers
          .peer(address)
          .deleteGroup({ topic: topic.name, group: group === defaultGroup ? "" : group });
        existed ||= res.existed;
      }
      return existed;
    },

    async seek(topic, group, partition, target) {
      const r = route(topic.name, partition);
      if (r.kind === "local") return d.local.seek(topic, group, partition, target);
      const res = await d.peers.peer(r.address).seekGroup({
        topic: topic.name,
        partition,
        group: group === defaultGroup ? "" : group,
        ...seekTargetToPb(target),
      });
      return { partition, previous: res.previous, committed: res.committed };
    },

    async consume(topic, group, partition, waitMs, signal) {
      if (partition !== undefined) {
        const r = route(topic.name, partition);
        if (r.kind === "local") return d.local.consume(topic, group, partition, waitMs, signal);
        return remoteConsume(r.address, topic.name, partition, group, waitMs, signal);
      }
      const deadline = d.nowMs() + waitMs;
      const local = queueConsumePlan(d.nodeId, owners(topic), d.metastore.members(), 0).local;
      if (local.length > 0) {
        const got = await d.local.consume(topic, group, undefined, 0, signal, local);
        if (got !== undefined) return got;
      }
      for (;;) {
        const probe = await probePeers(topic, group, signal);
        if (probe.found !== undefined) return probe.found;
        const remaining = deadline - d.nowMs();
        if (remaining <= 0 || signal?.aborted) return undefined;
        if (probe.local.length > 0)
          return d.local.consume(topic, group, undefined, remaining, signal, probe.local);
        try {
          await sleep(Math.min(d.reprobeIntervalMs, remaining), undefined, signal ? { signal } : {});
        } catch {
          return undefined; // the client hung up
        }
      }
    },

    async settle(topic, rawHandle, action: SettleAction) {
      const parsed = parseHandle(rawHandle, topicNamePattern);
      // Malformed or out of range: the local manager gives the same 400 a single node gives.
      if (!parsed.ok || parsed.handle.partition >= topic.partitions)
        return d.local.settle(topic, rawHandle, action);
      const r = route(topic.name, parsed.handle.partition);
      if (r.kind === "local") return d.local.settle(topic, rawHandle, action);
      const req: PbAckRequest = {
        topic: topic.name,
        group: parsed.handle.group === defaultGroup ? "" : parsed.handle.group,
        receipt_handle: rawHandle,
      };
      if (action !== "ack") req.extend = action === "extend";
      await d.peers.peer(r.address).ack(req);
    },
  };
}
