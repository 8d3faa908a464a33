// Receipt handles: `[<group>:]<partition>:<offset>:<epoch>.<nonce>`.
// The group is omitted for the default group. `epoch` is 12 hex digits chosen
// at random each time a (topic, partition, group) queue is opened, and
// `nonce` a base-36 counter within that epoch, so a handle from before a
// restart (or from a deleted and recreated group) can never match a new lease
// (Narad Go restarts its nonce at 1 and could collide). Pure.

export const defaultGroup = "default";
export const handleMaxLength = 512;
const epochPattern = /^[0-9a-f]{12}$/;
const noncePattern = /^[0-9a-z]{1,10}$/;
const decimalPattern = /^(0|[1-9]\d{0,15})$/;

export interface ReceiptHandle {
  group: string;
  partition: number;
  offset: number;
  epoch: string;
  nonce: number;
}

export function encodeHandle(h: ReceiptHandle): string {
  const prefix = h.group === defaultGroup ? "" : `${h.group}:`;
  return `${prefix}${h.partition}:${h.offset}:${h.epoch}.${h.nonce.toString(36)}`;
}

export type ParsedHandle = { ok: true; handle: ReceiptHandle } | { ok: false; reason: string };

const fail = (reason: string): ParsedHandle => ({ ok: false, reason });

/** Parses a handle; `groupPattern` is the group name rule (the topic name rule). */
export function parseHandle(raw: string, groupPattern: RegExp): ParsedHandle {
  if (raw.length === 0) return fail("receipt_handle is empty");
  if (raw.length > handleMaxLength) return fail("receipt_handle is too long");
  const parts = raw.split(":");
  if (parts.length !== 3 && parts.length !== 4) return fail("receipt_handle has the wrong number of fields");
  const group = parts.length === 4 ? (parts.shift() as string) : defaultGroup;
  if (!groupPattern.test(group) || group === "." || group === "..")
    return fail("receipt_handle has an invalid group");
  const [p, o, tail] = parts as [string, string, string];
  if (!decimalPattern.test(p)) return fail("receipt_handle has an invalid partition");
  if (!decimalPattern.test(o)) return fail("receipt_handle has an invalid offset");
  const offset = Number(o);
  if (!Number.isSafeInteger(offset)) return fail("receipt_handle has an invalid offset");
  const dot = tail.indexOf(".");
  if (dot < 0) return fail("receipt_handle has no nonce");
  const epoch = tail.slice(0, dot);
  const n = tail.slice(dot + 1);
  if (!epochPattern.test(epoch)) return fail("receipt_handle has an invalid epoch");
  if (!noncePattern.test(n)) return fail("receipt_handle has an invalid nonce");
  const nonce = Number.parseInt(n, 36);
  if (!Number.isSafeInteger(nonce) || nonce < 1) return fail("receipt_handle has an invalid nonce");
  return { ok: true, handle: { group, partition: Number(p), offset, epoch, nonce } };
}
