import { describe, expect, it } from "vitest";
import { messageJson, snakeCase, snakeCaseKeys } from "./json.ts";

describe("--json casing", () => {
  it("snake_cases keys deeply and leaves snake_case keys and values alone", () => {
    expect(snakeCase("maxInFlightPerPartition")).toBe("max_in_flight_per_partition");
    expect(snakeCase("p50Ms")).toBe("p50_ms");
    expect(snakeCase("size_bytes")).toBe("size_bytes");
    expect(
      snakeCaseKeys({
        partitionStats: [{ highWatermark: 3, ownerNode: "nodeA" }],
        wal: { pendingRecords: 0 },
      }),
    ).toEqual({ partition_stats: [{ high_watermark: 3, owner_node: "nodeA" }], wal: { pending_records: 0 } });
  });

  it("a message's payload keeps the user's keys", () => {
    const line = messageJson({
      topic: "t",
      partition: 0,
      offset: 1,
      key: "k",
      timestampMs: 5,
      payload: { camelCase: true },
    });
    expect(JSON.parse(line)).toEqual({
      topic: "t",
      partition: 0,
      offset: 1,
      key: "k",
      timestamp_ms: 5,
      payload: { camelCase: true },
    });
  });
});
