// Moving a consumer group's committed offset (POST /v1/topics/{t}/groups/{g}/seek),
// the pure part: what the body asks for, and which offset that is in one
// partition given its retained range. No I/O.
//
// Body: {"to": "earliest" | "latest", "partition"?: N}
//    or {"offset": N, "partition": N}
// An explicit offset names a position in one partition's log, so it needs
// the partition; earliest/latest mean something in every partition and
// default to all of them.

import { badRequest } from "../errors.ts";

export type SeekTarget = { kind: "earliest" } | { kind: "latest" } | { kind: "offset"; offset: number };

export interface SeekRequest {
  target: SeekTarget;
  /** The partitions to move, ascending. */
  partitions: number[];
}

const seekFields = new Set(["to", "offset", "partition"]);

/** Throws a 400 (bad_request) naming what to fix. */
export function parseSeekRequest(body: unknown, topicPartitions: number): SeekRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw badRequest(
      'request body must be a JSON object: {"to":"earliest"|"latest"} or {"offset":N,"partition":N}',
    );
  const obj = body as Record<string, unknown>;
  for (const field of Object.keys(obj))
    if (!seekFields.has(field)) throw badRequest(`unknown field "${field}" (want to, offset, partition)`);

  let partition: number | undefined;
  if (obj.partition !== undefined) {
    const p = obj.partition;
    if (typeof p !== "number" || !Number.isSafeInteger(p) || p < 0)
      throw badRequest("partition must be a non-negative integer");
    if (p >= topicPartitions)
      throw badRequest(
        `partition ${p} does not exist: the topic has ${topicPartitions} (0..${topicPartitions - 1})`,
      );
    partition = p;
  }

  const hasTo = obj.to !== undefined;
  const hasOffset = obj.offset !== undefined;
  if (hasTo === hasOffset) throw badRequest('give exactly one of "to" (earliest or latest) and "offset"');
  let target: SeekTarget;
  if (hasTo) {
    if (obj.to !== "earliest" && obj.to !== "latest")
      throw badRequest(`to must be "earliest" or "latest", not ${JSON.stringify(obj.to)}`);
    target = { kind: obj.to };
  } else {
    const o = obj.offset;
    if (typeof o !== "number" || !Number.isSafeInteger(o) || o < 0)
      throw badRequest("offset must be a non-negative integer");
    if (partition === undefined)
      throw badRequest("offset needs a partition: an offset is a position in one partition's log");
    target = { kind: "offset", offset: o };
  }
  const partitions =
    partition === undefined ? Array.from({ length: topicPartitions }, (_, i) => i) : [partition];
  return { target, partitions };
}

/**
 * The committed offset a seek sets in a partition whose retained records are
 * [oldestOffset, highWatermark). An offset below what retention kept starts at
 * the oldest record (those before it are gone, as a consumer at that frontier
 * would skip them anyway); above the high watermark is refused, since it would
 * silently skip records produced later.
 */
export function seekOffset(
  target: SeekTarget,
  range: { oldestOffset: number; highWatermark: number },
): { ok: true; offset: number } | { ok: false; reason: string } {
  switch (target.kind) {
    case "earliest":
      return { ok: true, offset: range.oldestOffset };
    case "latest":
      return { ok: true, offset: range.highWatermark };
    case "offset":
      if (target.offset > range.highWatermark)
        return {
          ok: false,
          reason: `offset ${target.offset} is past the partition's high watermark ${range.highWatermark}`,
        };
      return { ok: true, offset: Math.max(target.offset, range.oldestOffset) };
  }
}
