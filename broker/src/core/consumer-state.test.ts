import { describe, expect, it } from "vitest";
import { advanceFrontier, ConsumerQueueState, type LeaseResult, type QueueLimits } from "./consumer-state.ts";

const limits: QueueLimits = { maxInFlight: 4, maxAckedAhead: 2, visibilityTimeoutMs: 100 };

function leased(r: LeaseResult): { offset: number; nonce: number } {
  if (r.kind !== "leased") throw new Error(`expected a lease, got ${r.kind}`);
  return r;
}

describe("advanceFrontier", () => {
  const cases: Array<[string, number, number[], number[], number, number[]]> = [
    // name, committed, acked, corrupt, expected frontier, acked left
    ["nothing settled", 5, [], [], 5, []],
    ["gap before the run", 5, [6, 7], [], 5, [6, 7]],
    ["contiguous run", 5, [5, 6, 7], [], 8, []],
    ["run mixing corrupt", 5, [5, 7], [6], 8, []],
    ["stops at the gap", 5, [5, 6, 9], [], 7, [9]],
  ];
  it.each(cases)("%s", (_name, committed, acked, corrupt, want, left) => {
    const a = new Set(acked);
    const c = new Set(corrupt);
    expect(advanceFrontier(committed, [a, c])).toBe(want);
    expect([...a].sort()).toEqual(left);
  });
});

describe("ConsumerQueueState", () => {
  it("leases the lowest free offsets and advances over an acked run", () => {
    const q = new ConsumerQueueState(0);
    const a = leased(q.lease(0, 10, limits));
    const b = leased(q.lease(0, 10, limits));
    const c = leased(q.lease(0, 10, limits));
    expect([a.offset, b.offset, c.offset]).toEqual([0, 1, 2]);
    expect(q.ack(2, c.nonce, limits)).toBe("acked");
    expect(q.ack(1, b.nonce, limits)).toBe("acked");
    expect(q.committed).toBe(0);
    expect(q.ack(0, a.nonce, limits)).toBe("acked");
    expect(q.committed).toBe(3);
    expect(q.stats()).toMatchObject({ inFlight: 0, ackedAhead: 0 });
  });

  it("returns empty at the HWM and in-flight-full at the cap", () => {
    const q = new ConsumerQueueState(0);
    expect(q.lease(0, 0, limits).kind).toBe("empty");
    for (let i = 0; i < 4; i++) leased(q.lease(0, 10, limits));
    expect(q.lease(0, 10, limits).kind).toBe("in-flight-full");
  });

  it("redelivers expired leases first, with a new nonce", () => {
    const q = new ConsumerQueueState(0);
    const a = leased(q.lease(0, 10, limits));
    leased(q.lease(50, 10, limits));
    expect(q.purge(99)).toBe(0);
    expect(q.purge(100)).toBe(1);
    const again = q.lease(120, 10, limits);
    expect(again).toMatchObject({ kind: "leased", offset: 0, redelivery: true });
    expect(q.ack(0, a.nonce, limits)).toBe("stale");
    expect(q.ack(0, leased(again).nonce, limits)).toBe("acked");
    expect(q.committed).toBe(1);
  });

  it("extend keeps a lease past its first expiry; nack releases it at once", () => {
    const q = new ConsumerQueueState(0);
    const a = leased(q.lease(0, 10, limits));
    expect(q.extend(0, a.nonce, 90, limits)).toBe(true);
    expect(q.purge(150)).toBe(0);
    expect(q.purge(190)).toBe(1);
    const b = leased(q.lease(200, 10, limits));
    expect(q.nack(0, b.nonce)).toBe(true);
    expect(q.nack(0, b.nonce)).toBe(false);
    expect(leased(q.lease(201, 10, limits)).offset).toBe(0);
  });

  it("with the acked-ahead set full hands out only the frontier and refuses acks ahead", () => {
    const q = new ConsumerQueueState(0);
    const l = [0, 1, 2, 3].map(() => leased(q.lease(0, 10, limits)));
    expect(q.ack(1, l[1]!.nonce, limits)).toBe("acked");
    expect(q.ack(2, l[2]!.nonce, limits)).toBe("acked");
    expect(q.ack(3, l[3]!.nonce, limits)).toBe("acked-ahead-full");
    expect(q.lease(0, 10, limits).kind).toBe("acked-ahead-full");
    // Release the frontier: it is the only offset that may go out.
    expect(q.nack(0, l[0]!.nonce)).toBe(true);
    const f = leased(q.lease(1, 10, limits));
    expect(f.offset).toBe(0);
    expect(q.lease(1, 10, limits).kind).toBe("acked-ahead-full");
    // Acking the frontier is always allowed and drains the set.
    expect(q.ack(0, f.nonce, limits)).toBe("acked");
    expect(q.committed).toBe(3);
    expect(q.ack(3, l[3]!.nonce, limits)).toBe("acked");
    expect(q.committed).toBe(4);
  });

  it("skips corrupt offsets and retention-expired ones", () => {
    const q = new ConsumerQueueState(0);
    const a = leased(q.lease(0, 10, limits));
    q.markCorrupt(0, a.nonce, 3); // 0..2 unreadable, next record at 3
    expect(q.committed).toBe(3);
    expect(leased(q.lease(0, 10, limits)).offset).toBe(3);
    const b = leased(q.lease(0, 10, limits));
    expect(b.offset).toBe(4);
    expect(q.skipTo(6)).toBe(3);
    expect(q.committed).toBe(6);
    expect(q.stats().inFlight).toBe(0);
    expect(q.ack(4, b.nonce, limits)).toBe("stale");
    expect(leased(q.lease(0, 10, limits)).offset).toBe(6);
  });

  it("keeps its invariants through a random walk", () => {
    let seed = 11;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const lim: QueueLimits = { maxInFlight: 8, maxAckedAhead: 5, visibilityTimeoutMs: 30 };
    const q = new ConsumerQueueState(0);
    const held = new Map<number, number>();
    const acked = new Set<number>();
    let now = 0;
    let hwm = 0;
    for (let step = 0; step < 20_000; step++) {
      now += Math.floor(rand() * 5);
      if (rand() < 0.3) hwm += 1;
      q.purge(now);
      const op = rand();
      if (op < 0.5) {
        const r = q.lease(now, hwm, lim);
        if (r.kind === "leased") {
          expect(acked.has(r.offset)).toBe(false);
          expect(r.offset).toBeGreaterThanOrEqual(q.committed);
          held.set(r.offset, r.nonce);
        }
      } else if (held.size > 0) {
        const offs = [...held.keys()];
        const o = offs[Math.floor(rand() * offs.length)] as number;
        const nonce = held.get(o) as number;
        held.delete(o);
        if (op < 0.85) {
          const res = q.ack(o, nonce, lim);
          if (res === "acked") acked.add(o);
        } else if (op < 0.95) q.nack(o, nonce);
        else q.extend(o, nonce, now, lim);
      }
      const st = q.stats();
      expect(st.inFlight).toBeLessThanOrEqual(lim.maxInFlight);
      expect(st.inFlight + st.waitingRedelivery).toBeLessThanOrEqual(lim.maxInFlight);
      expect(st.ackedAhead + st.corrupt).toBeLessThanOrEqual(lim.maxAckedAhead);
      for (let o = 0; o < q.committed; o++) if (!acked.has(o)) throw new Error(`${o} below frontier unacked`);
    }
    expect(q.committed).toBeGreaterThan(100);
  });
});
