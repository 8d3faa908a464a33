// An in-memory metastore shared by several in-process brokers (tests and
// the cluster benchmark): one MemoryCluster holds topics, owners and
// members; each broker gets its own Metastore view (own change listeners,
// close is a no-op on the shared state). Tests set owners and member states
// directly, the way the operator would.
//
// Assignment: a new partition goes round-robin over the Active members
// sorted by id (as narad-go does), and stays there (sticky) until a test
// moves it with setOwner.
//
// Replication (docs/adr/0007-replication.md): a partition of a topic with
// replication_factor > 1 gets a replicated record when it is created: the
// round-robin owner leads, the next Active members by id follow, every
// replica is in the ISR with the volume id its member has now, epoch 0.
// Tests replace records with setReplicaAssignment (an election, an offline
// partition) as the operator would. recordIsr is the same compare-and-swap
// as the kubernetes backend's: applied only while the record names that
// leader at that epoch (and, when the caller names it, still holds the ISR
// the change was decided on, else "superseded"); failIsrWrites makes it
// answer "unknown" (the change applied or lost), the way a write whose
// answer is lost does.

import { randomUUID } from "node:crypto";
import type { IsrMember, ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";
import { topicExists, topicNotFound } from "../errors.ts";
import type {
  IsrWriteOutcome,
  Member,
  MemberState,
  Metastore,
  TopicConfig,
  TopicPatch,
} from "../meta/types.ts";

/** What recordIsr does while a fault is set: answer "unknown" after applying the change, or without. */
export type IsrWriteFault = "applied" | "lost";

export interface MemoryCluster {
  /** A view for one broker; every view sees the same state. */
  metastore(): Metastore;
  setMember(member: Member): void;
  setState(id: string, state: MemberState): void;
  /** Sets (undefined: clears) a member's volume id, as the operator records it from the broker's status. */
  setVolumeId(id: string, volumeId: string | undefined): void;
  removeMember(id: string): void;
  setOwner(topic: string, partition: number, nodeId: string): void;
  owners(topic: string): string[];
  /**
   * Replaces a partition's replicated record (undefined: the partition has a
   * single copy again), as the operator's placement or election would. The
   * owner follows the leader ("" while it is null).
   */
  setReplicaAssignment(topic: string, partition: number, record: ReplicaAssignment | undefined): void;
  replicaAssignment(topic: string, partition: number): ReplicaAssignment | undefined;
  /**
   * The next `count` recordIsr calls (default: until cleared with undefined)
   * answer "unknown"; "applied" writes the change first (the answer was
   * lost), "lost" does not (the request was).
   */
  failIsrWrites(fault: IsrWriteFault | undefined, count?: number): void;
  /** Writes recordIsr recorded (changed or confirmed), for tests that count them. */
  isrWrites(): number;
  members(): readonly Member[];
  membershipEpoch(): number;
}

const key = (topic: string, partition: number): string => `${partition}/${topic}`;

/** The same ISR entries, in any order. */
function sameMembers(a: readonly IsrMember[], b: readonly IsrMember[]): boolean {
  const k = (m: IsrMember) => `${m.member}\u0000${m.volumeId}`;
  const set = new Set(a.map(k));
  return a.length === b.length && b.every((m) => set.has(k(m)));
}

function copyRecord(r: ReplicaAssignment): ReplicaAssignment {
  return {
    partition: r.partition,
    leader: r.leader,
    replicas: [...r.replicas],
    isr: r.isr.map((m) => ({ member: m.member, volumeId: m.volumeId })),
    leaderEpoch: r.leaderEpoch,
  };
}

export function createMemoryCluster(initialMembers: readonly Member[] = []): MemoryCluster {
  const topics = new Map<string, TopicConfig>();
  const owners = new Map<string, string[]>();
  /** key(topic, partition) → the replicated record; absent for single-copy partitions. */
  const records = new Map<string, ReplicaAssignment>();
  let members: Member[] = [...initialMembers];
  let epoch = 0;
  let sorted: TopicConfig[] = [];
  let rr = 0;
  let isrFault: { fault: IsrWriteFault; remaining: number } | undefined;
  let isrWrites = 0;
  const listeners = new Set<() => void>();

  const changed = (): void => {
    sorted = [...topics.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const l of listeners) l();
  };
  const membershipChanged = (): void => {
    epoch++;
    changed();
  };
  const activeIds = (): string[] =>
    members
      .filter((m) => m.state === "Active")
      .map((m) => m.id)
      .sort();
  const nextOwner = (): string => {
    const active = activeIds();
    if (active.length === 0) return "";
    return active[rr++ % active.length]!;
  };
  /** Followers of a new replicated partition: the Active members after the leader, by id. */
  const placeReplicas = (leader: string, factor: number): string[] => {
    const active = activeIds();
    const at = active.indexOf(leader);
    const out = [leader];
    for (let i = 1; i < active.length && out.length < factor; i++)
      out.push(active[(at + i) % active.length]!);
    return out;
  };
  const volumeOf = (id: string): string => members.find((m) => m.id === id)?.volumeId ?? "";
  const assign = (topic: TopicConfig): void => {
    const list = owners.get(topic.name) ?? [];
    const factor = topic.replication_factor ?? 1;
    while (list.length < topic.partitions) {
      const partition = list.length;
      const owner = nextOwner();
      list.push(owner);
      if (factor > 1 && owner !== "") {
        const replicas = placeReplicas(owner, factor);
        records.set(key(topic.name, partition), {
          partition,
          leader: owner,
          replicas,
          isr: replicas.map((member) => ({ member, volumeId: volumeOf(member) })),
          leaderEpoch: 0,
        });
      }
    }
    owners.set(topic.name, list);
  };
  const forget = (topic: string): void => {
    const n = owners.get(topic)?.length ?? 0;
    for (let p = 0; p < n; p++) records.delete(key(topic, p));
    owners.delete(topic);
  };
  const ownerOf = (topic: string, partition: number): string => {
    const r = records.get(key(topic, partition));
    if (r !== undefined) return r.leader ?? "";
    return owners.get(topic)?.[partition] ?? "";
  };
  const replicaAssignment = (topic: string, partition: number): ReplicaAssignment | undefined => {
    const r = records.get(key(topic, partition));
    return r === undefined ? undefined : copyRecord(r);
  };

  const recordIsr = async (
    topic: string,
    partition: number,
    expect: { leader: string; leaderEpoch: number; isr?: readonly IsrMember[] },
    isr: readonly IsrMember[],
  ): Promise<IsrWriteOutcome> => {
    const fault = isrFault;
    if (fault !== undefined) {
      fault.remaining--;
      if (fault.remaining <= 0) isrFault = undefined;
    }
    const r = records.get(key(topic, partition));
    let outcome: IsrWriteOutcome;
    if (!topics.has(topic)) outcome = { kind: "stale", reason: `topic "${topic}" is gone` };
    else if (r === undefined)
      outcome = { kind: "stale", reason: `partition ${topic}/${partition} has no replicated record` };
    else if (r.leader !== expect.leader || r.leaderEpoch !== expect.leaderEpoch)
      outcome = {
        kind: "stale",
        reason: `the record names leader ${r.leader ?? "(none)"} at epoch ${r.leaderEpoch}, not ${expect.leader} at ${expect.leaderEpoch}`,
      };
    else if (expect.isr !== undefined && !sameMembers(r.isr, expect.isr) && !sameMembers(r.isr, isr))
      outcome = {
        kind: "superseded",
        record: copyRecord(r),
        reason: `the ISR of ${topic}/${partition} changed since the change was decided`,
      };
    else {
      if (fault?.fault === "lost") return { kind: "unknown", reason: "test fault: the request was lost" };
      const next = { ...r, isr: isr.map((m) => ({ member: m.member, volumeId: m.volumeId })) };
      records.set(key(topic, partition), next);
      isrWrites++;
      changed();
      outcome = { kind: "recorded", record: copyRecord(next) };
    }
    // A lost answer hides whatever the authority decided, a refusal included.
    if (fault !== undefined)
      return { kind: "unknown", reason: `test fault: the answer was lost (${fault.fault})` };
    return outcome;
  };

  const view = (): Metastore => {
    const mine: Array<() => void> = [];
    return {
      kind: "memory",
      listTopics: () => sorted,
      getTopic: (name) => topics.get(name),
      async createTopic(input) {
        if (topics.has(input.name)) throw topicExists(input.name);
        const topic: TopicConfig = { ...input, uid: randomUUID() };
        topics.set(topic.name, topic);
        assign(topic);
        changed();
        return topic;
      },
      async updateTopic(name, patch: TopicPatch) {
        const current = topics.get(name);
        if (current === undefined) throw topicNotFound(name);
        const next = { ...current, ...patch };
        topics.set(name, next);
        assign(next);
        changed();
        return next;
      },
      async deleteTopic(name) {
        if (!topics.delete(name)) throw topicNotFound(name);
        forget(name);
        changed();
      },
      confirmTopicDeleted: async (name, uid) => {
        const t = topics.get(name);
        return t === undefined || (uid !== undefined && t.uid !== uid);
      },
      ownerOf,
      members: () => members,
      replicaAssignment,
      recordIsr,
      onChange(l) {
        mine.push(l);
        listeners.add(l);
      },
      async close() {
        for (const l of mine) listeners.delete(l);
      },
    };
  };

  return {
    metastore: view,
    setMember(member) {
      members = [...members.filter((m) => m.id !== member.id), { ...member }];
      membershipChanged();
    },
    setState(id, state) {
      const m = members.find((x) => x.id === id);
      if (m === undefined) throw new Error(`no member ${id}`);
      members = members.map((x) => (x.id === id ? { ...x, state } : x));
      membershipChanged();
    },
    setVolumeId(id, volumeId) {
      const m = members.find((x) => x.id === id);
      if (m === undefined) throw new Error(`no member ${id}`);
      members = members.map((x) => {
        if (x.id !== id) return x;
        const { volumeId: _old, ...rest } = x;
        return volumeId === undefined ? rest : { ...rest, volumeId };
      });
      membershipChanged();
    },
    removeMember(id) {
      members = members.filter((m) => m.id !== id);
      membershipChanged();
    },
    setOwner(topic, partition, nodeId) {
      const list = owners.get(topic);
      if (list === undefined || partition >= list.length)
        throw new Error(`no partition ${topic}/${partition}`);
      list[partition] = nodeId;
      changed();
    },
    owners: (topic) => {
      const list = owners.get(topic) ?? [];
      return list.map((_, p) => ownerOf(topic, p));
    },
    setReplicaAssignment(topic, partition, record) {
      const list = owners.get(topic);
      if (list === undefined || partition >= list.length)
        throw new Error(`no partition ${topic}/${partition}`);
      if (record === undefined) records.delete(key(topic, partition));
      else {
        if (record.partition !== partition)
          throw new Error(`record of partition ${record.partition} set for ${topic}/${partition}`);
        records.set(key(topic, partition), copyRecord(record));
        list[partition] = record.leader ?? "";
      }
      changed();
    },
    replicaAssignment,
    failIsrWrites(fault, count = Number.POSITIVE_INFINITY) {
      isrFault = fault === undefined ? undefined : { fault, remaining: count };
    },
    isrWrites: () => isrWrites,
    members: () => members,
    membershipEpoch: () => epoch,
  };
}
