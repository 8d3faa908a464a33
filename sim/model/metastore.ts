// The authoritative metadata (the Kubernetes API in cluster mode) as a chain
// of immutable snapshots, and per-broker views that lag behind it. A view is
// just an older snapshot: brokers resolve owners, members and topics from the
// snapshot they last received, exactly as the watch-fed replica does.

import type { MemberView } from "../../broker/src/core/routing.ts";

export interface TopicMeta {
  name: string;
  /** Incarnation of the topic (the object's uid): a re-created topic gets a new one. */
  uid: number;
  partitions: number;
  /** Owner id per partition ("" = unassigned). */
  owners: readonly string[];
  /** deletionTimestamp set: hidden from getTopic, kept until every member removed its data (the finalizer). */
  deleting: boolean;
}

export interface Snapshot {
  version: number;
  /** Keyed by topic name; at most one object per name. */
  topics: ReadonlyMap<string, TopicMeta>;
  members: readonly MemberView[];
}

/** getTopic as a broker's replica answers it: objects being deleted are hidden. */
export function liveTopic(s: Snapshot, name: string): TopicMeta | undefined {
  const t = s.topics.get(name);
  return t === undefined || t.deleting ? undefined : t;
}

export function ownerOf(s: Snapshot, topic: string, partition: number): string {
  return liveTopic(s, topic)?.owners[partition] ?? "";
}

export class Metastore {
  #history: Snapshot[];
  #nextUid = 1;

  constructor(members: readonly MemberView[]) {
    this.#history = [{ version: 1, topics: new Map(), members }];
  }

  get latest(): Snapshot {
    return this.#history[this.#history.length - 1]!;
  }

  at(version: number): Snapshot {
    // Versions are dense from 1.
    return this.#history[version - 1]!;
  }

  /** When (sim ms) each version was written: views may lag behind by a bounded time. */
  readonly writtenAt: number[] = [0];

  #write(nowMs: number, topics: ReadonlyMap<string, TopicMeta>, members: readonly MemberView[]): Snapshot {
    const s: Snapshot = { version: this.latest.version + 1, topics, members };
    this.#history.push(s);
    this.writtenAt.push(nowMs);
    return s;
  }

  createTopic(nowMs: number, name: string, partitions: number, owners: readonly string[]): TopicMeta {
    const t: TopicMeta = { name, uid: this.#nextUid++, partitions, owners, deleting: false };
    const topics = new Map(this.latest.topics);
    topics.set(name, t);
    this.#write(nowMs, topics, this.latest.members);
    return t;
  }

  markDeleting(nowMs: number, name: string): void {
    const t = this.latest.topics.get(name);
    if (t === undefined || t.deleting) return;
    const topics = new Map(this.latest.topics);
    topics.set(name, { ...t, deleting: true });
    this.#write(nowMs, topics, this.latest.members);
  }

  /** The finalizer came off: the object is gone (a quorum read now says 404). */
  removeTopic(nowMs: number, name: string): void {
    if (!this.latest.topics.has(name)) return;
    const topics = new Map(this.latest.topics);
    topics.delete(name);
    this.#write(nowMs, topics, this.latest.members);
  }

  setOwner(nowMs: number, name: string, partition: number, owner: string): void {
    const t = this.latest.topics.get(name);
    if (t === undefined) return;
    const owners = [...t.owners];
    owners[partition] = owner;
    const topics = new Map(this.latest.topics);
    topics.set(name, { ...t, owners });
    this.#write(nowMs, topics, this.latest.members);
  }

  setMembers(nowMs: number, members: readonly MemberView[]): void {
    this.#write(nowMs, this.latest.topics, members);
  }
}
