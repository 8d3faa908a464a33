// `narad topic info`'s human text: the replication settings, and for
// replicated partitions the leader, replicas, ISR and epoch.
import { describe, expect, it } from "vitest";
import type { PartitionStats, TopicInfo } from "../../../client/index.ts";
import { topicInfoText } from "./format.ts";

const stats = (index: number, extra: Partial<PartitionStats> = {}): PartitionStats => ({
  index,
  segments: 1,
  oldestOffset: 0,
  nextOffset: 5,
  highWatermark: 5,
  sizeBytes: 2048,
  ownerNode: "demo-0",
  ...extra,
});

const topic = (partitionStats: PartitionStats[], rf = 1, min = 1): TopicInfo => ({
  name: "orders",
  partitions: partitionStats.length,
  retentionMs: 86_400_000,
  retentionBytes: 0,
  visibilityTimeoutMs: 30_000,
  maxInFlightPerPartition: 1024,
  maxAckedAheadPerPartition: 1024,
  replicationFactor: rf,
  minInsyncReplicas: min,
  createdAt: "2026-01-01T00:00:00.000Z",
  partitionStats,
});

describe("topicInfoText", () => {
  it("shows the settings and, for a single-copy topic, the owner column only", () => {
    const text = topicInfoText(topic([stats(0)]), []);
    expect(text).toMatch(/replication\s+factor 1, min in-sync 1/);
    expect(text).toMatch(/^PARTITION\s+OWNER\s+OLDEST\s+HWM/m);
    expect(text).not.toMatch(/ISR/);
    expect(text).toMatch(/^0\s+demo-0\s+0\s+5/m);
  });

  it("shows leader, replicas, ISR and epoch per replicated partition, offline as such", () => {
    const text = topicInfoText(
      topic(
        [
          stats(0, {
            leader: "demo-0",
            replicas: ["demo-0", "demo-1", "demo-2"],
            isr: ["demo-0", "demo-2"],
            leaderEpoch: 4,
          }),
          stats(1, {
            ownerNode: "",
            leader: null,
            replicas: ["demo-1", "demo-2", "demo-0"],
            isr: ["demo-1"],
            leaderEpoch: 9,
          }),
        ],
        3,
        2,
      ),
      [],
    );
    expect(text).toMatch(/replication\s+factor 3, min in-sync 2/);
    expect(text).toMatch(/^PARTITION\s+LEADER\s+REPLICAS\s+ISR\s+EPOCH\s+OLDEST/m);
    expect(text).toMatch(/^0\s+demo-0\s+demo-0,demo-1,demo-2\s+demo-0,demo-2\s+4\s+0\s+5/m);
    expect(text).toMatch(/^1\s+\(offline\)\s+demo-1,demo-2,demo-0\s+demo-1\s+9\s/m);
  });
});
