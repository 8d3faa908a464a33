// Issue #13 item 7: a topic deleted while one of its partitions is frozen for
// a move must not leave queue consumers frozen (503 on consume/ack until a
// restart), neither for the deleted topic nor for a namesake created later.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { topicFixture } from "../meta/contract.ts";
import type { PbMoveVerifyResponse } from "../rpc/proto.ts";
import { fakeFrozenLog } from "../testing/fake-frozen-log.ts";
import { createMemoryCluster } from "../testing/memory-metastore.ts";
import {
  oneLogStore,
  quietSourceDeps,
  recordingConsumers,
  removeTempDirs,
  tempDir,
} from "../testing/move-source-world.ts";
import { MoveSource } from "./source.ts";

afterEach(removeTempDirs);

function setup() {
  const root = tempDir("narad-source-deleted-");
  const cluster = createMemoryCluster([{ id: "n0", address: "127.0.0.1:7942", state: "Active" }]);
  const shared = cluster.metastore();
  // A replica can apply a delete and a re-create in one change notification
  // (one watch batch); `muted` lets a test fold the two together.
  const gate = { muted: false };
  const metastore = { ...shared, onChange: (l: () => void) => shared.onChange(() => gate.muted || l()) };
  const consumerFrozen = new Set<string>();
  const { log } = fakeFrozenLog({ highWatermark: 0, segments: [] });
  const source = new MoveSource(
    quietSourceDeps({
      metastore,
      // The log store creates a partition's directory when it opens the log.
      logs: oneLogStore(log, (t, p) => {
        const dir = join(root, t, String(p));
        mkdirSync(dir, { recursive: true });
        return dir;
      }),
      consumers: recordingConsumers(consumerFrozen),
      ownerVerify: async () => ({ segments: [] }) as unknown as PbMoveVerifyResponse,
      maxFreezeTtlMs: 60_000,
    }),
  );
  return { metastore, source, consumerFrozen, gate };
}

describe("move source: topic deleted during a move", () => {
  it("unfreezes queue consumers when the frozen topic is deleted", async () => {
    const { metastore, source, consumerFrozen } = setup();
    await metastore.createTopic(topicFixture("t", { partitions: 2 }));
    await source.freeze("t", 1, "move-1", 30_000);
    expect(consumerFrozen.has("t/1")).toBe(true);
    await metastore.deleteTopic("t");
    expect(source.frozen("t", 1)).toBe(false);
    expect([...consumerFrozen]).toEqual([]);
    source.close();
  });

  it("does not carry a deleted incarnation's freeze over to a namesake", async () => {
    const { metastore, source, consumerFrozen, gate } = setup();
    await metastore.createTopic(topicFixture("t", { partitions: 2 }));
    await source.freeze("t", 0, "move-1", 30_000);
    gate.muted = true;
    await metastore.deleteTopic("t");
    await metastore.createTopic(topicFixture("t", { partitions: 1 }));
    gate.muted = false;
    await metastore.createTopic(topicFixture("unrelated"));
    expect(source.frozen("t", 0)).toBe(false);
    expect([...consumerFrozen]).toEqual([]);
    source.close();
  });
});
