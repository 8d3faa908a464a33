// Child process for the replica crash tests: loops writing one kind of
// replica state into a directory and prints "<i>\n" after write i has
// returned (durable). The test kill -9s it at a random moment and checks
// what a reload finds against the acknowledged index.
//   node replica-state-writer.ts <checkpoint|epochs|log|truncate|volume> <dir>

import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { encodeFrame } from "../../src/core/log-codec.ts";
import { ReplicaLog } from "../../src/replication-io/replica-log.ts";
import { appendEpoch, writeCheckpoint } from "../../src/replication-io/replica-state-files.ts";
import { ensureVolumeId } from "../../src/replication-io/volume-id-file.ts";

const [mode, dir] = process.argv.slice(2);
if (mode === undefined || dir === undefined) throw new Error("usage: replica-state-writer <mode> <dir>");
await mkdir(dir, { recursive: true });

const ack = (i: number): void => {
  process.stdout.write(`${i}\n`);
};

/** A frame of `n` records at `base`; payload sizes vary so frames straddle pages. */
export function writerFrame(base: number, n: number): Buffer {
  const recs = Array.from({ length: n }, (_, j) => ({
    key: Buffer.from(`k${base + j}`),
    createdMs: 1,
    payload: Buffer.alloc(200 + ((base + j) % 7) * 300, (base + j) % 251),
    incarnation: "2222222222222222",
    seq: base + j + 1,
  }));
  return encodeFrame(recs, base, 1_000);
}

if (mode === "checkpoint") {
  for (let i = 0; ; i++) {
    await writeCheckpoint(dir, { leaderEpoch: i, hwm: i * 10 });
    ack(i);
  }
} else if (mode === "epochs") {
  for (let i = 0; ; i++) {
    await appendEpoch(dir, i, i * 5);
    ack(i);
  }
} else if (mode === "log") {
  const log = await ReplicaLog.open({
    dir: join(dir, "p00000"),
    segmentBytes: 64 * 1024,
    maxFrameBytes: 1 << 20,
  });
  for (;;) {
    const end = await log.append(writerFrame(log.endOffset, 3));
    ack(end);
  }
} else if (mode === "truncate") {
  // Alternates: append 9 records (3 frames, one write), then truncate 6 back;
  // small segments so truncations unlink segments as well as cut one.
  // Prints "<end> <next op>" after each op ("a": append next, "t": truncate next).
  const log = await ReplicaLog.open({
    dir: join(dir, "p00000"),
    segmentBytes: 4 * 1024,
    maxFrameBytes: 1 << 20,
  });
  for (;;) {
    const e = log.endOffset;
    await log.append(Buffer.concat([writerFrame(e, 3), writerFrame(e + 3, 3), writerFrame(e + 6, 3)]));
    process.stdout.write(`${log.endOffset} t\n`);
    await log.truncateTo(log.endOffset - 6);
    process.stdout.write(`${log.endOffset} a\n`);
  }
} else if (mode === "volume") {
  // A fresh volume each round: the marker either exists whole or not at all.
  for (let i = 0; ; i++) {
    await ensureVolumeId(join(dir, `v${i}`), { clusterUid: "c", memberId: `m${i}` });
    ack(i);
  }
} else throw new Error(`unknown mode ${mode}`);
