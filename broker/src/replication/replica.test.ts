import { describe, expect, it } from "vitest";
import { NO_EPOCH, offsetForLeaderEpoch } from "./epoch-history.ts";
import {
  fenceLeader,
  fenceReplica,
  followerHwm,
  followerVisibleEnd,
  planTruncation,
  type ReplicaLog,
  truncationQuery,
} from "./replica.ts";

describe("fencing", () => {
  it("a replica refuses lower epochs and adopts higher ones", () => {
    expect(fenceReplica(5, 4)).toEqual({ ok: false, code: "fenced_leader_epoch", knownEpoch: 5 });
    expect(fenceReplica(5, 5)).toEqual({ ok: true, knownEpoch: 5 });
    expect(fenceReplica(5, 7)).toEqual({ ok: true, knownEpoch: 7 });
  });

  it("a leader answers only its own epoch", () => {
    expect(fenceLeader(5, 4).ok).toBe(false);
    expect(fenceLeader(5, 6)).toMatchObject({ ok: false, code: "unknown_leader_epoch" });
    expect(fenceLeader(5, 5).ok).toBe(true);
  });
});

describe("planTruncation", () => {
  it("keeps a log that agrees with the leader", () => {
    const log: ReplicaLog = { logEnd: 20, hwm: 15, history: [{ epoch: 3, startOffset: 0 }] };
    const leader = [
      { epoch: 3, startOffset: 0 },
      { epoch: 4, startOffset: 22 },
    ];
    const asked = truncationQuery(log);
    expect(planTruncation(log, asked, offsetForLeaderEpoch(leader, 30, asked))).toEqual({
      kind: "follow",
      truncateTo: 20,
    });
  });

  it("cuts a divergent tail of a deposed leader to where the new leader's epoch started", () => {
    // The old leader wrote 10..19 in epoch 3; the new leader (epoch 4) started at 12.
    const log: ReplicaLog = { logEnd: 20, hwm: 11, history: [{ epoch: 3, startOffset: 0 }] };
    const leader = [
      { epoch: 3, startOffset: 0 },
      { epoch: 4, startOffset: 12 },
    ];
    expect(planTruncation(log, 3, offsetForLeaderEpoch(leader, 30, 3))).toEqual({
      kind: "follow",
      truncateTo: 12,
    });
  });

  it("walks back over epochs the leader never had", () => {
    // Replica: epochs 1 (0..), 3 (8..), 5 (14..20). Leader: 1 (0..), 4 (10..).
    const log: ReplicaLog = {
      logEnd: 20,
      hwm: 6,
      history: [
        { epoch: 1, startOffset: 0 },
        { epoch: 3, startOffset: 8 },
        { epoch: 5, startOffset: 14 },
      ],
    };
    const leader = [
      { epoch: 1, startOffset: 0 },
      { epoch: 4, startOffset: 10 },
    ];
    const first = planTruncation(log, 5, offsetForLeaderEpoch(leader, 30, 5));
    // Leader knows 4 at most (ends at 30); the replica's own epoch ≤ 4 is 3, ending at 14.
    expect(first).toEqual({ kind: "truncate-and-ask", truncateTo: 14 });
    const log2: ReplicaLog = { ...log, logEnd: 14, history: log.history.slice(0, 2) };
    const second = planTruncation(log2, 3, offsetForLeaderEpoch(leader, 30, 3));
    // Leader's epoch ≤ 3 is 1, ending at 10: the replica's epoch-3 records 8..13 go.
    expect(second).toEqual({ kind: "truncate-and-ask", truncateTo: 8 });
    const log3: ReplicaLog = { ...log, logEnd: 8, history: log.history.slice(0, 1) };
    expect(planTruncation(log3, 1, offsetForLeaderEpoch(leader, 30, 1))).toEqual({
      kind: "follow",
      truncateTo: 8,
    });
  });

  it("refuses to cut below the known HWM", () => {
    const log: ReplicaLog = { logEnd: 20, hwm: 15, history: [{ epoch: 3, startOffset: 0 }] };
    const leader = [
      { epoch: 3, startOffset: 0 },
      { epoch: 4, startOffset: 12 },
    ];
    expect(planTruncation(log, 3, offsetForLeaderEpoch(leader, 30, 3))).toMatchObject({
      kind: "refuse",
      truncateTo: 12,
    });
  });

  it("an empty replica (new volume) follows from 0", () => {
    const log: ReplicaLog = { logEnd: 0, hwm: 0, history: [] };
    expect(truncationQuery(log)).toBe(NO_EPOCH);
    expect(planTruncation(log, NO_EPOCH, { epoch: NO_EPOCH, endOffset: 0 })).toEqual({
      kind: "follow",
      truncateTo: 0,
    });
  });

  it("a leader that knows no epoch at or below the asked one empties the replica", () => {
    const log: ReplicaLog = { logEnd: 5, hwm: 0, history: [{ epoch: 1, startOffset: 0 }] };
    expect(planTruncation(log, 1, offsetForLeaderEpoch([{ epoch: 2, startOffset: 0 }], 9, 1))).toEqual({
      kind: "follow",
      truncateTo: 0,
    });
  });
});

describe("follower exposure", () => {
  it("never exposes above the leader's HWM or its own durable end, never moves back", () => {
    expect(followerHwm(0, 10, 7)).toBe(7);
    expect(followerHwm(7, 12, 20)).toBe(12);
    expect(followerHwm(12, 9, 20)).toBe(12);
    expect(followerVisibleEnd({ logEnd: 20, hwm: 12 })).toBe(12);
    expect(followerVisibleEnd({ logEnd: 8, hwm: 12 })).toBe(8);
  });
});
