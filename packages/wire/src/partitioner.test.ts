import { describe, expect, it } from "vitest";
import { choosePartition, createRotator, fnv1a32, generateKey, partitionForKey } from "./partitioner.ts";

const bytes = (s: string): Buffer => Buffer.from(s, "utf8");

describe("fnv1a32", () => {
  // Reference vectors of FNV-1a 32 (as produced by Go's hash/fnv New32a).
  it.each([
    ["", 0x811c9dc5],
    ["a", 0xe40c292c],
    ["foobar", 0xbf9cf968],
    ["hello", 0x4f9f2cab],
  ])("hashes %j to the reference value", (input, want) => {
    expect(fnv1a32(bytes(input))).toBe(want);
  });

  it("is unsigned", () => {
    for (const s of ["a", "zz", "key-1", "key-zz"]) expect(fnv1a32(bytes(s))).toBeGreaterThanOrEqual(0);
  });
});

describe("partitionForKey", () => {
  it("is the hash mod the partition count, stable across calls", () => {
    const k = bytes("order-42");
    expect(partitionForKey(k, 7)).toBe(fnv1a32(k) % 7);
    expect(partitionForKey(k, 7)).toBe(partitionForKey(Buffer.from(k), 7));
  });

  it("spreads generated keys over every partition", () => {
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) seen.add(partitionForKey(bytes(generateKey(i)), 8));
    expect(seen.size).toBe(8);
  });

  it("rejects a non-positive partition count", () => {
    expect(() => partitionForKey(bytes("a"), 0)).toThrow(RangeError);
  });
});

describe("createRotator", () => {
  it("cycles through partitions from the start offset", () => {
    const r = createRotator(2);
    expect([r.next(3), r.next(3), r.next(3), r.next(3)]).toEqual([2, 0, 1, 2]);
  });

  it("follows a changed partition count", () => {
    const r = createRotator();
    expect([r.next(2), r.next(2), r.next(4), r.next(4)]).toEqual([0, 1, 2, 3]);
  });
});

describe("generateKey", () => {
  it.each([
    [0, "key-0"],
    [35, "key-z"],
    [36, "key-10"],
    [1_000_000, "key-lfls"],
  ])("generateKey(%d) = %s", (n, want) => {
    expect(generateKey(n)).toBe(want);
  });

  it("rejects negative or fractional counters", () => {
    expect(() => generateKey(-1)).toThrow(RangeError);
    expect(() => generateKey(1.5)).toThrow(RangeError);
  });
});

describe("choosePartition", () => {
  it.each([
    {
      name: "pin wins over key",
      input: { pinned: 2, key: bytes("k") },
      want: { ok: true, partition: 2, how: "pinned" },
    },
    { name: "pin out of range", input: { pinned: 5 }, want: { ok: false } },
    { name: "negative pin", input: { pinned: -1 }, want: { ok: false } },
    {
      name: "key hashes",
      input: { key: bytes("k") },
      want: { ok: true, partition: fnv1a32(bytes("k")) % 4, how: "hash" },
    },
    { name: "empty key rotates", input: { key: bytes("") }, want: { ok: true, partition: 0, how: "rotate" } },
    { name: "no key rotates", input: {}, want: { ok: true, partition: 0, how: "rotate" } },
  ])("$name", ({ input, want }) => {
    expect(choosePartition(input, 4, createRotator())).toMatchObject(want);
  });
});
