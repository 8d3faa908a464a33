import { describe, expect, it } from "vitest";
import { LeaderElector, type LeaseRecord, type LeaseStore } from "./leader-election.ts";
import { ManualClock } from "./manual-clock.ts";

/** An in-memory Lease with resourceVersion conflicts, like the API server. */
class MemoryLease {
  record: LeaseRecord | undefined;
  rv = 0;
  down = false;
  storeFor(): LeaseStore {
    return {
      get: async () => {
        if (this.down) throw new Error("api down");
        return this.record === undefined ? undefined : { ...this.record };
      },
      create: async (r) => {
        if (this.down) throw new Error("api down");
        if (this.record !== undefined) throw new Error("409 exists");
        this.record = { ...r, resourceVersion: String(++this.rv) };
        return { ...this.record };
      },
      update: async (r) => {
        if (this.down) throw new Error("api down");
        if (this.record?.resourceVersion !== r.resourceVersion) throw new Error("409 conflict");
        this.record = { ...r, resourceVersion: String(++this.rv) };
        return { ...this.record };
      },
    };
  }
}

function candidate(lease: MemoryLease, clock: ManualClock, identity: string, events: string[]) {
  return new LeaderElector({
    store: lease.storeFor(),
    clock,
    identity,
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    onStartedLeading: () => events.push(`${identity}:start`),
    onStoppedLeading: () => {
      events.push(`${identity}:stop`);
    },
    log: () => {},
  });
}

describe("LeaderElector", () => {
  it("one of two candidates leads; the other takes over only after the lease expires", async () => {
    const clock = new ManualClock();
    const lease = new MemoryLease();
    const events: string[] = [];
    const a = candidate(lease, clock, "a", events);
    const b = candidate(lease, clock, "b", events);
    a.start();
    await clock.advance(0);
    b.start();
    await clock.advance(30_000);
    expect(events).toEqual(["a:start"]);
    expect(a.isLeader).toBe(true);
    expect(b.isLeader).toBe(false);
    expect(lease.record?.holderIdentity).toBe("a");

    // a dies without releasing: b must wait a full lease duration after it last saw a renewal
    await a.stop().catch(() => {});
    events.length = 0;
    lease.record = { ...lease.record!, holderIdentity: "a", leaseDurationSeconds: 15 }; // undo the release: a crash
    lease.rv++;
    lease.record.resourceVersion = String(lease.rv);
    await clock.advance(14_000);
    expect(b.isLeader).toBe(false);
    await clock.advance(4_000);
    expect(b.isLeader).toBe(true);
    expect(lease.record?.holderIdentity).toBe("b");
    expect(lease.record?.leaseTransitions).toBe(1);
    await b.stop();
  });

  it("releases on stop so a successor acquires at its next retry", async () => {
    const clock = new ManualClock();
    const lease = new MemoryLease();
    const events: string[] = [];
    const a = candidate(lease, clock, "a", events);
    const b = candidate(lease, clock, "b", events);
    a.start();
    await clock.advance(0);
    b.start();
    await clock.advance(4_000);
    await a.stop();
    expect(events).toEqual(["a:start", "a:stop"]);
    expect(lease.record?.holderIdentity).toBe("");
    await clock.advance(2_000);
    expect(b.isLeader).toBe(true);
    await b.stop();
  });

  it("stops leading when it cannot renew within the renew deadline", async () => {
    const clock = new ManualClock();
    const lease = new MemoryLease();
    const events: string[] = [];
    const a = candidate(lease, clock, "a", events);
    a.start();
    await clock.advance(2_000);
    expect(a.isLeader).toBe(true);
    lease.down = true;
    await clock.advance(8_000);
    expect(a.isLeader).toBe(true);
    await clock.advance(2_000);
    // stopped within renewDeadline (10s) of the last renewal: before the 15s lease can expire for others
    expect(a.isLeader).toBe(false);
    expect(events).toEqual(["a:start", "a:stop"]);
    lease.down = false;
    await clock.advance(2_000);
    expect(a.isLeader).toBe(true);
    await a.stop();
  });

  it("stops leading at once when another candidate holds the lease", async () => {
    const clock = new ManualClock();
    const lease = new MemoryLease();
    const events: string[] = [];
    const a = candidate(lease, clock, "a", events);
    a.start();
    await clock.advance(1_000);
    lease.record = { ...lease.record!, holderIdentity: "intruder", resourceVersion: String(++lease.rv) };
    await clock.advance(2_000);
    expect(a.isLeader).toBe(false);
    await a.stop();
    expect(lease.record?.holderIdentity).toBe("intruder");
  });

  it("#21.5: a re-acquired lease starts a new term only after the old one has finished", async () => {
    const clock = new ManualClock();
    const lease = new MemoryLease();
    const events: string[] = [];
    let finishOldTerm: () => void = () => {};
    let slow = true;
    const a = new LeaderElector({
      store: lease.storeFor(),
      clock,
      identity: "a",
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      onStartedLeading: () => events.push("start"),
      onStoppedLeading: () => {
        events.push("stop");
        if (!slow) return;
        return new Promise<void>((resolve) => {
          finishOldTerm = () => {
            events.push("old term finished");
            resolve();
          };
        });
      },
      log: () => {},
    });
    a.start();
    await clock.advance(2_000);
    lease.down = true;
    await clock.advance(12_000); // renew deadline passes: stops leading
    expect(events).toEqual(["start", "stop"]);
    lease.down = false;
    await clock.advance(20_000); // the lease is free again, but the old term still runs
    expect(events).toEqual(["start", "stop"]);
    finishOldTerm();
    await clock.advance(4_000);
    expect(events).toEqual(["start", "stop", "old term finished", "start"]);
    expect(a.isLeader).toBe(true);
    slow = false;
    await a.stop();
  });
});
