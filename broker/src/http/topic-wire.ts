// The topic as it goes over the wire: Narad (Go)'s shape, so typed clients
// written for Narad decode it. Internally the metastores keep `created_at` as
// an ISO-8601 string (a NaradTopic's creationTimestamp); Narad sends Unix
// seconds, and a Go client decoding into int64 fails on anything else.

import type { TopicConfig } from "../meta/types.ts";

export type TopicWire = Omit<TopicConfig, "created_at"> & {
  /** Unix seconds, as Narad (Go). */
  created_at: number;
  /** Position in fan-out; every topic here is standalone (no fan-out children yet). */
  role: "standalone";
};

export function topicToWire(topic: TopicConfig): TopicWire {
  const ms = Date.parse(topic.created_at);
  return {
    ...topic,
    created_at: Number.isNaN(ms) ? 0 : Math.floor(ms / 1000),
    role: "standalone",
  };
}
