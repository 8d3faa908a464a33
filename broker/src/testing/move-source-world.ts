// What the MoveSource unit tests build a source from: deps whose consumers,
// owner check and logger do nothing unless a test says otherwise; a two-node
// memory cluster holding topic "t" (one partition); and the freeze world of
// source-freeze and source-review (a log that only records whether it is
// frozen, a view that lags, an authority set apart from it). Temp dirs go
// away with removeTempDirs (afterEach).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { OpenedPartitionLog } from "../log/partition-log.ts";
import { topicFixture } from "../meta/contract.ts";
import type { AuthoritativeOwner } from "../meta/types.ts";
import { MoveSource, type MoveSourceDeps } from "../moves/source.ts";
import { fakeFrozenLog } from "./fake-frozen-log.ts";
import { createMemoryCluster } from "./memory-metastore.ts";

const tempDirs: string[] = [];

/** A fresh directory under the OS temp dir, removed by removeTempDirs. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const d of tempDirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/**
 * Deps of a source on n0: consumers that do nothing, an owner that has not
 * installed yet (PARTITION_MOVING, so the copy is never deleted), 1 MiB
 * fetches, a 60 s delete delay, no logs. Anything given replaces its default.
 */
export function quietSourceDeps(
  d: Pick<MoveSourceDeps, "metastore" | "logs" | "maxFreezeTtlMs"> & Partial<MoveSourceDeps>,
): MoveSourceDeps {
  return {
    nodeId: "n0",
    consumers: {
      freezePartition: async () => {},
      unfreezePartition: () => {},
      dropPartition: () => {},
      frontiers: async () => [],
    },
    ownerVerify: async () => {
      throw new Error("PARTITION_MOVING");
    },
    maxFetchBytes: 1 << 20,
    deleteDelayMs: 60_000,
    logger: { info() {}, warn() {} },
    ...d,
  };
}

/** A log store that hands out this one log for every partition, each with a directory from partitionDir. */
export function oneLogStore(
  log: OpenedPartitionLog,
  partitionDir: (topic: string, partition: number) => string,
): MoveSourceDeps["logs"] {
  return { get: async () => log, removePartition: async () => {}, exists: async () => true, partitionDir };
}

/** Queue consumers that record which partitions are frozen ("topic/partition") in `frozen`. */
export function recordingConsumers(frozen: Set<string>): MoveSourceDeps["consumers"] {
  return {
    freezePartition: async (t, p) => {
      frozen.add(`${t}/${p}`);
    },
    unfreezePartition: (t, p) => {
      frozen.delete(`${t}/${p}`);
    },
    dropPartition: () => {},
    frontiers: async () => [],
  };
}

/** Nodes n0 and n1 (Active), topic "t" with one partition owned by `owner` in the view. */
export async function twoNodesWithTopic(owner: string) {
  const cluster = createMemoryCluster([
    { id: "n0", address: "127.0.0.1:7942", state: "Active" },
    { id: "n1", address: "127.0.0.1:7943", state: "Active" },
  ]);
  const metastore = cluster.metastore();
  await metastore.createTopic(topicFixture("t", { partitions: 1 }));
  cluster.setOwner("t", 0, owner);
  return { cluster, metastore };
}

/**
 * t/0 owned by n0 in a view that keeps naming n0 (it lags), an authority
 * answering n0 until setAuthority, a fake log (`state.frozen`), the queue
 * freezes recorded in `queueFrozen`; start() makes (and resumes) a source on
 * the same directory each time, as a restarted process would.
 */
export async function freezeWorld(o: { tmpPrefix: string; deleteDelayMs?: number }) {
  const root = tempDir(o.tmpPrefix);
  const { metastore: base } = await twoNodesWithTopic("n0");
  const { log, state } = fakeFrozenLog();
  const queueFrozen = new Set<string>();
  let authority: AuthoritativeOwner | Error = { kind: "owner", node: "n0" };
  const metastore: MoveSourceDeps["metastore"] = {
    getTopic: (n) => base.getTopic(n),
    ownerOf: (t, p) => base.ownerOf(t, p),
    onChange: (l) => base.onChange(l),
    listTopics: () => base.listTopics(),
    authoritativeOwner: async () => {
      if (authority instanceof Error) throw authority;
      return authority;
    },
  };
  const partitionDir = (t: string, p: number) => join(root, t, String(p));
  const start = async () => {
    const source = new MoveSource(
      quietSourceDeps({
        metastore,
        logs: oneLogStore(log, partitionDir),
        consumers: recordingConsumers(queueFrozen),
        maxFreezeTtlMs: 1_000,
        lapseRetryMs: 100,
        deleteDelayMs: o.deleteDelayMs ?? 60_000,
      }),
    );
    await source.resume();
    return source;
  };
  mkdirSync(partitionDir("t", 0), { recursive: true });
  return {
    start,
    state,
    queueFrozen,
    dir: partitionDir("t", 0),
    setAuthority: (a: AuthoritativeOwner | Error) => {
      authority = a;
    },
  };
}

/** Polls every 20 ms until cond holds; throws after ms. */
export async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}
