// An in-memory metastore shared by several in-process brokers (tests and
// the cluster benchmark): one MemoryCluster holds topics, owners and
// members; each broker gets its own Metastore view (own change listeners,
// close is a no-op on the shared state). Tests set owners and member states
// directly, the way the operator would.
//
// Assignment: a new partition goes round-robin over the Active members
// sorted by id (as narad-go does), and stays there (sticky) until a test
// moves it with setOwner.

import { randomUUID } from "node:crypto";
import { topicExists, topicNotFound } from "../errors.ts";
import type { Member, MemberState, Metastore, TopicConfig, TopicPatch } from "../meta/types.ts";

export interface MemoryCluster {
  /** A view for one broker; every view sees the same state. */
  metastore(): Metastore;
  setMember(member: Member): void;
  setState(id: string, state: MemberState): void;
  removeMember(id: string): void;
  setOwner(topic: string, partition: number, nodeId: string): void;
  owners(topic: string): string[];
  members(): readonly Member[];
  membershipEpoch(): number;
}

export function createMemoryCluster(initialMembers: readonly Member[] = []): MemoryCluster {
  const topics = new Map<string, TopicConfig>();
  const owners = new Map<string, string[]>();
  let members: Member[] = [...initialMembers];
  let epoch = 0;
  let sorted: TopicConfig[] = [];
  let rr = 0;
  const listeners = new Set<() => void>();

  const changed = (): void => {
    sorted = [...topics.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const l of listeners) l();
  };
  const membershipChanged = (): void => {
    epoch++;
    changed();
  };
  const nextOwner = (): string => {
    const active = members
      .filter((m) => m.state === "Active")
      .map((m) => m.id)
      .sort();
    if (active.length === 0) return "";
    return active[rr++ % active.length]!;
  };
  const assign = (topic: string, partitions: number): void => {
    const list = owners.get(topic) ?? [];
    while (list.length < partitions) list.push(nextOwner());
    owners.set(topic, list);
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
        assign(topic.name, topic.partitions);
        changed();
        return topic;
      },
      async updateTopic(name, patch: TopicPatch) {
        const current = topics.get(name);
        if (current === undefined) throw topicNotFound(name);
        const next = { ...current, ...patch };
        topics.set(name, next);
        assign(name, next.partitions);
        changed();
        return next;
      },
      async deleteTopic(name) {
        if (!topics.delete(name)) throw topicNotFound(name);
        owners.delete(name);
        changed();
      },
      confirmTopicDeleted: async (name, uid) => {
        const t = topics.get(name);
        return t === undefined || (uid !== undefined && t.uid !== uid);
      },
      ownerOf: (topic, partition) => owners.get(topic)?.[partition] ?? "",
      members: () => members,
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
    owners: (topic) => [...(owners.get(topic) ?? [])],
    members: () => members,
    membershipEpoch: () => epoch,
  };
}
