// `--json` output: one key casing for every command, snake_case as in the
// HTTP API (Narad v1), whatever casing the client library's types use.

import type { Message, ReceivedMessage } from "../../../client/index.ts";

/** "partitionStats" → "partition_stats"; already snake_case keys stay as they are. */
export function snakeCase(key: string): string {
  return key.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();
}

/**
 * The value with every object key snake_cased, deeply. Only for documents
 * whose keys are field names: a message payload is user data and must not
 * pass through here (messageJson keeps it as is).
 */
export function snakeCaseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeCaseKeys);
  if (value !== null && typeof value === "object" && !Buffer.isBuffer(value)) {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [snakeCase(k), snakeCaseKeys(v)]),
    );
  }
  return value;
}

/** One message as an NDJSON line, shaped like the HTTP API's message (binary payloads as base64). */
export function messageJson(m: Message | ReceivedMessage): string {
  const { topic, partition, offset, key, timestampMs, payload } = m;
  const handle = "receiptHandle" in m ? { receipt_handle: m.receiptHandle } : {};
  const body = Buffer.isBuffer(payload)
    ? { payload: payload.toString("base64"), payload_encoding: "base64" }
    : { payload };
  return `${JSON.stringify({ topic, partition, offset, key, timestamp_ms: timestampMs, ...handle, ...body })}\n`;
}
