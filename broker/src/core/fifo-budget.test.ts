import { describe, expect, it } from "vitest";
import { FifoBudget } from "./fifo-budget.ts";

describe("FifoBudget", () => {
  it("grants while the budget has room and queues beyond it", () => {
    const b = new FifoBudget(100);
    expect(b.acquire(1, 60, 1000)).toBe("granted");
    expect(b.acquire(2, 40, 1000)).toBe("granted");
    expect(b.used).toBe(100);
    expect(b.acquire(3, 1, 1000)).toBe("queued");
    expect(b.waiters).toBe(1);
    expect(b.waitingBytes).toBe(1);
  });

  it("refuses a share larger than the whole budget", () => {
    const b = new FifoBudget(100);
    expect(b.acquire(1, 101, 1000)).toBe("too_large");
    expect(b.used).toBe(0);
    expect(b.waiters).toBe(0);
    expect(b.acquire(2, 100, 1000)).toBe("granted");
  });

  it("is strictly FIFO: a small request does not overtake a waiting large one", () => {
    const b = new FifoBudget(100);
    b.acquire(1, 50, 1000);
    expect(b.acquire(2, 80, 1000)).toBe("queued");
    // 10 bytes would fit now, but 2 is waiting first.
    expect(b.acquire(3, 10, 1000)).toBe("queued");
    expect(b.release(50)).toEqual([2, 3]);
    expect(b.used).toBe(90);
    expect(b.waiters).toBe(0);
  });

  it("grants in order only as far as the head fits", () => {
    const b = new FifoBudget(100);
    b.acquire(1, 100, 1000);
    b.acquire(2, 70, 1000);
    b.acquire(3, 20, 1000);
    b.acquire(4, 20, 1000);
    expect(b.release(50)).toEqual([]);
    expect(b.release(50)).toEqual([2, 3]);
    expect(b.used).toBe(90);
    expect(b.release(70)).toEqual([4]);
    expect(b.used).toBe(40);
  });

  it("expires waiters at their deadline and lets the ones behind through", () => {
    const b = new FifoBudget(100);
    b.acquire(1, 60, 0);
    b.acquire(2, 90, 500);
    b.acquire(3, 30, 2000);
    expect(b.expire(499)).toEqual({ expired: [], granted: [] });
    expect(b.expire(500)).toEqual({ expired: [2], granted: [3] });
    expect(b.used).toBe(90);
    expect(b.waiters).toBe(0);
    expect(b.waitingBytes).toBe(0);
  });

  it("cancels a waiter and grants the next one if it now fits", () => {
    const b = new FifoBudget(100);
    b.acquire(1, 60, 0);
    b.acquire(2, 90, 1000);
    b.acquire(3, 30, 1000);
    expect(b.cancel(2)).toEqual({ removed: true, granted: [3] });
    expect(b.cancel(2)).toEqual({ removed: false, granted: [] });
    expect(b.used).toBe(90);
  });

  it("never lets used go below zero and handles a long queue", () => {
    const b = new FifoBudget(10);
    b.acquire(0, 10, 0);
    for (let i = 1; i <= 5000; i++) expect(b.acquire(i, 10, 1e9)).toBe("queued");
    for (let i = 1; i <= 5000; i++) expect(b.release(10)).toEqual([i]);
    expect(b.release(10)).toEqual([]);
    expect(b.release(10)).toEqual([]);
    expect(b.used).toBe(0);
    expect(b.waiters).toBe(0);
  });
});
