// Renders stored records as Narad v1 message JSON: payload is raw JSON when
// the bytes are valid JSON, a JSON string when they are UTF-8 text, and
// base64 (with "payload_encoding":"base64") otherwise.

import type { StoredRecord } from "./records.ts";

// ignoreBOM keeps a leading U+FEFF in the text: the default would strip it, so a
// payload starting with a BOM would not come back byte for byte.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function payloadJson(payload: Buffer): string {
  let text: string;
  try {
    text = utf8.decode(payload);
  } catch {
    return `${JSON.stringify(payload.toString("base64"))},"payload_encoding":"base64"`;
  }
  if (text.length > 0) {
    try {
      JSON.parse(text);
      // Valid JSON is embedded verbatim; re-serialising would change numbers and spacing.
      return text;
    } catch {
      // Plain text: falls through to a JSON string.
    }
  }
  return JSON.stringify(text);
}

function keyJson(key: Buffer): string {
  try {
    return JSON.stringify(utf8.decode(key));
  } catch {
    return JSON.stringify(key.toString("base64"));
  }
}

export interface MessageContext {
  topic: string;
  partition: number;
  receiptHandle?: string;
}

export function messageJson(record: StoredRecord, ctx: MessageContext): string {
  const handle =
    ctx.receiptHandle === undefined ? "" : `,"receipt_handle":${JSON.stringify(ctx.receiptHandle)}`;
  return (
    `{"topic":${JSON.stringify(ctx.topic)},"partition":${ctx.partition},"offset":${record.offset}` +
    `,"key":${keyJson(record.key)},"timestamp":${Math.floor(record.commitMs / 1000)}` +
    `,"timestamp_ms":${record.commitMs}${handle},"payload":${payloadJson(record.payload)}}`
  );
}
