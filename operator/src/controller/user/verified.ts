// A scrypt verification costs about 100 ms of CPU, and every reconcile of
// a CR-managed NaradUser checks its password against the stored hash (the
// ownership proof, decide.ts). The answer is a pure function of (hash,
// password), so positive answers are remembered, keyed by a digest of both
// (never the password itself); a changed hash or password misses. Bounded,
// oldest first out.

import { createHash } from "node:crypto";
import { passwordMatches } from "../../../../packages/users/src/scrypt.ts";

const maxEntries = 10_000;
const verified = new Set<string>();

export async function passwordMatchesCached(encodedHash: string, password: string): Promise<boolean> {
  const key = createHash("sha256").update(encodedHash).update("\0").update(password).digest("hex");
  if (verified.has(key)) return true;
  const ok = await passwordMatches(encodedHash, password);
  if (ok) {
    verified.add(key);
    if (verified.size > maxEntries) {
      const oldest = verified.values().next().value;
      if (oldest !== undefined) verified.delete(oldest);
    }
  }
  return ok;
}
