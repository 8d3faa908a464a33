// Produce on a node that is draining (a planned restart) or decommissioning
// (a scale-down) is forwarded to a healthy peer's ingress WAL over the
// cluster RPC (Ingest) instead of being refused: the client's 202 still
// means the bytes were fsynced, only on another node's WAL. The peer
// dispatches them like its own produce. Planned operations then cost
// clients no error for requests that still reach the leaving node (a kept
// alive connection, a Service endpoint list that has not caught up).
//
// A peer is tried only when the last one is known not to have stored the
// records (it refused, or no connection was made): a timeout or a dropped
// call leaves them in doubt, and a second peer would store them twice, so
// that is answered as in doubt (504), never as "not stored" (503).

import type { WalRecordInput } from "../core/records.ts";
import { clusterAddressOf, type MemberView } from "../core/routing.ts";
import type { PbIngestRecord } from "../rpc/proto.ts";
import { commitNeverApplied } from "../rpc/status.ts";
import type { ForwardOutcome } from "../services.ts";

export interface ProduceForwarderDeps {
  nodeId: string;
  members: () => readonly MemberView[];
  ingest: (address: string, records: PbIngestRecord[], deadlineMs: number) => Promise<number>;
  nowMs: () => number;
  /** Bound on one forward (the peer's WAL fsync included). */
  timeoutMs: number;
}

/** Peers that may take produce: Active, not this node, with a cluster address; rotated by `start`. */
export function forwardTargets(
  members: readonly MemberView[],
  self: string,
  start: number,
): Array<{ id: string; address: string }> {
  const out: Array<{ id: string; address: string }> = [];
  for (const m of members) {
    if (m.id === self || m.state !== "Active") continue;
    const address = clusterAddressOf(m);
    if (address !== undefined) out.push({ id: m.id, address });
  }
  if (out.length === 0) return out;
  const k = ((start % out.length) + out.length) % out.length;
  return [...out.slice(k), ...out.slice(0, k)];
}

export function toIngestRecords(records: readonly WalRecordInput[]): PbIngestRecord[] {
  return records.map((r) => ({
    topic: r.topic,
    partition: r.partition,
    key: r.key,
    payload: r.payload,
    created_ms: r.createdMs,
    topic_uid: r.topicUid ?? "",
  }));
}

export function fromIngestRecords(records: readonly PbIngestRecord[]): WalRecordInput[] {
  return records.map((r) => ({
    topic: r.topic,
    partition: r.partition,
    key: r.key,
    payload: r.payload,
    createdMs: r.created_ms,
    topicUid: r.topic_uid === "" ? undefined : r.topic_uid,
  }));
}

export function createProduceForwarder(d: ProduceForwarderDeps) {
  let next = 0;
  return async (records: readonly WalRecordInput[]): Promise<ForwardOutcome> => {
    const targets = forwardTargets(d.members(), d.nodeId, next++);
    if (targets.length === 0) return { kind: "refused", reason: "no Active peer to forward to" };
    const pb = toIngestRecords(records);
    const refusals: string[] = [];
    for (const t of targets) {
      try {
        await d.ingest(t.address, pb, d.nowMs() + d.timeoutMs);
        return { kind: "stored", via: t.id };
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        if (!commitNeverApplied(err)) return { kind: "inDoubt", via: t.id, reason };
        refusals.push(`${t.id}: ${reason}`);
      }
    }
    return { kind: "refused", reason: refusals.join("; ") };
  };
}
