// The file metastore's durability order (issue #13 item 8) and its topic
// uids: a change is visible only after it is on disk, a failed write leaves
// memory as it was, and every topic keeps its uid across reopens.
import { mkdir, mkdtemp, readFile, rm, rmdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NaradError } from "../errors.ts";
import { topicFixture } from "./contract.ts";
import { openFileMetastore } from "./file-metastore.ts";

describe("file metastore", () => {
  let dataDir: string;
  const open = () => openFileMetastore({ dataDir, nodeId: "node-0", address: "127.0.0.1:7942" });
  /** The temp file the durable write goes through; a directory there makes every write fail. */
  const tmpPath = () => join(dataDir, "metastore", "topics.json.tmp");

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "narad-file-meta-"));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it("shows a create or delete only once it is durable, and a failed write changes nothing", async () => {
    const store = await open();
    const kept = await store.createTopic(topicFixture("kept"));
    await mkdir(tmpPath());

    const creating = store.createTopic(topicFixture("never"));
    // Not yet durable: produce must not be able to write into it.
    expect(store.getTopic("never")).toBeUndefined();
    await expect(creating).rejects.toThrow();
    expect(store.getTopic("never")).toBeUndefined();

    const deleting = store.deleteTopic("kept");
    // Not yet durable: the dispatcher must not discard its records as "deleted".
    expect(store.getTopic("kept")).toEqual(kept);
    expect(await store.confirmTopicDeleted("kept", kept.uid)).toBe(false);
    await expect(deleting).rejects.toThrow();
    expect(store.getTopic("kept")).toEqual(kept);
    expect(store.listTopics().map((t) => t.name)).toEqual(["kept"]);

    await rmdir(tmpPath());
    // A later change builds on the durable state, not on the failed attempts.
    await store.createTopic(topicFixture("later"));
    await store.close();
    const reopened = await open();
    expect(reopened.listTopics().map((t) => t.name)).toEqual(["kept", "later"]);
    expect(reopened.getTopic("kept")?.uid).toBe(kept.uid);
    await reopened.close();
  });

  it("keeps one copy: a factor above 1 (or a minimum above the factor) is refused and nothing is stored", async () => {
    const store = await open();
    const refusal = async (p: Promise<unknown>) => {
      const err = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(NaradError);
      return { status: (err as NaradError).status, code: (err as NaradError).apiCode };
    };
    expect(await refusal(store.createTopic(topicFixture("rf2", { replication_factor: 2 })))).toEqual({
      status: 400,
      code: "replication_factor_above_brokers",
    });
    expect(
      await refusal(
        store.createTopic(topicFixture("min2", { replication_factor: 1, min_insync_replicas: 2 })),
      ),
    ).toEqual({ status: 400, code: "invalid_min_insync_replicas" });
    expect(store.listTopics()).toEqual([]);
    const one = await store.createTopic(
      topicFixture("one", { replication_factor: 1, min_insync_replicas: 1 }),
    );
    expect(await refusal(store.updateTopic("one", { min_insync_replicas: 2 }))).toEqual({
      status: 400,
      code: "invalid_min_insync_replicas",
    });
    expect(store.getTopic("one")).toEqual(one);
    // Every partition is this node's, never a replicated record.
    expect(store.ownerOf("one", 0)).toBe("node-0");
    expect(store.replicaAssignment?.("one", 0)).toBeUndefined();
    await store.close();
    const reopened = await open();
    expect(reopened.getTopic("one")).toMatchObject({ replication_factor: 1, min_insync_replicas: 1 });
    await reopened.close();
  });

  it("assigns and persists uids for topics written before topics had them", async () => {
    await mkdir(join(dataDir, "metastore"), { recursive: true });
    const legacy = { version: 1, topics: [topicFixture("old")] };
    await writeFile(join(dataDir, "metastore", "topics.json"), JSON.stringify(legacy));
    const first = await open();
    const uid = first.getTopic("old")?.uid;
    expect(uid).toMatch(/^[0-9a-f-]{36}$/);
    await first.close();
    expect(JSON.parse(await readFile(join(dataDir, "metastore", "topics.json"), "utf8")).topics[0].uid).toBe(
      uid,
    );
    const second = await open();
    expect(second.getTopic("old")?.uid).toBe(uid);
    await second.close();
  });
});
