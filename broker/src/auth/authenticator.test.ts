import { describe, expect, it } from "vitest";
import { mergeUsers } from "./api-users-store.ts";
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

describe("Authenticator with the API users' store past its freshness bound", () => {
  it("a name the file does not hold is 503 users_unavailable (never an allow, never a 401); file users still log in", async () => {
    const file = parseUsersFile(JSON.stringify({ users: [{ name: "ops", password: "ops-pw" }] }));
    const api = parseUsersFile(
      JSON.stringify({ users: [{ name: "amy", passwordHash: await hashPassword("amy-pw", 1024) }] }),
    );
    let stale: string | undefined;
    const auth = new Authenticator({
      users: () => mergeUsers(file, api, stale),
      clusterSecretDigest: () => undefined,
      passwords: new PasswordChecker({
        concurrency: 2,
        maxQueued: 100,
        cacheMs: 60_000,
        cacheEntries: 100,
        nowMs: Date.now,
      }),
      throttle: new LoginThrottle({
        freeFailures: 5,
        intervalMs: 1000,
        forgetAfterMs: 60_000,
        maxEntries: 100,
      }),
      nowMs: Date.now,
    });
    // Fresh: amy logs in (and her credentials enter the verified cache).
    expect((await auth.authenticate(basicHeader("amy", "amy-pw"), "c")).ok).toBe(true);
    stale = "the API users Secret was last read 10001 ms ago";
    // The verified cache does not bypass it.
    const refused = await auth.authenticate(basicHeader("amy", "amy-pw"), "c");
    expect(refused).toMatchObject({ ok: false, status: 503, reason: "users_unavailable" });
    expect(!refused.ok && refused.message).toContain("10001 ms ago");
    expect(await auth.authenticate(basicHeader("ghost", "x"), "c")).toMatchObject({ status: 503 });
    expect((await auth.authenticate(basicHeader("ops", "ops-pw"), "c")).ok).toBe(true);
    expect(await auth.authenticate(basicHeader("ops", "wrong"), "c")).toMatchObject({ status: 401 });
    stale = undefined;
    expect((await auth.authenticate(basicHeader("amy", "amy-pw"), "c")).ok).toBe(true);
  });
});
