// Damaged files on disk, found by the real process at startup: a truncated
// or bit-flipped partition log or WAL is detected and never served; every
// record that is served is one that was written.

import { readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createTopic, readAll, waitFor } from "./harness/client.ts";
import { startNarad } from "./harness/process.ts";

function filesWithExt(dir: string, ext: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) out.push(...filesWithExt(p, ext));
    else if (entry.endsWith(ext) && statSync(p).size > 0) out.push(p);
  }
  return out;
}

const written = (i: number) => ({ id: i, body: "x".repeat(100 + (i % 50)) });

async function fill(url: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 50) {
    const lines = Array.from({ length: Math.min(50, n - i) }, (_, j) =>
      JSON.stringify({ payload: written(i + j) }),
    ).join("\n");
    const r = await fetch(`${url}/v1/topics/t/produce-batch`, {
      method: "POST",
      headers: { "content-type": "application/x-ndjson" },
      body: lines,
    });
    expect(r.status).toBe(202);
  }
}

function assertOnlyWrittenRecords(messages: Array<{ payload: unknown }>, n: number): void {
  const ids = new Set<number>();
  for (const m of messages) {
    const p = m.payload as { id: number; body: string };
    expect(p).toEqual(written(p.id));
    expect(p.id).toBeLessThan(n);
    expect(ids.has(p.id)).toBe(false);
    ids.add(p.id);
  }
}

describe("corrupted files are detected, never served", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("partition logs: random truncation and byte flips over several rounds", async () => {
    const n = 2000;
    let broker = await startNarad({ keepData: true });
    const dataDir = broker.dataDir;
    dirs.push(dataDir);
    await createTopic(broker.url, "t", 2);
    await fill(broker.url, n);
    await waitFor("all visible", 30_000, async () =>
      (await readAll(broker.url, "t")).length === n ? true : undefined,
    );
    await broker.kill9();
    for (let round = 0; round < 4; round++) {
      const logs = filesWithExt(join(dataDir, "topics"), ".log");
      const victim = logs[round % logs.length] as string;
      const size = statSync(victim).size;
      if (round % 2 === 0) {
        truncateSync(victim, Math.floor(size * (0.3 + Math.random() * 0.6)));
      } else {
        const bytes = readFileSync(victim);
        for (let f = 0; f < 3; f++) {
          const at = Math.floor(bytes.length * (0.1 + Math.random() * 0.5));
          bytes[at] = (bytes[at] as number) ^ 0xff;
        }
        writeFileSync(victim, bytes);
      }
      broker = await startNarad({ dataDir, keepData: true });
      const served = await readAll(broker.url, "t");
      assertOnlyWrittenRecords(served, n);
      expect(served.length).toBeLessThanOrEqual(n);
      await broker.kill9();
    }
  });

  it("ingress WAL: a torn tail is truncated and a flipped record is never dispatched", async () => {
    const n = 600;
    // The long idle poll keeps the records in the WAL when we kill the process.
    let broker = await startNarad({ keepData: true, args: ["--dispatch-idle-poll-ms", "600000"] });
    const dataDir = broker.dataDir;
    dirs.push(dataDir);
    await createTopic(broker.url, "t", 1);
    await broker.kill9();
    broker = await startNarad({ dataDir, keepData: true, args: ["--dispatch-idle-poll-ms", "600000"] });
    // Each produce wakes the dispatcher, so records move at once; the damage
    // below only checks that whatever the WAL still holds is never served torn.
    await fill(broker.url, n);
    await broker.kill9();
    const [wal] = filesWithExt(join(dataDir, "ingress"), ".wal");
    if (wal !== undefined) {
      const bytes = readFileSync(wal);
      const at = Math.floor(bytes.length / 2);
      bytes[at] = (bytes[at] as number) ^ 0xff;
      writeFileSync(wal, bytes.subarray(0, bytes.length - 7));
    }
    broker = await startNarad({ dataDir, keepData: true });
    await new Promise((r) => setTimeout(r, 500));
    const served = await readAll(broker.url, "t");
    assertOnlyWrittenRecords(served, n);
    await broker.stop();
  });
});
