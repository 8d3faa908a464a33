// The single-node metastore: topics in one small JSON file under the data
// dir. Every change is written to a temp file, fsynced, renamed over the old
// file and the directory fsynced, so a crash leaves either the old or the
// new state, never a torn file. This node owns every partition, and holds
// the only copy of each (replication_factor 1).
//
// Durable first: a change builds the next state, writes it, and only then
// swaps it in memory. Until the write returned nobody (produce, dispatcher,
// GET) sees the change, so a 201/204 is never answered for a state a crash
// could undo, and a failed write leaves memory exactly as it was.

import { randomUUID } from "node:crypto";
import { mkdir, open, readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { resolveReplicationSettings } from "../../../packages/api/src/v1alpha1/replication.ts";
import { coded, topicExists, topicNotFound } from "../errors.ts";
import type { Member, Metastore, TopicConfig, TopicPatch } from "./types.ts";

interface FileState {
  version: 1;
  /** `uid` is absent in files written before topics had uids; open() assigns and persists one. */
  topics: Array<Omit<TopicConfig, "uid"> & { uid?: string }>;
}

/** Writes `contents` as dir/file so that a crash leaves the old or the new file. */
export type StateWriter = (dir: string, file: string, contents: string) => Promise<void>;

export interface FileMetastoreOptions {
  dataDir: string;
  nodeId: string;
  address: string;
  /** Test seam: replaces the durable write (fault injection); defaults to writeDurably. */
  writeState?: StateWriter;
}

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export async function writeDurably(dir: string, file: string, contents: string): Promise<void> {
  const tmp = join(dir, `${file}.tmp`);
  const fh = await open(tmp, "w");
  try {
    await fh.writeFile(contents);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, join(dir, file));
  await fsyncPath(dir);
}

/**
 * One node holds every partition, so one copy is all it can keep: a factor
 * above 1 is refused (400 replication_factor_above_brokers), as is a
 * min_insync_replicas above the factor. Absent fields are one copy.
 */
function checkReplication(t: Pick<TopicConfig, "replication_factor" | "min_insync_replicas">): void {
  if (t.replication_factor === undefined && t.min_insync_replicas === undefined) return;
  const r = resolveReplicationSettings({
    replicationFactor: t.replication_factor ?? 1,
    ...(t.min_insync_replicas === undefined ? {} : { minInsyncReplicas: t.min_insync_replicas }),
    brokers: 1,
  });
  if (!r.ok) throw coded("BAD_REQUEST", r.code, `${r.message} (a single node keeps one copy)`);
}

function sortedByName(topics: ReadonlyMap<string, TopicConfig>): TopicConfig[] {
  return [...topics.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function serialise(topics: ReadonlyMap<string, TopicConfig>): string {
  const state: FileState = { version: 1, topics: [...topics.values()] };
  return `${JSON.stringify(state, null, 2)}\n`;
}

export async function openFileMetastore(opts: FileMetastoreOptions): Promise<Metastore> {
  const dir = join(opts.dataDir, "metastore");
  const file = "topics.json";
  const write = opts.writeState ?? writeDurably;
  await mkdir(dir, { recursive: true });
  let topics = new Map<string, TopicConfig>();
  let missingUid = false;
  try {
    const state = JSON.parse(await readFile(join(dir, file), "utf8")) as FileState;
    for (const t of state.topics) {
      if (t.uid === undefined) missingUid = true;
      topics.set(t.name, { ...t, uid: t.uid ?? randomUUID() });
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  // An upgrade from uid-less topics: the uids must be on disk before any WAL
  // record carries one, or a restart would mint different uids and orphan them.
  if (missingUid) await write(dir, file, serialise(topics));
  let sorted = sortedByName(topics);
  const listeners: Array<() => void> = [];
  const self: Member = { id: opts.nodeId, address: opts.address, state: "Active" };
  // Changes are serialised: each builds on the state the previous one made
  // durable, so two concurrent changes can neither interleave renames nor
  // lose each other's update.
  let queue: Promise<unknown> = Promise.resolve();

  /**
   * Runs `change` against the current durable state; when it returns a next
   * state, writes it durably and only then swaps it in. A throw (from the
   * change or the write) leaves memory unchanged.
   */
  const apply = <T>(
    change: (current: ReadonlyMap<string, TopicConfig>) => { next: Map<string, TopicConfig>; result: T },
  ): Promise<T> => {
    const run = queue.then(async () => {
      const { next, result } = change(topics);
      await write(dir, file, serialise(next));
      topics = next;
      sorted = sortedByName(topics);
      for (const l of listeners) l();
      return result;
    });
    queue = run.catch(() => undefined);
    return run;
  };

  return {
    kind: "file",
    listTopics: () => sorted,
    getTopic: (name) => topics.get(name),
    createTopic: (input) =>
      apply((current) => {
        if (current.has(input.name)) throw topicExists(input.name);
        checkReplication(input);
        const topic: TopicConfig = { ...input, uid: randomUUID() };
        const next = new Map(current);
        next.set(topic.name, topic);
        return { next, result: topic };
      }),
    updateTopic: (name, patch: TopicPatch) =>
      apply((current) => {
        const existing = current.get(name);
        if (existing === undefined) throw topicNotFound(name);
        const updated: TopicConfig = { ...existing, ...patch };
        checkReplication(updated);
        const next = new Map(current);
        next.set(name, updated);
        return { next, result: updated };
      }),
    deleteTopic: (name) =>
      apply((current) => {
        if (!current.has(name)) throw topicNotFound(name);
        const next = new Map(current);
        next.delete(name);
        return { next, result: undefined };
      }),
    // The file is the authority on a single node: absent here is absent, and
    // an incarnation is gone once the name is absent or holds another uid.
    confirmTopicDeleted: async (name, uid) => {
      const t = topics.get(name);
      return t === undefined || (uid !== undefined && t.uid !== uid);
    },
    ownerOf: () => opts.nodeId,
    members: () => [self],
    onChange: (l) => {
      listeners.push(l);
    },
    close: async () => {
      await queue;
    },
  };
}
