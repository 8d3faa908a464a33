// F2 (found by sim/): a source restarted after handing a partition off (its
// moved-away mark on disk) re-freezes the copy in resume(). The destination
// finishing the move then renews the freeze under its own token; the
// restarted source must accept it (not answer CONFLICT "frozen by another
// partition move"), both when its view already names the destination owner
// and when its view still lags the swap. A CONFLICT there either wedged the
// move (destination already owner: retried forever) or failed it (not yet
// owner: released the partition, later served as an empty log).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fakeFrozenLog } from "../testing/fake-frozen-log.ts";
import {
  oneLogStore,
  quietSourceDeps,
  removeTempDirs,
  tempDir,
  twoNodesWithTopic,
} from "../testing/move-source-world.ts";
import { MoveSource } from "./source.ts";

afterEach(removeTempDirs);

async function restartedSource(mark: string, ownerInView: string) {
  const root = tempDir("narad-source-restart-");
  const { cluster, metastore } = await twoNodesWithTopic(ownerInView);
  const partitionDir = (t: string, p: number) => join(root, t, String(p));
  mkdirSync(partitionDir("t", 0), { recursive: true });
  writeFileSync(join(partitionDir("t", 0), "moved-away"), mark);
  const { log } = fakeFrozenLog({ highWatermark: 7, segments: [{ base: 0, bytes: 100 }] });
  // The new owner has not installed yet (quietSourceDeps): the copy is never deleted here.
  const source = new MoveSource(
    quietSourceDeps({
      metastore,
      logs: oneLogStore(log, partitionDir),
      maxFreezeTtlMs: 60_000,
    }),
  );
  await source.resume();
  return { source, log, cluster };
}

describe("move source: restarted after the handoff", () => {
  for (const [name, mark, owner] of [
    ["view names the destination owner", "handoff", "n1"],
    ["view still lags the swap", "handoff", "n0"],
    ["moved away before the handoff", "", "n1"],
  ] as const) {
    it(`accepts the destination's freeze token (${name})`, async () => {
      const { source, log } = await restartedSource(mark, owner);
      expect(source.frozen("t", 0)).toBe(true);
      expect(log.frozen).toBe(true);
      const manifest = await source.freeze("t", 0, "destination-token", 30_000, true);
      expect(manifest.high_watermark).toBe(7);
      expect(manifest.frozen).toBe(true);
      // A renewal without the handoff flag (the destination's #renew while ready) too.
      await expect(source.freeze("t", 0, "destination-token", 30_000)).resolves.toBeDefined();
      // The freeze never lapses and the move's unfreeze cannot end it: the copy is given away.
      source.unfreeze("t", 0, "destination-token");
      expect(source.frozen("t", 0)).toBe(true);
      expect(log.frozen).toBe(true);
      source.close();
    });
  }
});
