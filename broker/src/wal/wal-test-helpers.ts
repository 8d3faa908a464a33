// Shared fixtures for the ingress WAL tests (not imported by production code).

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { WalRecord, WalRecordInput } from "../core/records.ts";
import type { IngressWal, IngressWalOptions } from "./types.ts";

export async function makeTempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), "narad-wal-"));
  return { dir: join(root, "ingress"), cleanup: () => rm(root, { recursive: true, force: true }) };
}

export function smallOptions(dir: string, over: Partial<IngressWalOptions> = {}): IngressWalOptions {
  return {
    dir,
    segmentBytes: 16 * 1024,
    rotateDispatchedBytes: 2 * 1024,
    maxRecordBytes: 4 * 1024,
    maxGroupBytes: 8 * 1024,
    syncBackstopMs: 5,
    ...over,
  };
}

/** Deterministic record i (payload size varies with i so frames differ in length). */
export function testRecord(i: number, payloadBytes = 20 + ((i * 37) % 180)): WalRecordInput {
  const payload = Buffer.alloc(payloadBytes);
  for (let b = 0; b < payloadBytes; b++) payload[b] = (i + b * 31) & 0xff;
  return {
    topic: `topic-${i % 5}`,
    key: Buffer.from(`k${i}`),
    partition: i % 11,
    createdMs: 1_700_000_000_000 + i,
    payload,
  };
}

/** Reads every durable record from `from` in pages. */
export async function readAll(wal: IngressWal, from = 1, pageRecords = 97): Promise<WalRecord[]> {
  const out: WalRecord[] = [];
  let next = from;
  for (;;) {
    const page = await wal.read(next, pageRecords, 1 << 20);
    if (page.length === 0) return out;
    for (const r of page) out.push(r);
    next = page[page.length - 1]!.seq + 1;
  }
}

export function sameRecord(a: WalRecordInput, b: WalRecordInput): boolean {
  return (
    a.topic === b.topic &&
    a.key.equals(b.key) &&
    a.partition === b.partition &&
    a.createdMs === b.createdMs &&
    a.payload.equals(b.payload)
  );
}

/** A small seeded PRNG (mulberry32) so failures replay from the printed seed. */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
