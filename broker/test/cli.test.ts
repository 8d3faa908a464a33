// The `narad` client commands as child processes against a real broker.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNarad, repoRoot, startNarad } from "./harness/process.ts";

let narad: RunningNarad;
let configDir: string;

beforeAll(async () => {
  narad = await startNarad();
  configDir = mkdtempSync(join(tmpdir(), "narad-cli-config-"));
});

afterAll(async () => {
  await narad?.stop();
  if (configDir !== undefined) rmSync(configDir, { recursive: true, force: true });
});

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function narad_(
  args: string[],
  opts: { stdin?: string | Buffer; env?: NodeJS.ProcessEnv; url?: boolean } = {},
): Promise<Result> {
  const env: NodeJS.ProcessEnv = { ...process.env, NARAD_CONFIG_DIR: configDir, NARAD_URL: "", ...opts.env };
  if (opts.url !== false && env.NARAD_URL === "") env.NARAD_URL = narad.url;
  const child = spawn(process.execPath, [join(repoRoot, "broker/src/main.ts"), ...args], {
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  child.stdin.end(opts.stdin ?? "");
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

describe("narad CLI", () => {
  it("topic add, ls, info, edit, rm (human and --json)", async () => {
    const add = await narad_(["topic", "add", "orders", "--partitions", "2"]);
    expect(add).toMatchObject({ code: 0, stdout: "created topic orders (2 partitions)\n" });
    const ls = await narad_(["topic", "ls"]);
    expect(ls.code).toBe(0);
    expect(ls.stdout).toMatch(/^NAME\s+PARTITIONS/);
    expect(ls.stdout).toMatch(/\norders\s+2\s+7d\s+30s/);
    const lsJson = await narad_(["topic", "ls", "--json"]);
    expect(JSON.parse(lsJson.stdout)).toEqual([expect.objectContaining({ name: "orders", partitions: 2 })]);
    const edit = await narad_(["topic", "edit", "orders", "--partitions", "3"]);
    expect(edit).toMatchObject({ code: 0, stdout: "updated topic orders\n" });
    const info = await narad_(["topic", "info", "orders", "--json"]);
    const parsed = JSON.parse(info.stdout) as { partitions: number; partitionStats: unknown[] };
    expect(parsed.partitions).toBe(3);
    expect(parsed.partitionStats).toHaveLength(3);
    const human = await narad_(["topic", "info", "orders"]);
    expect(human.stdout).toMatch(/PARTITION\s+OWNER\s+OLDEST\s+HWM/);
    const dup = await narad_(["topic", "add", "orders"]);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/already exists|exists/);
    expect(dup.stderr).toContain("hint:");
    expect((await narad_(["topic", "rm", "orders"])).code).toBe(0);
    const gone = await narad_(["topic", "info", "orders"]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('topic "orders" not found');
    expect(gone.stderr).toContain("hint: create it first: narad topic add orders");
  });

  it("pub (argument and stdin lines) then replay; --json lines parse", async () => {
    expect((await narad_(["topic", "add", "events", "--partitions", "1"])).code).toBe(0);
    const one = await narad_(["pub", "events", '{"n":0}', "--key", "k0"]);
    expect(one).toMatchObject({ code: 0, stdout: "published 1 message to events\n" });
    const many = await narad_(["pub", "events", "--json"], { stdin: "first\nsecond\n\nthird\n" });
    expect(many.code).toBe(0);
    expect(JSON.parse(many.stdout)).toEqual({ topic: "events", published: 3 });
    // Visible after the dispatcher committed them.
    let lines: Array<{ offset: number; key: string; payload: unknown }> = [];
    for (let i = 0; i < 100 && lines.length < 4; i++) {
      const r = await narad_(["replay", "events", "--partition", "0", "--json"]);
      expect(r.code).toBe(0);
      lines = r.stdout
        .trim()
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l));
      if (lines.length < 4) await new Promise((res) => setTimeout(res, 100));
    }
    expect(lines.map((l) => l.payload)).toEqual([{ n: 0 }, "first", "second", "third"]);
    expect(lines[0]?.key).toBe("k0");
    const human = await narad_(["replay", "events", "--partition", "0", "--offset", "1", "--limit", "2"]);
    expect(human.stdout).toMatch(/^events\/0@1 {2}key=\S+ {2}first\nevents\/0@2 {2}key=\S+ {2}second\n$/);
  });

  it("pub --file stores the bytes as they are (a file, or all of stdin with -)", async () => {
    expect((await narad_(["topic", "add", "blobs", "--partitions", "1"])).code).toBe(0);
    const binary = Buffer.from([0xff, 0xfe, 0x00, 0x0a, 0x41, 0x0a, 0x80]);
    const path = join(configDir, "blob.bin");
    writeFileSync(path, binary);
    expect(await narad_(["pub", "blobs", "--file", path])).toMatchObject({
      code: 0,
      stdout: "published 1 message to blobs\n",
    });
    expect((await narad_(["pub", "blobs", "--file", "-"], { stdin: binary })).code).toBe(0);
    const both = await narad_(["pub", "blobs", "x", "--file", path]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("not both");
    let records: Array<{ payload: string; payload_encoding?: string }> = [];
    for (let i = 0; i < 100 && records.length < 2; i++) {
      const r = await fetch(`${narad.url}/v1/topics/blobs/records?partition=0&offset=0`);
      records = ((await r.json()) as { records: typeof records }).records;
      if (records.length < 2) await new Promise((res) => setTimeout(res, 100));
    }
    expect(records).toHaveLength(2);
    for (const r of records) {
      expect(r.payload_encoding).toBe("base64");
      expect(Buffer.from(r.payload, "base64").equals(binary)).toBe(true);
    }
  });

  it("sub --peek leaves messages unacked; sub acks", async () => {
    expect((await narad_(["topic", "add", "jobs", "--partitions", "1"])).code).toBe(0);
    await narad_(["pub", "jobs"], { stdin: "j1\nj2\nj3\n" });
    const peek = await narad_(["sub", "jobs", "--peek", "--count", "3", "--idle-ms", "5000", "--json"]);
    expect(peek.code).toBe(0);
    const peeked = peek.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { payload: string });
    expect(peeked.map((m) => m.payload).sort()).toEqual(["j1", "j2", "j3"]);
    // Nothing was acked: a second peek sees the same three, and the group's lag is 3.
    const again = await narad_(["sub", "jobs", "--peek", "--count", "3", "--idle-ms", "5000"]);
    expect(again.stdout.trim().split("\n")).toHaveLength(3);
    expect(again.stderr).toContain("3 messages peeked (not acked)");
    const info = JSON.parse((await narad_(["topic", "info", "jobs", "--json"])).stdout) as {
      groups: Array<{ name: string; lag: number }>;
    };
    expect(info.groups.find((g) => g.name === "default")?.lag).toBe(3);
    const sub = await narad_(["sub", "jobs", "--count", "3", "--idle-ms", "5000"]);
    expect(sub.code).toBe(0);
    expect(sub.stderr).toContain("3 messages consumed and acked");
    const empty = await narad_(["sub", "jobs", "--idle-ms", "300"]);
    expect(empty).toMatchObject({ code: 0, stdout: "" });
  });

  it("group ls, describe and rm", async () => {
    expect((await narad_(["topic", "add", "grouped", "--partitions", "2"])).code).toBe(0);
    await narad_(["pub", "grouped", "--partition", "0"], { stdin: "a\nb\n" });
    // Two leased, nothing acked: lag 2 and 2 in flight on partition 0.
    const peek = await narad_([
      "sub",
      "grouped",
      "--group",
      "audit",
      "--peek",
      "--count",
      "2",
      "--idle-ms",
      "5000",
    ]);
    expect(peek.code).toBe(0);
    const ls = await narad_(["group", "ls", "grouped", "--json"]);
    expect(ls.code).toBe(0);
    const groups = JSON.parse(ls.stdout) as Array<{ name: string; lag: number }>;
    expect(groups.find((g) => g.name === "audit")?.lag).toBe(2);
    expect((await narad_(["group", "ls", "grouped"])).stdout).toMatch(/^GROUP +LAG +IN FLIGHT +PARTITIONS\n/);
    const described = await narad_(["group", "describe", "grouped", "audit"]);
    expect(described.stdout).toMatch(
      /^PARTITION +COMMITTED +IN FLIGHT +ACKED AHEAD +LAG\n0 +0 +0 +0 +2\n1 +0 +0 +0 +0\n$/,
    );
    expect((await narad_(["group", "describe", "grouped", "nobody"])).code).toBe(1);
    expect(await narad_(["group", "rm", "grouped", "audit"])).toMatchObject({
      code: 0,
      stdout: "deleted group audit of grouped\n",
    });
    const after = JSON.parse((await narad_(["group", "ls", "grouped", "--json"])).stdout) as Array<{
      name: string;
    }>;
    expect(after.map((g) => g.name)).not.toContain("audit");
    expect((await narad_(["group", "rm", "grouped", "audit"])).code).toBe(1); // 404
    expect((await narad_(["group"])).code).toBe(2);
  });

  it("contexts round-trip in a temp config dir; --context and --url override", async () => {
    const add = await narad_(["context", "add", "local", "--url", narad.url], { url: false });
    expect(add.code).toBe(0);
    expect(add.stdout).toContain("(current)");
    expect(
      (await narad_(["context", "add", "broken", "--url", "http://127.0.0.1:1"], { url: false })).code,
    ).toBe(0);
    const ls = await narad_(["context", "ls", "--json"], { url: false });
    expect(JSON.parse(ls.stdout)).toEqual([
      { name: "local", urls: [narad.url], current: true },
      { name: "broken", urls: ["http://127.0.0.1:1"], current: false },
    ]);
    const file = JSON.parse(readFileSync(join(configDir, "contexts.json"), "utf8")) as { current: string };
    expect(file.current).toBe("local");
    // The current context is used when nothing else is given.
    expect((await narad_(["cluster", "status"], { url: false })).code).toBe(0);
    expect((await narad_(["context", "use", "broken"], { url: false })).stdout).toBe(
      "using context broken\n",
    );
    const down = await narad_(["cluster", "status", "--json"], { url: false });
    expect(down.code).toBe(1);
    expect(JSON.parse(down.stdout).brokers[0].state).toBe("unreachable");
    // --context and --url win over the current context.
    const viaContext = await narad_(["cluster", "status", "--context", "local", "--json"], { url: false });
    expect(viaContext.code).toBe(0);
    const status = JSON.parse(viaContext.stdout) as { brokers: Array<{ state: string; walPending: number }> };
    expect(status.brokers[0]).toMatchObject({ state: "ready", walPending: expect.any(Number) });
    expect((await narad_(["topic", "ls", "--url", narad.url], { url: false })).code).toBe(0);
    const unknown = await narad_(["topic", "ls", "--context", "nope"], { url: false });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no context "nope"');
  });

  it("--version (and version) prints the release version", async () => {
    const version = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).version as string;
    for (const arg of ["--version", "-V", "version"]) {
      const r = await narad_([arg], { url: false });
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`narad ${version} (node ${process.version})\n`);
    }
  });

  it("usage errors exit 2 with the usage text", async () => {
    const unknown = await narad_(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "frobnicate"');
    expect(unknown.stderr).toContain("Usage: narad <command>");
    const badFlag = await narad_(["topic", "ls", "--nope"]);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toContain("Usage:");
    expect((await narad_(["replay", "x"])).code).toBe(2);
    expect((await narad_(["topic", "add", "t", "--partitions", "zero"])).code).toBe(2);
  });

  it("bench prints a summary (plain progress when stderr is not a TTY)", async () => {
    const r = await narad_(["bench", "--messages", "3000", "--size", "100", "--concurrency", "2", "--json"]);
    expect(r.code).toBe(0);
    const s = JSON.parse(r.stdout) as {
      acknowledged: number;
      msg_per_sec: number;
      p50_ms: number;
      p99_ms: number;
    };
    expect(s.acknowledged).toBe(3000);
    expect(s.msg_per_sec).toBeGreaterThan(0);
    expect(s.p99_ms).toBeGreaterThanOrEqual(s.p50_ms);
    const human = await narad_(["bench", "--messages", "500"]);
    expect(human.stdout).toMatch(/throughput\s+[\d,]+ msg\/s/);
    expect(human.stdout).toMatch(/latency p99/);
  });
});
