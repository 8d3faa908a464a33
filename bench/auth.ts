// `node bench/auth.ts`: what authentication costs on produce. First the CPU
// cost of one authenticate() call per credential kind (in process, 20,000
// calls each, deterministic enough on a busy machine); then end to end: one broker
// with --auth on (users file: a plaintext password, an scrypt hash and a
// bearer token) and one with auth off, loaded alternately with single 1 KiB
// produces (64 connections, closed loop) for BENCH_SECONDS each, ROUNDS
// times; prints the median requests/s and p99 per mode and writes
// bench/auth-results.json.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Authenticator } from "../broker/src/auth/authenticator.ts";
import { basicHeader } from "../broker/src/auth/credentials.ts";
import { hashPassword, PasswordChecker } from "../broker/src/auth/passwords.ts";
import { LoginThrottle } from "../broker/src/auth/throttle.ts";
import { parseUsersFile, type UsersDb } from "../broker/src/auth/users-file.ts";
import { repoRoot, startNarad } from "../broker/test/harness/process.ts";
import { load } from "./lib/load.ts";

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const rounds = Number(process.env.ROUNDS ?? 3);
const token = "bench-token-0123456789abcdef";

async function createTopic(url: string, auth: string | undefined): Promise<void> {
  const res = await fetch(`${url}/v1/topics`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
    body: JSON.stringify({ name: "bench", partitions: 8 }),
  });
  if (res.status !== 201) throw new Error(`create topic: ${res.status} ${await res.text()}`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** Microseconds per authenticate() call, median of 5 runs of `calls` calls. */
async function microCost(db: UsersDb, header: string, calls = 20_000): Promise<number> {
  const auth = new Authenticator({
    users: () => db,
    clusterSecretDigest: () => undefined,
    passwords: new PasswordChecker({
      concurrency: 4,
      maxQueued: 256,
      cacheMs: 60_000,
      cacheEntries: 1000,
      nowMs: Date.now,
    }),
    throttle: new LoginThrottle(),
    nowMs: Date.now,
  });
  const first = await auth.authenticate(header); // warms the scrypt cache
  if (!first.ok) throw new Error(`micro: ${first.message}`);
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t = performance.now();
    for (let i = 0; i < calls; i++) await auth.authenticate(header);
    runs.push(((performance.now() - t) * 1000) / calls);
  }
  return median(runs);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "narad-bench-auth-"));
  const usersFile = join(dir, "users.json");
  const usersText = JSON.stringify({
    users: [
      { name: "admin", password: "plain-pw" },
      {
        name: "hashed",
        passwordHash: await hashPassword("hashed-pw"),
        grants: [{ action: "produce", topics: "*" }],
      },
      { name: "svc", tokens: [token], grants: [{ action: "produce", topics: "bench*" }] },
    ],
  });
  writeFileSync(usersFile, usersText);
  const db = parseUsersFile(usersText);
  const micro = {
    basicPlaintextUs: await microCost(db, basicHeader("admin", "plain-pw")),
    basicScryptCachedUs: await microCost(db, basicHeader("hashed", "hashed-pw")),
    bearerUs: await microCost(db, `Bearer ${token}`),
  };
  process.stdout.write(
    `authenticate() cost: Basic plaintext ${micro.basicPlaintextUs.toFixed(1)} µs, Basic scrypt (cached) ${micro.basicScryptCachedUs.toFixed(1)} µs, Bearer ${micro.bearerUs.toFixed(1)} µs\n`,
  );
  const off = await startNarad({});
  const on = await startNarad({ args: ["--auth", "on", "--auth-file", usersFile] });
  await createTopic(off.url, undefined);
  await createTopic(on.url, basicHeader("admin", "plain-pw"));
  const body = Buffer.alloc(1024, 0x61);
  const modes: Array<{ name: string; url: string; headers: Record<string, string> }> = [
    { name: "auth off", url: off.url, headers: {} },
    {
      name: "Basic, plaintext password",
      url: on.url,
      headers: { authorization: basicHeader("admin", "plain-pw") },
    },
    {
      name: "Basic, scrypt hash (cached)",
      url: on.url,
      headers: { authorization: basicHeader("hashed", "hashed-pw") },
    },
    { name: "Bearer token", url: on.url, headers: { authorization: `Bearer ${token}` } },
  ];
  const samples = new Map<string, { rps: number[]; p99: number[] }>(
    modes.map((m) => [m.name, { rps: [], p99: [] }]),
  );
  try {
    for (let r = 0; r < rounds; r++) {
      for (const m of modes) {
        const res = await load({
          url: `${m.url}/v1/topics/bench/produce?key=k`,
          connections: 64,
          seconds,
          body,
          headers: m.headers,
        });
        if (res.non2xx > 0 || res.errors > 0)
          throw new Error(`${m.name}: ${res.non2xx} non-2xx, ${res.errors} errors`);
        samples.get(m.name)?.rps.push(res.requestsPerSec);
        samples.get(m.name)?.p99.push(res.p99Ms);
        process.stderr.write(
          `  round ${r + 1} ${m.name}: ${res.requestsPerSec.toFixed(0)} req/s, p99 ${res.p99Ms} ms\n`,
        );
      }
    }
  } finally {
    await Promise.all([off.stop(), on.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
  const base = median(samples.get("auth off")?.rps ?? []);
  const results = modes.map((m) => {
    const s = samples.get(m.name) ?? { rps: [], p99: [] };
    const rps = median(s.rps);
    return {
      name: m.name,
      requestsPerSec: Math.round(rps),
      p99Ms: median(s.p99),
      ratio: base ? +(rps / base).toFixed(3) : null,
    };
  });
  for (const r of results)
    process.stdout.write(
      `${r.name.padEnd(30)} ${String(r.requestsPerSec).padStart(7)} req/s  p99 ${r.p99Ms} ms  ratio ${r.ratio}\n`,
    );
  writeFileSync(
    join(repoRoot, "bench", "auth-results.json"),
    `${JSON.stringify({ seconds, rounds, micro, results }, null, 2)}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
