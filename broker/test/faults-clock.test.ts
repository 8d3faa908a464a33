// Wall-clock jumps on a real broker process: libfaketime (LD_PRELOAD, the
// offset re-read from a file on every call, monotonic clock left alone like a
// real NTP step or `date -s`) moves the broker's wall clock an hour back and
// two hours forward while it serves. Leases, visibility timeouts and
// long-polls must not move with it; produce and consume keep working.
// libfaketime comes from the system, or is fetched from the Debian archive
// into ~/.cache on first use (harness/faketime.ts).

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { ensureFaketime } from "./harness/faketime.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

const dir = mkdtempSync(join(tmpdir(), "narad-clock-"));
const offsetFile = join(dir, "faketime");
let broker: RunningNarad | undefined;
afterAll(async () => {
  await broker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const jump = (offset: string): void => writeFileSync(offsetFile, `${offset}\n`);

async function consume(
  url: string,
  wait = "0s",
): Promise<{ status: number; handle?: string; key?: string; ms: number }> {
  const t0 = performance.now();
  const r = await fetch(`${url}/v1/topics/t/consume?wait=${wait}`, { signal: AbortSignal.timeout(60_000) });
  const ms = performance.now() - t0;
  if (r.status !== 200) {
    await r.body?.cancel();
    return { status: r.status, ms };
  }
  const m = (await r.json()) as { receipt_handle: string; key: string };
  return { status: 200, handle: m.receipt_handle, key: m.key, ms };
}

describe("wall-clock jumps", () => {
  it("an hour back and two forward: leases and long-polls keep their real durations", async () => {
    const lib = ensureFaketime();
    jump("+0");
    broker = await startNarad({
      dataDir: join(dir, "data"),
      env: {
        LD_PRELOAD: lib,
        FAKETIME_TIMESTAMP_FILE: offsetFile,
        FAKETIME_NO_CACHE: "1",
        DONT_FAKE_MONOTONIC: "1",
      },
    });
    const url = broker.url;
    const created = await fetch(`${url}/v1/topics`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "t", partitions: 1, visibility_timeout_ms: 3000 }),
    });
    expect(created.status).toBe(201);
    for (const k of ["a", "b"]) {
      const r = await fetch(`${url}/v1/topics/t/produce?key=${k}`, { method: "POST", body: k });
      expect(r.status).toBe(202);
    }
    // Lease "a" and let it lapse across a jump one hour back: it must come back
    // after its 3 s, not after an hour and 3 s.
    let first: Awaited<ReturnType<typeof consume>> | undefined;
    for (let i = 0; i < 100 && first?.status !== 200; i++) {
      first = await consume(url, "1s");
    }
    expect(first?.key).toBe("a");
    jump("-3600");
    await sleep(4000);
    const again = await consume(url, "1s");
    expect(again.status).toBe(200);
    expect(again.key).toBe("a");
    // "b" is still free; lease it too, so both are in flight.
    const b = await consume(url, "1s");
    expect(b.key).toBe("b");

    // A long-poll across the jump back ends after its own 2 s.
    const nothing = consume(url, "2s");
    await sleep(500);
    jump("-7200");
    const polled = await nothing;
    expect(polled.status).toBe(204);
    expect(polled.ms).toBeLessThan(6000);

    // Two hours forward: the leases taken a moment ago are still held (no
    // mass redelivery), and they lapse after their real 3 s.
    jump("+3600");
    const early = await consume(url, "0s");
    expect(early.status).toBe(204);
    await sleep(4000);
    const keys = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const c = await consume(url, "1s");
      if (c.status === 200 && c.key !== undefined) {
        keys.add(c.key);
        const ack = await fetch(`${url}/v1/topics/t/ack?receipt_handle=${encodeURIComponent(c.handle!)}`, {
          method: "POST",
        });
        expect(ack.status).toBe(204);
      }
    }
    expect([...keys].sort()).toEqual(["a", "b"]);

    // Produce and replay still work; record timestamps follow the wall clock.
    const r = await fetch(`${url}/v1/topics/t/produce?key=c`, { method: "POST", body: "c" });
    expect(r.status).toBe(202);
    let last: { status: number; body?: { key: string; timestamp_ms: number } } = { status: 0 };
    for (let i = 0; i < 100 && last.status !== 200; i++) {
      const res = await fetch(`${url}/v1/topics/t/consume?partition=0&offset=2`);
      last = {
        status: res.status,
        body: res.status === 200 ? ((await res.json()) as { key: string; timestamp_ms: number }) : undefined,
      };
      if (last.status !== 200) await sleep(50);
    }
    expect(last.body?.key).toBe("c");
    expect(last.body!.timestamp_ms - Date.now()).toBeGreaterThan(3_000_000); // the broker's clock is an hour ahead
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
  });
});
