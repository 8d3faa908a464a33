// Crash safety of the replica files (ADR 0007) against real kill -9s: a
// child process loops writing one kind of state (harness/replica-state-writer.ts),
// is killed at a random moment, and the loader must find exactly a state
// that was written: the last acknowledged one or the one in flight, never
// a torn or half file.

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ReplicaLog } from "../src/replication-io/replica-log.ts";
import { readCheckpoint, readEpochFile } from "../src/replication-io/replica-state-files.ts";
import { readVolumeId } from "../src/replication-io/volume-id-file.ts";
import { repoRoot } from "./harness/process.ts";

const rounds = Number(process.env.NARAD_REPLICA_CRASH_ROUNDS ?? 8);
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** Runs the writer until it acknowledged at least `minAcks`, waits a random while more, kill -9s it. */
async function crashWriter(
  mode: string,
  dir: string,
  seed: number,
): Promise<{ lastAck: number; lastLine: string }> {
  const child: ChildProcess = spawn(
    process.execPath,
    [join(repoRoot, "broker/test/harness/replica-state-writer.ts"), mode, dir],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let lastAck = -1;
  let lastLine = "";
  let buf = "";
  let acks = 0;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  await new Promise<void>((resolve, reject) => {
    child.once("exit", (code, sig) => reject(new Error(`writer exited early: ${code ?? sig}`)));
    child.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split("\n");
      buf = lines.pop()!;
      for (const l of lines) {
        lastLine = l;
        lastAck = Number.parseInt(l, 10);
        acks++;
      }
      if (acks >= 3) resolve();
    });
  });
  // A pseudo-random extra delay (seeded by round) so kills land at different points of a write.
  await new Promise((r) => setTimeout(r, 5 + ((seed * 7919) % 97)));
  child.kill("SIGKILL");
  await exited;
  // Acks that were already in the pipe when the kill landed.
  // (A line still without its newline was cut by the kill: the op it reports is the one in flight.)
  for (const l of buf.split("\n").slice(0, -1))
    if (l !== "") {
      lastLine = l;
      lastAck = Number.parseInt(l, 10);
    }
  return { lastAck, lastLine };
}

