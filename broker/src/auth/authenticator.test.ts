import { describe, expect, it } from "vitest";
import { Authenticator } from "./authenticator.ts";
import { basicHeader } from "./credentials.ts";
import { hashPassword, PasswordChecker } from "./passwords.ts";
import { LoginThrottle } from "./throttle.ts";
import { parseUsersFile } from "./users-file.ts";

async function median(n: number, f: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await f();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(n / 2)]!;
}

describe("Authenticator", () => {
  it("an unknown username costs about what a real scrypt user costs (no enumeration by timing)", async () => {
    const db = parseUsersFile(
      JSON.stringify({ users: [{ name: "real", passwordHash: await hashPassword("pw") }] }),
    );
    const auth = new Authenticator({
      users: () => db,
      clusterSecretDigest: () => undefined,
      passwords: new PasswordChecker({
        concurrency: 2,
        maxQueued: 100,
        cacheMs: 60_000,
        cacheEntries: 100,
        nowMs: Date.now,
      }),
      // A throttle that never refuses: only the hashing is measured.
      throttle: new LoginThrottle({ freeFailures: 1e9, intervalMs: 1, forgetAfterMs: 1, maxEntries: 1e6 }),
      nowMs: Date.now,
    });
    let i = 0;
    const real = await median(5, () => auth.authenticate(basicHeader("real", `wrong${i++}`), "c"));
    const unknown = await median(5, () => auth.authenticate(basicHeader("ghost", `wrong${i++}`), "c"));
    console.log(
      `login timing: real scrypt user ${real.toFixed(1)} ms, unknown user ${unknown.toFixed(1)} ms`,
    );
    // Before: 41-50 ms vs < 2 ms. A ratio, generous for a loaded machine.
    expect(unknown / real).toBeGreaterThan(0.3);
    expect(unknown / real).toBeLessThan(3);
  });

  it("keeps a logged-in user's credentials working while a stranger is throttled on the same name", async () => {
    let now = 0;
    const db = parseUsersFile(JSON.stringify({ users: [{ name: "admin", password: "root" }] }));
    const auth = new Authenticator({
      users: () => db,
      clusterSecretDigest: () => undefined,
      passwords: new PasswordChecker({
        concurrency: 1,
        maxQueued: 10,
        cacheMs: 1,
        cacheEntries: 1,
        nowMs: () => now,
      }),
      throttle: new LoginThrottle(),
      nowMs: () => now,
    });
    expect((await auth.authenticate(basicHeader("admin", "root"), "10.0.0.1")).ok).toBe(true);
    for (let s = 0; s < 120; s++) {
      now = s * 1000;
      for (let g = 0; g < 20; g++) await auth.authenticate(basicHeader("admin", `guess${g}`), "10.6.6.6");
      // Before: from 60 s on (the known-good entry was not refreshed) the admin got 429.
      const res = await auth.authenticate(basicHeader("admin", "root"), "10.0.0.1");
      expect(res.ok).toBe(true);
    }
    expect((await auth.authenticate(basicHeader("admin", "guess"), "10.6.6.6")).ok).toBe(false);
  });
});
