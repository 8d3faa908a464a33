// A small seeded pseudo-random generator for fuzz tests: the same seed gives
// the same sequence, so a failing run is reproduced by re-running with the
// printed seed (NARAD_FUZZ_SEED). Not for anything security related.

export interface Prng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [0, n). */
  int(n: number): number;
  /** Integer in [lo, hi]. */
  range(lo: number, hi: number): number;
  bool(pTrue?: number): boolean;
  pick<T>(items: readonly T[]): T;
  bytes(n: number): Buffer;
}

/** mulberry32: tiny, fast and good enough to drive fuzzing. */
export function prng(seed: number): Prng {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return {
    next,
    int,
    range: (lo, hi) => lo + int(hi - lo + 1),
    bool: (pTrue = 0.5) => next() < pTrue,
    pick: <T>(items: readonly T[]): T => items[int(items.length)] as T,
    bytes: (n) => {
      const b = Buffer.allocUnsafe(n);
      for (let i = 0; i < n; i++) b[i] = int(256);
      return b;
    },
  };
}

/** The seed from NARAD_FUZZ_SEED, or the given default; printed by the caller. */
export function fuzzSeed(fallback: number): number {
  const raw = process.env.NARAD_FUZZ_SEED;
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new Error(`NARAD_FUZZ_SEED must be an integer, got ${raw}`);
  return n;
}