describe("replica state under kill -9", () => {
  it(`checkpoint: ${rounds} rounds, each reload is the last acknowledged write or the next`, async () => {
    const found: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const dir = await mkdtemp(join(tmpdir(), "narad-crash-cp-"));
      dirs.push(dir);
      const { lastAck } = await crashWriter("checkpoint", dir, round);
      const loaded = await readCheckpoint(dir);
      expect(loaded.ok, JSON.stringify(loaded)).toBe(true);
      const cp = loaded.ok ? loaded.checkpoint : null;
      expect(cp).not.toBeNull();
      expect([lastAck, lastAck + 1]).toContain(cp!.leaderEpoch);
      expect(cp!.hwm).toBe(cp!.leaderEpoch * 10);
      found.push(cp!.leaderEpoch - lastAck);
    }
    console.log(`checkpoint rounds: reload = last ack + ${JSON.stringify(found)}`);
  });

  it(`leader-epochs: ${rounds} rounds, each reload is a prefix ending at the last acknowledged entry or the next`, async () => {
    const found: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const dir = await mkdtemp(join(tmpdir(), "narad-crash-ep-"));
      dirs.push(dir);
      const { lastAck } = await crashWriter("epochs", dir, round);
      const loaded = await readEpochFile(dir, Number.MAX_SAFE_INTEGER);
      expect(loaded.ok, JSON.stringify(loaded)).toBe(true);
      const h = loaded.ok ? loaded.history : [];
      expect(h).toEqual(h.map((_, i) => ({ epoch: i, startOffset: i * 5 })));
      expect([lastAck + 1, lastAck + 2]).toContain(h.length);
      // Against a log that recovered to offset 5 * lastAck: entries at or above it go.
      const cut = await readEpochFile(dir, lastAck * 5);
      expect(cut.ok && cut.history.length).toBe(lastAck);
      found.push(h.length - 1 - lastAck);
    }
    console.log(`leader-epochs rounds: reload = last ack + ${JSON.stringify(found)}`);
  });

  it(`follower log: ${rounds} rounds, each reload ends at the last acknowledged end or one frame past it, CRC-valid`, async () => {
    const found: Array<{ lastAck: number; end: number; cut: number }> = [];
    for (let round = 0; round < rounds; round++) {
      const dir = await mkdtemp(join(tmpdir(), "narad-crash-log-"));
      dirs.push(dir);
      const { lastAck } = await crashWriter("log", dir, round);
      const log = await ReplicaLog.open({
        dir: join(dir, "p00000"),
        segmentBytes: 64 * 1024,
        maxFrameBytes: 1 << 20,
      });
      expect([lastAck, lastAck + 3]).toContain(log.endOffset);
      found.push({ lastAck, end: log.endOffset, cut: log.recovery.cutBytes });
      // A second open finds nothing more to cut: the recovered log is whole frames.
      const again = await ReplicaLog.open({
        dir: join(dir, "p00000"),
        segmentBytes: 64 * 1024,
        maxFrameBytes: 1 << 20,
      });
      expect(again.recovery.cutBytes).toBe(0);
      expect(again.endOffset).toBe(log.endOffset);
    }
    console.log(`follower log rounds: ${JSON.stringify(found)}`);
  });

  it(`follower log truncation: ${rounds} rounds of append/truncate across segments, each reload within the op in flight`, async () => {
    const found: string[] = [];
    for (let round = 0; round < rounds; round++) {
      const dir = await mkdtemp(join(tmpdir(), "narad-crash-trunc-"));
      dirs.push(dir);
      const { lastAck, lastLine } = await crashWriter("truncate", dir, round);
      const next = lastLine.split(" ")[1];
      const log = await ReplicaLog.open({
        dir: join(dir, "p00000"),
        segmentBytes: 4 * 1024,
        maxFrameBytes: 1 << 20,
      });
      // An append in flight ends at lastAck or 9 past it (or is cut back to a frame);
      // a truncation in flight leaves anything from its target up to where it started.
      const [lo, hi] = next === "t" ? [lastAck - 6, lastAck] : [lastAck, lastAck + 9];
      expect(log.endOffset, lastLine).toBeGreaterThanOrEqual(lo);
      expect(log.endOffset, lastLine).toBeLessThanOrEqual(hi);
      // Contiguous segments of whole CRC-valid frames (open() refuses a damaged sealed segment).
      const again = await ReplicaLog.open({
        dir: join(dir, "p00000"),
        segmentBytes: 4 * 1024,
        maxFrameBytes: 1 << 20,
      });
      expect(again.endOffset).toBe(log.endOffset);
      found.push(`${lastAck}${next}->${log.endOffset}`);
    }
    console.log(`truncation rounds (last ack, next op -> reloaded end): ${found.join(" ")}`);
  });

  it(`volume-id: ${rounds} rounds, every marker dir holds a whole marker or none`, async () => {
    let whole = 0;
    let missing = 0;
    for (let round = 0; round < rounds; round++) {
      const dir = await mkdtemp(join(tmpdir(), "narad-crash-vol-"));
      dirs.push(dir);
      const { lastAck } = await crashWriter("volume", dir, round);
      for (const name of await readdir(dir)) {
        const i = Number(name.slice(1));
        const v = await readVolumeId(join(dir, name), { clusterUid: "c", memberId: `m${i}` });
        expect(v.kind, `${name}: ${JSON.stringify(v)}`).not.toBe("foreign");
        if (i <= lastAck) expect(v.kind).toBe("own");
        if (v.kind === "own") whole++;
        else missing++;
      }
    }
    console.log(`volume-id rounds: ${whole} whole markers, ${missing} missing (in flight at the kill)`);
  });
});
