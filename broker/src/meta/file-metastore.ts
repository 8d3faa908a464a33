// The single-node metastore: topics in one small JSON file under the data
// dir. Every change is written to a temp file, fsynced, renamed over the old
// file and the directory fsynced, so a crash leaves either the old or the
// new state, never a torn file. This node owns every partition.

import { mkdir, open, readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { conflict, notFound } from "../errors.ts";
import type { Member, Metastore, TopicConfig, TopicPatch } from "./types.ts";

interface FileState {
  version: 1;
  topics: TopicConfig[];
}

export interface FileMetastoreOptions {
  dataDir: string;
  nodeId: string;
  address: string;
}

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function writeDurably(dir: string, file: string, contents: string): Promise<void> {
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

export async function openFileMetastore(opts: FileMetastoreOptions): Promise<Metastore> {
  const dir = join(opts.dataDir, "metastore");
  const file = "topics.json";
  await mkdir(dir, { recursive: true });
  const topics = new Map<string, TopicConfig>();
  try {
    const state = JSON.parse(await readFile(join(dir, file), "utf8")) as FileState;
    for (const t of state.topics) topics.set(t.name, t);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  let sorted: TopicConfig[] = [];
  const listeners: Array<() => void> = [];
  const self: Member = { id: opts.nodeId, address: opts.address, state: "Active" };
  // Writes are serialised so two concurrent changes cannot interleave renames.
  let writing: Promise<void> = Promise.resolve();

  const refresh = (): void => {
    sorted = [...topics.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const l of listeners) l();
  };
  refresh();

  const persist = (): Promise<void> => {
    const state: FileState = { version: 1, topics: [...topics.values()] };
    const next = writing.then(() => writeDurably(dir, file, `${JSON.stringify(state, null, 2)}\n`));
    writing = next.catch(() => undefined);
    return next;
  };

  return {
    kind: "file",
    listTopics: () => sorted,
    getTopic: (name) => topics.get(name),
    async createTopic(topic) {
      if (topics.has(topic.name)) throw conflict(`topic "${topic.name}" already exists`);
      topics.set(topic.name, topic);
      try {
        await persist();
      } catch (err) {
        topics.delete(topic.name);
        throw err;
      }
      refresh();
      return topic;
    },
    async updateTopic(name, patch: TopicPatch) {
      const current = topics.get(name);
      if (current === undefined) throw notFound(`topic "${name}" not found`);
      const next = { ...current, ...patch };
      topics.set(name, next);
      try {
        await persist();
      } catch (err) {
        topics.set(name, current);
        throw err;
      }
      refresh();
      return next;
    },
    async deleteTopic(name) {
      const current = topics.get(name);
      if (current === undefined) throw notFound(`topic "${name}" not found`);
      topics.delete(name);
      try {
        await persist();
      } catch (err) {
        topics.set(name, current);
        throw err;
      }
      refresh();
    },
    // The file is the authority on a single node: absent here is absent.
    confirmTopicDeleted: async (name) => !topics.has(name),
    ownerOf: () => opts.nodeId,
    members: () => [self],
    onChange: (l) => {
      listeners.push(l);
    },
    close: async () => {
      await writing;
    },
  };
}
