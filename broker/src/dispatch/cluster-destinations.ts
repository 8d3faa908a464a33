// The dispatcher's Destinations for a cluster (ARCHITECTURE.md §3): where a
// partition lives comes from the metastore's owner and member state
// (core/routing.ts); a commit goes to the local log when this node owns the
// partition, else over a CommitBatch RPC to the owner. Hold/reroute stays in
// the dispatcher; this module only resolves and transports.

import type { CommitRecord } from "../core/records.ts";
import { commitAddress, destinationOf } from "../core/routing.ts";
import { assertTopicIdentity } from "../core/topic-identity.ts";
import type { CommitResult, PartitionLog } from "../log/types.ts";
import type { Metastore } from "../meta/types.ts";
import type { PeerPool } from "../rpc/client.ts";
import { CommitNotSentError, commitNeverApplied, isPartitionMoving } from "../rpc/status.ts";
import type { Destinations } from "./types.ts";

/** Test-only fault injection (never set in production wiring). */
export interface ClusterDestinationHooks {
  /** Runs after a peer acknowledged a commit, before the dispatcher hears of it (e.g. never resolves: a crash). */
  afterRemoteCommit?(topic: string, partition: number, result: CommitResult): Promise<void>;
  /** A commit to a peer failed (its outcome may be unknown: the owner may have committed). */
  remoteCommitFailed?(topic: string, partition: number, records: readonly CommitRecord[], err: unknown): void;
}

export interface ClusterDestinationsDeps {
  nodeId: string;
  metastore: Pick<Metastore, "getTopic" | "ownerOf" | "members" | "confirmTopicDeleted">;
  logs: { get(topic: string, partition: number): Promise<PartitionLog> };
  peers: Pick<PeerPool, "peer">;
  /** Called after records were appended to a local partition (e.g. wake queue consumers). */
  onLocalCommitted?: (topic: string, partition: number) => void;
  retryAfterSeconds: number;
  hooks?: ClusterDestinationHooks;
}

export function clusterDestinations(d: ClusterDestinationsDeps): Destinations {
  return {
    localNodeId: d.nodeId,
    resolve(topic, partition, topicUid) {
      const t = d.metastore.getTopic(topic);
      if (t === undefined || partition >= t.partitions) return { kind: "topic-missing" };
      // The record's incarnation was deleted; a namesake is another topic.
      if (topicUid !== undefined && t.uid !== topicUid) return { kind: "topic-missing" };
      const dest = destinationOf(d.nodeId, d.metastore.ownerOf(topic, partition), d.metastore.members());
      if (dest.kind !== "owner") return dest;
      return (t.replication_factor ?? 1) > 1
        ? { ...dest, topicUid: t.uid, replicated: true }
        : { ...dest, topicUid: t.uid };
    },
    partitionCount: (topic) => d.metastore.getTopic(topic)?.partitions ?? 0,
    describeFailure: (err) => ({
      applied: commitNeverApplied(err) ? "no" : "maybe",
      moving: isPartitionMoving(err),
    }),
    async commit(nodeId, topic, partition, records, deadlineMs) {
      if (nodeId === d.nodeId) {
        // The local owner's view is this node's metastore replica: checked
        // before the log is opened (so a deleted incarnation never creates a
        // directory) and again right before the append (the open awaited).
        assertTopicIdentity(topic, d.metastore.getTopic(topic), records);
        const log = await d.logs.get(topic, partition);
        assertTopicIdentity(topic, d.metastore.getTopic(topic), records);
        const result = await log.commitDurable(records);
        if (result.appended > 0) d.onLocalCommitted?.(topic, partition);
        return result;
      }
      // The address is looked up per call: a peer restarted on a new IP is
      // reached as soon as the membership replica says so.
      const addr = commitAddress(nodeId, d.metastore.members());
      if (!addr.ok) {
        throw new CommitNotSentError("UNAVAILABLE", `cannot commit ${topic}/${partition}: ${addr.reason}`, {
          retryAfterSeconds: d.retryAfterSeconds,
        });
      }
      let result: CommitResult;
      try {
        result = await d.peers.peer(addr.address).commit(topic, partition, records, deadlineMs);
      } catch (err) {
        d.hooks?.remoteCommitFailed?.(topic, partition, records, err);
        throw err;
      }
      await d.hooks?.afterRemoteCommit?.(topic, partition, result);
      return result;
    },
    confirmTopicDeleted: (topic, topicUid) => d.metastore.confirmTopicDeleted(topic, topicUid),
  };
}
