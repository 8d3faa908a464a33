import { describe, expect, it } from "vitest";
import type { WalRecordInput } from "../../core/records.ts";
import type { TopicConfig } from "../../meta/types.ts";
import {
  admissionRoute,
  appendedSeqs,
  forwardableRoute,
  lacksStablePartition,
  perPartitionCounts,
  producerVerdict,
  walTopicUid,
} from "./decisions.ts";

describe("admissionRoute", () => {
  it("forwards a draining node's produce when it can, refuses it otherwise", () => {
    expect(admissionRoute({ draining: true, canForward: true, walPoisoned: () => false })).toBe("forward");
    expect(admissionRoute({ draining: true, canForward: false, walPoisoned: () => false })).toBe("draining");
  });

  it("checks draining before the WAL: a forward does not touch a poisoned WAL", () => {
    expect(admissionRoute({ draining: true, canForward: true, walPoisoned: () => true })).toBe("forward");
    expect(admissionRoute({ draining: true, canForward: false, walPoisoned: () => true })).toBe("draining");
    expect(admissionRoute({ draining: false, canForward: true, walPoisoned: () => true })).toBe(
      "wal_poisoned",
    );
  });

  it("does not read the WAL's state on a draining node", () => {
    const unread = () => {
      throw new Error("read");
    };
    expect(admissionRoute({ draining: true, canForward: true, walPoisoned: unread })).toBe("forward");
  });

  it("is local on a healthy node, forwarder or not", () => {
    expect(admissionRoute({ draining: false, canForward: true, walPoisoned: () => false })).toBe("local");
    expect(admissionRoute({ draining: false, canForward: false, walPoisoned: () => false })).toBe("local");
  });
});

describe("forwardableRoute", () => {
  it("keeps every local route", () => {
    for (const acks of ["0", "wal", "all"] as const) {
      expect(forwardableRoute("local", acks, false)).toBe("local");
      expect(forwardableRoute("local", acks, true)).toBe("local");
    }
  });

  it("forwards only acks=0 and acks=wal of a plain producer", () => {
    expect(forwardableRoute("forward", "0", false)).toBe("forward");
    expect(forwardableRoute("forward", "wal", false)).toBe("forward");
    expect(forwardableRoute("forward", "all", false)).toBe("draining");
    expect(forwardableRoute("forward", "wal", true)).toBe("draining");
    expect(forwardableRoute("forward", "0", true)).toBe("draining");
  });
});

describe("producerVerdict", () => {
  it("refuses an id the registry did not issue", () => {
    expect(producerVerdict(0, undefined)).toBe("unknown_producer_id");
  });

  it("fences a lower epoch, refuses a higher one, accepts the current one", () => {
    expect(producerVerdict(2, 3)).toBe("producer_fenced");
    expect(producerVerdict(4, 3)).toBe("invalid_producer_epoch");
    expect(producerVerdict(3, 3)).toBe("ok");
    expect(producerVerdict(0, 0)).toBe("ok");
  });
});

describe("lacksStablePartition", () => {
  it("is true only for an idempotent record with neither a key nor a pinned partition", () => {
    expect(lacksStablePartition(true, false, -1)).toBe(true);
    expect(lacksStablePartition(true, true, -1)).toBe(false);
    expect(lacksStablePartition(true, false, 0)).toBe(false);
    expect(lacksStablePartition(false, false, -1)).toBe(false);
  });
});

describe("appendedSeqs", () => {
  it("takes the seqs of an append that spans exactly the records", () => {
    expect(appendedSeqs({ firstSeq: 10, lastSeq: 12 }, 3)).toEqual({ first: 10, last: 12 });
    expect(appendedSeqs({ firstSeq: 0, lastSeq: 0 }, 1)).toEqual({ first: 0, last: 0 });
  });

  it("is undefined for a forward (no seqs), missing seqs or a span of another length", () => {
    expect(appendedSeqs(undefined, 1)).toBeUndefined();
    expect(appendedSeqs({ firstSeq: 1 }, 1)).toBeUndefined();
    expect(appendedSeqs({ lastSeq: 1 }, 1)).toBeUndefined();
    expect(appendedSeqs({ firstSeq: 1, lastSeq: 2 }, 3)).toBeUndefined();
  });
});

describe("perPartitionCounts", () => {
  const rec = (partition: number, bytes: number): WalRecordInput => ({
    topic: "t",
    key: Buffer.from("k"),
    partition,
    createdMs: 0,
    payload: Buffer.alloc(bytes),
  });

  it("counts messages and payload bytes per partition, in first-seen order", () => {
    const counts = perPartitionCounts([rec(1, 3), rec(0, 5), rec(1, 7)]);
    expect([...counts]).toEqual([
      [1, { messages: 2, bytes: 10 }],
      [0, { messages: 1, bytes: 5 }],
    ]);
  });
});

describe("walTopicUid", () => {
  it("keeps a topic's uid, and leaves a uid-less topic's records uid-less", () => {
    const topic = (uid: string) => ({ name: "t", uid }) as TopicConfig;
    expect(walTopicUid(topic("u-1"))).toBe("u-1");
    expect(walTopicUid(topic(""))).toBeUndefined();
  });
});
