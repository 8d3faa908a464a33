// An attachment's identity: a cursor file of another epoch is another attachment's.
import { randomBytes } from "node:crypto";

/** A fresh attach epoch: 8 random bytes, hex (as Narad). */
export function newAttachEpoch(): string {
  return randomBytes(8).toString("hex");
}
