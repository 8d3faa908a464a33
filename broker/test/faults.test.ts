// Disk faults against a real broker process, with a ledger of every
// acknowledged (202) message:
//   - fdatasync EIO (through the test fault seam, harness/fault-seam.ts): the WAL poisons,
//     produce gets 503 and never a false 202; after a restart every
//     acknowledged message is there.
//   - a slow disk (200 ms fdatasync, same seam): produce latency grows,
//     nothing fails, the node stays ready.
//   - a full disk (a real tmpfs filled to the brim): produce gets 507 with a
//     JSON "disk full" error, nothing acknowledged is lost, and produce works
//     again once space is freed, without a restart.

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createTopic, readAll } from "./harness/client.ts";
import { startNarad } from "./harness/process.ts";

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface Ledger {
  acked: Set<number>;
  statuses: Map<number, number>;
  latenciesMs: number[];
}

/** Produces ids from `next()` with `inFlight` concurrent requests until `stop()` says so. */
async function produceLoop(
  url: string,
  topic: string,
  ledger: Ledger,
  stop: () => boolean,
  inFlight = 8,
): Promise<void> {
  let id = 0;
  const worker = async (): Promise<void> => {
    while (!stop()) {
      const mine = id++;
      const t0 = performance.now();
      let status = 0;
      try {
        const res = await fetch(`${url}/v1/topics/${topic}/produce?key=k${mine}`, {
          method: "POST",
          body: JSON.stringify({ id: mine }),
          signal: AbortSignal.timeout(30_000),
        });
        status = res.status;
        const text = await res.text();
        if (status >= 400) {
          const body = JSON.parse(text) as { error?: unknown };
          expect(typeof body.error).toBe("string");
        }
      } catch (err) {
        if ((err as Error).name === "AssertionError") throw err;
        status = -1;
      }
      ledger.latenciesMs.push(performance.now() - t0);
      ledger.statuses.set(status, (ledger.statuses.get(status) ?? 0) + 1);
      if (status === 202) ledger.acked.add(mine);
      if (status !== 202) await new Promise((r) => setTimeout(r, 20));
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

const newLedger = (): Ledger => ({ acked: new Set(), statuses: new Map(), latenciesMs: [] });

async function idsIn(url: string, topic: string): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (const m of await readAll(url, topic)) {
    const id = (m.payload as { id?: number } | null)?.id;
    if (typeof id !== "number") continue; // probes
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** Waits until every acknowledged id is readable (the dispatcher has moved it to the partition logs). */
async function waitAllVisible(url: string, topic: string, acked: Set<number>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ids = await idsIn(url, topic);
    const missing = [...acked].filter((id) => !ids.has(id));
    if (missing.length === 0) return ids;
    if (Date.now() > deadline)
      throw new Error(`${missing.length} acknowledged ids never became visible: ${missing.slice(0, 10)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

describe("disk faults at process level", () => {
  it("fdatasync EIO: produce gets 503 (never a false 202); every acknowledged message survives a restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), "narad-faults-eio-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const control = join(dir, "faults.json");
    writeFileSync(control, "");
    const dataDir = join(dir, "data");
    let broker = await startNarad({ dataDir, faults: control, logLevel: "fatal" });
    await createTopic(broker.url, "t", 3);
    const ledger = newLedger();
    let phase: "ok" | "failing" | "done" = "ok";
    const loop = produceLoop(broker.url, "t", ledger, () => phase === "done");
    while (ledger.acked.size < 300) await new Promise((r) => setTimeout(r, 20));
    writeFileSync(control, JSON.stringify({ datasyncError: "EIO" }));
    phase = "failing";
    // Wait until the WAL reports itself poisoned, then keep producing for a while.
    for (;;) {
      const st = (await (await fetch(`${broker.url}/admin/v1/status`)).json()) as {
        wal: { poisoned: boolean };
      };
      if (st.wal.poisoned) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const ackedAtPoison = ledger.acked.size;
    const before = ledger.statuses.get(503) ?? 0;
    await new Promise((r) => setTimeout(r, 1500));
    phase = "done";
    await loop;
    expect(ledger.acked.size).toBe(ackedAtPoison); // not one 202 after the poison
    expect((ledger.statuses.get(503) ?? 0) - before).toBeGreaterThan(10);
    const poisonedProduce = await fetch(`${broker.url}/v1/topics/t/produce`, { method: "POST", body: "x" });
    expect(poisonedProduce.status).toBe(503);
    expect(poisonedProduce.headers.get("retry-after")).not.toBeNull();
    expect(((await poisonedProduce.json()) as { error: string }).error).toMatch(/WAL/);

    // Crash, clear the fault, restart: every acknowledged message is there.
    await broker.kill9();
    writeFileSync(control, "");
    broker = await startNarad({ dataDir, logLevel: "error" });
    cleanups.push(() => broker.stop());
    const ids = await waitAllVisible(broker.url, "t", ledger.acked);
    const dup = [...ids.values()].filter((n) => n > 1).length;
    const unacked = [...ids.keys()].filter((id) => !ledger.acked.has(id)).length;
    console.log(
      `faults EIO: acknowledged ${ledger.acked.size}, lost 0, duplicated ${dup}, present but not acknowledged ${unacked}, statuses ${JSON.stringify(Object.fromEntries(ledger.statuses))}`,
    );
    expect(dup).toBe(0);
    // A healthy WAL after restart takes produce again.
    expect((await fetch(`${broker.url}/v1/topics/t/produce`, { method: "POST", body: "x" })).status).toBe(
      202,
    );
    await broker.stop();
  });

  it("slow disk (200 ms fdatasync): latency grows, every produce still succeeds, the node stays ready", async () => {
    const dir = mkdtempSync(join(tmpdir(), "narad-faults-slow-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const control = join(dir, "faults.json");
    writeFileSync(control, "");
    const broker = await startNarad({ dataDir: join(dir, "data"), faults: control });
    cleanups.push(() => broker.stop());
    await createTopic(broker.url, "t", 3);
    const run = async (ms: number): Promise<Ledger> => {
      const l = newLedger();
      const end = Date.now() + ms;
      await produceLoop(broker.url, "t", l, () => Date.now() > end, 16);
      return l;
    };
    const fast = await run(3000);
    writeFileSync(control, JSON.stringify({ datasyncDelayMs: 200 }));
    await new Promise((r) => setTimeout(r, 300));
    let readyFailures = 0;
    let probing = true;
    const probe = (async () => {
      while (probing) {
        if ((await fetch(`${broker.url}/readyz`)).status !== 200) readyFailures++;
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const slow = await run(6000);
    probing = false;
    await probe;
    writeFileSync(control, "");
    const p50Fast = percentile(fast.latenciesMs, 50);
    const p50Slow = percentile(slow.latenciesMs, 50);
    console.log(
      `faults slow disk: p50 ${p50Fast.toFixed(1)} ms -> ${p50Slow.toFixed(1)} ms, p99 ${percentile(fast.latenciesMs, 99).toFixed(1)} -> ${percentile(slow.latenciesMs, 99).toFixed(1)} ms; ${fast.acked.size} vs ${slow.acked.size} acknowledged; statuses ${JSON.stringify(Object.fromEntries(slow.statuses))}`,
    );
    expect([...slow.statuses.keys()]).toEqual([202]);
    expect(p50Slow).toBeGreaterThanOrEqual(190);
    expect(readyFailures).toBe(0);
    await waitAllVisible(broker.url, "t", new Set([...fast.acked]));
  });

  it("disk full (tmpfs): 507 with a JSON error, no acknowledged loss, produce resumes without a restart once space is freed", async () => {
    const mnt = mkdtempSync(join(tmpdir(), "narad-faults-enospc-"));
    cleanups.push(() => rmSync(mnt, { recursive: true, force: true }));
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=24m", "tmpfs", mnt]);
    } catch (err) {
      throw new Error(`cannot mount a tmpfs for the disk-full test (needs root): ${(err as Error).message}`);
    }
    cleanups.push(() => {
      execFileSync("umount", ["-l", mnt]);
    });
    const dataDir = join(mnt, "data");
    mkdirSync(dataDir);
    let broker = await startNarad({ dataDir, logLevel: "fatal" });
    await createTopic(broker.url, "t", 3);
    const ledger = newLedger();
    let stop = false;
    const loop = produceLoop(broker.url, "t", ledger, () => stop, 4);
    while (ledger.acked.size < 200) await new Promise((r) => setTimeout(r, 20));

    // Fill the file system to the last byte.
    const filler = join(mnt, "filler");
    const fh = await open(filler, "w");
    const chunk = Buffer.alloc(64 * 1024, 1);
    try {
      for (;;) await fh.write(chunk);
    } catch (err) {
      expect((err as { code?: string }).code).toBe("ENOSPC");
    }
    try {
      for (;;) await fh.write(chunk, 0, 512);
    } catch {
      // full to the last block
    }
    await fh.close();
    const ackedAtFull = ledger.acked.size;
    const full507 = async (): Promise<Response> => {
      for (let i = 0; ; i++) {
        const res = await fetch(`${broker.url}/v1/topics/t/produce?key=probe`, {
          method: "POST",
          body: "probe",
        });
        if (res.status === 507 || i > 200) return res;
        await res.text();
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const refused = await full507();
    expect(refused.status).toBe(507);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(((await refused.json()) as { error: string }).error).toMatch(/disk full/);
    await new Promise((r) => setTimeout(r, 2000));
    const during = new Map(ledger.statuses);
    expect((await fetch(`${broker.url}/readyz`)).status).toBe(200);
    const st = (await (await fetch(`${broker.url}/admin/v1/status`)).json()) as {
      wal: { poisoned: boolean };
    };
    expect(st.wal.poisoned).toBe(false);

    // Space comes back: produce works again on the same process.
    unlinkSync(filler);
    const resumedAt = ledger.acked.size;
    const t0 = Date.now();
    while (ledger.acked.size < resumedAt + 200) {
      if (Date.now() - t0 > 30_000)
        throw new Error("produce did not resume within 30 s after space was freed");
      await new Promise((r) => setTimeout(r, 50));
    }
    const resumeMs = Date.now() - t0;
    stop = true;
    await loop;
    expect(broker.child.exitCode).toBeNull();
    const statuses = [...ledger.statuses.keys()].sort();
    expect(statuses.every((s) => s === 202 || s === 507)).toBe(true);

    const ids = await waitAllVisible(broker.url, "t", ledger.acked);
    // And once more after a crash and restart.
    await broker.kill9();
    broker = await startNarad({ dataDir, logLevel: "error" });
    cleanups.push(() => broker.stop());
    const after = await waitAllVisible(broker.url, "t", ledger.acked);
    const dup = [...after.values()].filter((n) => n > 1).length;
    console.log(
      `faults disk full: acknowledged ${ledger.acked.size} (${ackedAtFull} before the disk filled), lost 0, duplicated ${dup}, visible before restart ${ids.size}; statuses during ${JSON.stringify(Object.fromEntries(during))}; produce resumed ${resumeMs} ms after space was freed`,
    );
    expect(dup).toBe(0);
    await broker.stop();
  });
});
