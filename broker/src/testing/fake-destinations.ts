// In-memory Destinations for dispatcher tests. Each (topic, partition) is a
// log that dedups exactly like PartitionLog: per ingress incarnation it keeps
// the highest committed seq and drops any record at or below it. So a test
// can count what landed (no loss, no duplicates) and would also catch a
// dispatcher that sends a lower seq after a higher one (that record would be
// silently dropped and show up as missing).

import type { Destination, MemberState } from "../core/dispatch-plan.ts";
import type { CommitRecord } from "../core/records.ts";
import type { Destinations } from "../dispatch/types.ts";
import type { CommitResult } from "../log/types.ts";

/** grpc-js status.FAILED_PRECONDITION, spelled out so the fake needs no gRPC import. */
const grpcFailedPrecondition = 9;

/**
 * ok: commit at once; error: reject without saying whether anything landed
 * (in doubt); refuse: reject as an owner that stored nothing answers
 * (FAILED_PRECONDITION, e.g. NOT_OWNER); lost-answer: store the records, then
 * reject as if the owner died before answering; frozen: reject as a partition
 * move's freeze does (code PARTITION_FROZEN); hang: stay pending until
 * releaseHung() lands it late.
 */
export type CommitBehaviour = "ok" | "error" | "refuse" | "lost-answer" | "frozen" | "hang";

export interface CommitCall {
  nodeId: string;
  topic: string;
  partition: number;
  seqs: number[];
}

export interface FakeDestinations extends Destinations {
  addTopic(topic: string, owners: readonly string[]): void;
  deleteTopic(topic: string): void;
  setMember(nodeId: string, state: MemberState): void;
  /** Behaviour of commits to a node, or to one partition (`topic/partition`) when given. */
  setBehaviour(target: { nodeId: string } | { topic: string; partition: number }, b: CommitBehaviour): void;
  /** What confirmTopicDeleted answers. */
  confirmDeletion: boolean | "throw";
  readonly confirmCalls: string[];
  readonly commitCalls: CommitCall[];
  /** Seqs stored in a partition's log, in log order. */
  seqs(topic: string, partition: number): number[];
  /** Every stored seq across all logs. */
  allSeqs(): number[];
  /** Every stored record's key (utf8) across all logs: identity that survives a reroute's new seq. */
  allKeys(): string[];
  /** Lands every hung commit now (as if it succeeded after its RPC timed out); returns how many. */
  releaseHung(): number;
  readonly hungCount: number;
}

interface FakeLog {
  records: CommitRecord[];
  highest: Map<string, number>;
}

export function createFakeDestinations(localNodeId = "n0"): FakeDestinations {
  const owners = new Map<string, string[]>();
  const members = new Map<string, MemberState>();
  const logs = new Map<string, FakeLog>();
  const behaviours = new Map<string, CommitBehaviour>();
  const hung: Array<() => void> = [];

  const logOf = (topic: string, partition: number): FakeLog => {
    const k = `${topic}/${partition}`;
    let log = logs.get(k);
    if (log === undefined) {
      log = { records: [], highest: new Map() };
      logs.set(k, log);
    }
    return log;
  };

  // The PartitionLog rule: drop a record whose seq is <= the highest
  // committed from its incarnation.
  const apply = (log: FakeLog, records: readonly CommitRecord[]): CommitResult => {
    const baseOffset = log.records.length;
    let appended = 0;
    for (const r of records) {
      if (r.seq <= (log.highest.get(r.incarnation) ?? -1)) continue;
      log.highest.set(r.incarnation, r.seq);
      log.records.push(r);
      appended++;
    }
    return { baseOffset: appended === 0 ? -1 : baseOffset, appended, duplicates: records.length - appended };
  };

  const d: FakeDestinations = {
    localNodeId,
    confirmDeletion: false,
    confirmCalls: [],
    commitCalls: [],

    resolve(topic, partition): Destination {
      const o = owners.get(topic);
      if (o === undefined) return { kind: "topic-missing" };
      const nodeId = o[partition];
      if (nodeId === undefined) throw new Error(`fake: no partition ${topic}/${partition}`);
      return { kind: "owner", nodeId, state: members.get(nodeId) ?? "Active" };
    },

    partitionCount(topic) {
      return owners.get(topic)?.length ?? 0;
    },

    commit(nodeId, topic, partition, records) {
      d.commitCalls.push({ nodeId, topic, partition, seqs: records.map((r) => r.seq) });
      const b = behaviours.get(`${topic}/${partition}`) ?? behaviours.get(nodeId) ?? "ok";
      if (b === "error") return Promise.reject(new Error(`fake: ${nodeId} fails ${topic}/${partition}`));
      if (b === "refuse")
        return Promise.reject(
          Object.assign(new Error(`fake: ${nodeId} refuses ${topic}/${partition}`), {
            code: grpcFailedPrecondition,
            details: "NOT_OWNER: fake",
          }),
        );
      if (b === "lost-answer") {
        apply(logOf(topic, partition), [...records]);
        return Promise.reject(new Error(`fake: ${nodeId} died before answering for ${topic}/${partition}`));
      }
      if (b === "frozen")
        return Promise.reject(
          Object.assign(new Error(`fake: ${topic}/${partition} is frozen`), { code: "PARTITION_FROZEN" }),
        );
      const copy = [...records];
      if (b === "hang") {
        return new Promise((resolve) => {
          hung.push(() => resolve(apply(logOf(topic, partition), copy)));
        });
      }
      return Promise.resolve(apply(logOf(topic, partition), copy));
    },

    describeFailure(err) {
      // As rpc/status.ts judges the errors commit() raises above.
      const code = (err as { code?: unknown } | null)?.code;
      if (code === "PARTITION_FROZEN") return { applied: "no", moving: true };
      return { applied: code === grpcFailedPrecondition ? "no" : "maybe", moving: false };
    },

    async confirmTopicDeleted(topic) {
      d.confirmCalls.push(topic);
      if (d.confirmDeletion === "throw") throw new Error("fake: API server unreachable");
      return d.confirmDeletion;
    },

    addTopic(topic, o) {
      owners.set(topic, [...o]);
    },
    deleteTopic(topic) {
      owners.delete(topic);
    },
    setMember(nodeId, state) {
      members.set(nodeId, state);
    },
    setBehaviour(target, b) {
      behaviours.set("nodeId" in target ? target.nodeId : `${target.topic}/${target.partition}`, b);
    },

    seqs(topic, partition) {
      return (logs.get(`${topic}/${partition}`)?.records ?? []).map((r) => r.seq);
    },
    allSeqs() {
      return [...logs.values()].flatMap((l) => l.records.map((r) => r.seq));
    },
    allKeys() {
      return [...logs.values()].flatMap((l) => l.records.map((r) => r.key.toString("utf8")));
    },
    releaseHung() {
      const n = hung.length;
      for (const land of hung.splice(0)) land();
      return n;
    },
    get hungCount() {
      return hung.length;
    },
  };
  return d;
}
