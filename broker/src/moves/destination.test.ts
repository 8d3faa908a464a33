// MoveManager's memory bound: finished moves are forgotten beyond
// maxFinishedMoves (issue #13 item 10). Moves here fail at once (the fake
// source says CONFLICT: it neither owns nor holds the partition), so each
// one is a finished move.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { conflict } from "../errors.ts";
import type { PeerClient } from "../rpc/client.ts";
import { MoveManager, maxFinishedMoves } from "./destination.ts";

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "narad-move-dest-"));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

const quiet = { info() {}, warn() {}, error() {} };

function manager(partitions: number): MoveManager {
  const refusing = {
    moveManifest: () => Promise.reject(conflict("fake source holds nothing")),
    moveUnfreeze: () => Promise.resolve(),
  } as unknown as PeerClient;
  return new MoveManager({
    nodeId: "dst",
    dataDir,
    metastore: {
      getTopic: (name: string) => ({ name, partitions }) as never,
      ownerOf: () => "src",
      members: () => [{ id: "src", address: "127.0.0.1:1", clusterAddress: "127.0.0.1:2", state: "Active" }],
      onChange: () => () => undefined,
      caughtUp: () => true,
    } as never,
    logs: { hold: () => () => undefined, install: () => Promise.resolve() },
    consumers: { dropPartition() {} },
    peers: { peer: () => refusing },
    log: { segmentBytes: 1 << 20, indexIntervalBytes: 4096, maxFrameBytes: 1 << 20 },
    timing: {
      chunkBytes: 1 << 20,
      catchUp: { closeEnoughBytes: 1, maxRounds: 1, maxStalledRounds: 1 },
      freezeTtlMs: 30_000,
      renewIntervalMs: 5_000,
      retryMs: 10,
    },
    logger: quiet,
  });
}

describe("MoveManager", () => {
  it("keeps at most maxFinishedMoves finished moves, forgetting the oldest", async () => {
    const n = 300; // more than maxFinishedMoves (256)
    const m = manager(n);
    for (let p = 0; p < n; p++) {
      await m.start("t", p, "src");
      for (let i = 0; m.get("t", p)?.state !== "failed" && i < 200; i++)
        await new Promise((r) => setTimeout(r, 1));
    }
    const all = m.list();
    expect(all.length).toBeLessThanOrEqual(256);
    expect(maxFinishedMoves).toBe(256);
    expect(all.every((s) => s.state === "failed")).toBe(true);
    // The newest are kept, the oldest forgotten.
    expect(m.get("t", n - 1)?.state).toBe("failed");
    expect(m.get("t", 0)).toBeUndefined();
    await m.close();
  });
});
