import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { WalRecord } from "../core/records.ts";
import { openParkedStore } from "./parked-store.ts";

const quiet = { warn() {}, error() {} };
const inc = "0123456789abcdef";
const rec = (seq: number): WalRecord => ({
  seq,
  topic: "t",
  partition: 0,
  key: Buffer.from(`k${seq}`),
  payload: Buffer.from(`v${seq}`),
  createdMs: 1,
});

describe("parked store", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const open = (dir: string) =>
    openParkedStore({ dir, incarnation: inc, walCheckpoint: 100, maxBytes: 1 << 20, logger: quiet });

  it("never deletes a damaged .park file (its unreadable records are still an operator's to recover)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "narad-parked-"));
    dirs.push(dir);
    const s = await open(dir);
    await s.park([rec(5), rec(6)]);
    const name = `${inc}.${String(5).padStart(20, "0")}.park`;
    const path = join(dir, name);
    const body = readFileSync(path);
    // First frame damaged: nothing readable before the damage.
    const bad = Buffer.from(body);
    bad[bad.length - 1] = bad[bad.length - 1]! ^ 0xff;
    bad[8] = bad[8]! ^ 0xff;
    writeFileSync(path, bad);
    const s2 = await open(dir);
    expect(s2.size).toBe(0);
    expect(existsSync(path)).toBe(true);

    // Damage after the first frame: the readable record is dispatched, and
    // releasing it leaves the file (the record past the damage is unread).
    writeFileSync(path, Buffer.concat([body.subarray(0, body.length - 3), Buffer.from([0, 0, 0])]));
    const s3 = await open(dir);
    expect(s3.records().map((r) => r.seq)).toEqual([5]);
    await s3.release([5]);
    expect(existsSync(path)).toBe(true);
  });
});
