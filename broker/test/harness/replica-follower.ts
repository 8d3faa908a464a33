// Test-only entry: runs the replication fetcher (replication-io/fetcher.ts)
// for one partition as its own process, so a test can kill -9 it mid
// catch-up. The broker does not start fetchers for live topics yet; this is
// how the data path is exercised until it does.
//   node replica-follower.ts '<json FollowerArgs>'
// Prints one JSON line per event: {"event":"truncated"|"progress"|"stop"|"error", ...}.
// SIGTERM stops it cleanly (the stop line follows).

import * as k from "../../src/constants.ts";
import { runFollower, TruncationRefusedError } from "../../src/replication-io/fetcher.ts";
import { createPeerPool } from "../../src/rpc/client.ts";

export interface FollowerArgs {
  leader: string;
  topic: string;
  partition: number;
  dir: string;
  leaderEpoch: number;
  maxBytes: number;
  maxWaitMs: number;
  segmentBytes: number;
  /** Pause after each append (so a test can kill it part-way through a catch-up). */
  pauseMs: number;
  /** kill -9 itself right after this step (a crash point the test cannot hit from outside). */
  crashAfter?: "reset";
}

const a = JSON.parse(process.argv[2] ?? "{}") as FollowerArgs;
const say = (o: object): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};
const pool = createPeerPool({
  maxMessageBytes: k.rpcMaxMessageBytes,
  commitRequestBytes: k.rpcCommitRequestBytes,
  readTimeoutMs: 5_000,
  defaultDeadlineMs: 10_000,
  keepaliveTimeMs: k.rpcKeepaliveTimeMs,
  keepaliveTimeoutMs: k.rpcKeepaliveTimeoutMs,
  reconnectBackoffInitialMs: 100,
  reconnectBackoffMaxMs: 1_000,
  flowControlWindowBytes: k.rpcFlowControlWindowBytes,
  retryAfterSeconds: 1,
});
const abort = new AbortController();
process.once("SIGTERM", () => abort.abort());
const leader = pool.peer(a.leader);
let pause = Promise.resolve();
try {
  const stop = await runFollower({
    leader: {
      offsetForLeaderEpoch: (req) => leader.offsetForLeaderEpoch(req),
      replicaFetch: async (req, signal) => {
        await pause;
        return leader.replicaFetch(req, signal);
      },
    },
    topic: a.topic,
    partition: a.partition,
    replicaId: "test-follower",
    volumeId: "test-volume",
    nowMs: Date.now,
    dir: a.dir,
    leaderEpoch: a.leaderEpoch,
    segmentBytes: a.segmentBytes,
    maxFrameBytes: k.rpcMaxMessageBytes,
    maxBytes: a.maxBytes,
    maxWaitMs: a.maxWaitMs,
    signal: abort.signal,
    onTruncated: (t) => say({ event: "truncated", ...t }),
    onReset: (r) => {
      say({ event: "reset", ...r });
      if (a.crashAfter === "reset") process.kill(process.pid, "SIGKILL");
    },
    onProgress: (p) => {
      say({ event: "progress", ...p });
      pause = new Promise((r) => setTimeout(r, a.pauseMs));
    },
  });
  say({ event: "stop", ...stop });
} catch (err) {
  say({
    event: "error",
    refused: err instanceof TruncationRefusedError,
    message: err instanceof Error ? err.message : String(err),
  });
  process.exitCode = 1;
} finally {
  pool.close();
}
