// The `narad` client commands as child processes against a real broker.

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveFlags } from "../src/config.ts";
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

function spawnNarad(
  args: string[],
  opts: { stdin?: string | Buffer; env?: NodeJS.ProcessEnv; url?: boolean } = {},
): { child: ChildProcess; result: Promise<Result> } {
  const env: NodeJS.ProcessEnv = { ...process.env, NARAD_CONFIG_DIR: configDir, NARAD_URL: "", ...opts.env };
  if (opts.url !== false && env.NARAD_URL === "") env.NARAD_URL = narad.url;
  const child = spawn(process.execPath, [join(repoRoot, "broker/src/main.ts"), ...args], {
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  child.stdin?.end(opts.stdin ?? "");
  const result = new Promise<Result>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr })),
  );
  return { child, result };
}

function narad_(
  args: string[],
  opts: { stdin?: string | Buffer; env?: NodeJS.ProcessEnv; url?: boolean } = {},
): Promise<Result> {
  return spawnNarad(args, opts).result;
}

async function topicNames(): Promise<string[]> {
  const r = await fetch(`${narad.url}/v1/topics`);
  return ((await r.json()) as { topics: Array<{ name: string }> }).topics.map((t) => t.name);
}

function onPath(command: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${command}`]).status === 0;
}

/** Every object key in a JSON document, at any depth. */
function allKeys(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(allKeys);
  if (value !== null && typeof value === "object")
    return Object.entries(value).flatMap(([k, v]) => [k, ...allKeys(v)]);
  return [];
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
    const parsed = JSON.parse(info.stdout) as { partitions: number; partition_stats: unknown[] };
    expect(parsed.partitions).toBe(3);
    expect(parsed.partition_stats).toHaveLength(3);
    const human = await narad_(["topic", "info", "orders"]);
    expect(human.stdout).toMatch(/PARTITION\s+OWNER\s+OLDEST\s+HWM/);
    expect(human.stdout).toMatch(/replication\s+factor 1, min in-sync 1/);
    expect(parsed).toMatchObject({ replication_factor: 1, min_insync_replicas: 1 });
    // Replication settings: one copy on a single broker, and the refusal says why.
    const one = await narad_([
      "topic",
      "add",
      "one",
      "--replication-factor",
      "1",
      "--min-insync-replicas",
      "1",
    ]);
    expect(one).toMatchObject({ code: 0, stdout: "created topic one (3 partitions)\n" });
    const three = await narad_(["topic", "add", "three", "--replication-factor", "3"]);
    expect(three.code).toBe(1);
    expect(three.stderr).toMatch(/replication_factor 3 needs at least 3 brokers, the cluster has 1/);
    const min = await narad_(["topic", "edit", "one", "--min-insync-replicas", "2"]);
    expect(min.code).toBe(1);
    expect(min.stderr).toMatch(/min_insync_replicas/);
    expect((await narad_(["topic", "rm", "one"])).code).toBe(0);
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

  it("group seek: back to earliest replays, latest skips, an offset in one partition; bad flags exit 2", async () => {
    expect((await narad_(["topic", "add", "seeking", "--partitions", "2"])).code).toBe(0);
    await narad_(["pub", "seeking", "--partition", "0"], { stdin: "a\nb\nc\n" });
    const sub = ["sub", "seeking", "--group", "g", "--idle-ms", "1500", "--json"];
    const offsets = async () =>
      (await narad_(sub)).stdout
        .trim()
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => (JSON.parse(l) as { offset: number }).offset)
        .sort();
    expect(await offsets()).toEqual([0, 1, 2]);
    const back = await narad_(["group", "seek", "seeking", "g", "--to-earliest"]);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toMatch(/^PARTITION +PREVIOUS +COMMITTED\n0 +3 +0\n1 +0 +0\n$/);
    expect(await offsets()).toEqual([0, 1, 2]);
    const one = await narad_([
      "group",
      "seek",
      "seeking",
      "g",
      "--to-offset",
      "2",
      "--partition",
      "0",
      "--json",
    ]);
    expect(JSON.parse(one.stdout)).toEqual({
      topic: "seeking",
      group: "g",
      partitions: [{ partition: 0, previous: 3, committed: 2 }],
    });
    expect(await offsets()).toEqual([2]);
    expect((await narad_(["group", "seek", "seeking", "g", "--to-latest"])).code).toBe(0);
    expect(await offsets()).toEqual([]);
    // Usage errors (2) before any request; the broker's 400 is 1.
    for (const flags of [
      [],
      ["--to-earliest", "--to-latest"],
      ["--to-offset", "1"],
      ["--to-offset", "x", "--partition", "0"],
    ])
      expect((await narad_(["group", "seek", "seeking", "g", ...flags])).code, flags.join(" ")).toBe(2);
    const past = await narad_(["group", "seek", "seeking", "g", "--to-offset", "9", "--partition", "0"]);
    expect(past.code).toBe(1);
    expect(past.stderr).toMatch(/past the partition's high watermark 3/);
    // delete is rm's other name.
    expect((await narad_(["group", "delete", "seeking", "g"])).stdout).toBe("deleted group g of seeking\n");
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
    const status = JSON.parse(viaContext.stdout) as {
      brokers: Array<{ state: string; wal_pending: number }>;
    };
    expect(status.brokers[0]).toMatchObject({ state: "ready", wal_pending: expect.any(Number) });
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
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
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
  it("per-command --help exits 0 with that command's options only", async () => {
    const pub = await narad_(["pub", "--help"], { url: false });
    expect(pub.code).toBe(0);
    expect(pub.stdout).toMatch(/^Usage: narad pub \[options\] <topic> \[message\]\n/);
    expect(pub.stdout).toContain("--file <PATH>");
    expect(pub.stdout).toContain("--url <URL>"); // the global options, listed apart
    expect(pub.stdout).not.toContain("--idle-ms"); // sub's, not pub's
    const add = await narad_(["topic", "add", "-h"], { url: false });
    expect(add.code).toBe(0);
    expect(add.stdout).toMatch(/^Usage: narad topic add \[options\] <name>\n/);
    expect(add.stdout).toContain("--visibility-timeout-ms <N>");
    const group = await narad_(["help", "topic"], { url: false });
    expect(group.code).toBe(0);
    for (const sub of ["add", "ls", "info", "edit", "rm"])
      expect(group.stdout).toMatch(new RegExp(`\\n  ${sub} `));
    const root = await narad_([], { url: false });
    expect(root.code).toBe(0);
    expect(root.stdout).toMatch(/^Usage: narad <command> \[options\]/);
    expect(root.stdout).toContain("completion <shell>");
  });

  it("serve --help prints every broker flag config.ts parses and exits 0", async () => {
    for (const args of [
      ["serve", "--help"],
      ["serve", "--dev", "-h"],
      ["help", "serve"],
    ]) {
      const r = await narad_(args, { url: false });
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^Usage: narad serve \[--dev\] \[options\]/);
      for (const flag of serveFlags) expect(r.stdout).toContain(`--${flag.name}`);
    }
  });

  it("a mistyped command or option gets a suggestion and exit 2", async () => {
    const command = await narad_(["topik", "ls"]);
    expect(command.code).toBe(2);
    expect(command.stderr).toContain("narad: unknown command 'topik'\n(Did you mean topic?)");
    expect(command.stdout).toBe("");
    const sub = await narad_(["topic", "lss"]);
    expect(sub.code).toBe(2);
    expect(sub.stderr).toContain("(Did you mean ls?)");
    const option = await narad_(["topic", "ls", "--jsno"]);
    expect(option.code).toBe(2);
    expect(option.stderr).toContain("narad: unknown option '--jsno'\n(Did you mean --json?)");
    expect(option.stderr).toContain('Run "narad topic ls --help"');
    const own = await narad_(["pub", "t", "x", "--kye", "k"]);
    expect(own.code).toBe(2);
    expect(own.stderr).toContain("(Did you mean --key?)");
    expect((await narad_(["pub"])).code).toBe(2); // missing <topic>
    expect((await narad_(["topic", "rm", "a", "b"])).code).toBe(2); // one too many
  });

  it("completion scripts come from the command tree; bash completes commands and options", async () => {
    const bash = await narad_(["completion", "bash"], { url: false });
    expect(bash.code).toBe(0);
    for (const word of [
      "topic",
      "group",
      "pub",
      "sub",
      "replay",
      "bench",
      "cluster",
      "context",
      "completion",
    ])
      expect(bash.stdout).toContain(word);
    expect(bash.stdout).toContain("complete -o default -F _narad narad");
    // Run it: what does bash offer after "narad to", "narad topic " and "narad pub t --f"?
    const script = join(configDir, "narad.bash");
    writeFileSync(script, bash.stdout);
    const complete = (words: string[]) =>
      new Promise<string>((resolve, reject) => {
        const line = `source ${JSON.stringify(script)}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _narad; echo "\${COMPREPLY[*]}"`;
        const child = spawn("bash", ["--norc", "-c", line]);
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
        });
        child.on("error", reject);
        child.on("close", () => resolve(out.trim()));
      });
    expect(await complete(["narad", "to"])).toBe("topic");
    expect((await complete(["narad", "topic", ""])).split(" ")).toEqual(
      expect.arrayContaining(["add", "ls", "info", "edit", "rm", "--json"]),
    );
    expect(await complete(["narad", "pub", "t", "--f"])).toBe("--file");
    expect(await complete(["narad", "--context", "x", "cl"])).toBe("cluster");
    expect(await complete(["narad", "serve", "--data"])).toBe("--data-dir");
    expect((await complete(["narad", "completion", ""])).split(" ")).toEqual(
      expect.arrayContaining(["bash", "zsh", "fish"]),
    );
    const zsh = await narad_(["completion", "zsh"], { url: false });
    expect(zsh.stdout).toMatch(/^#compdef narad\n/);
    expect(zsh.stdout).toContain("'hash-password:scrypt passwordHash");
    const fish = await narad_(["completion", "fish"], { url: false });
    expect(fish.stdout).toContain("complete -c narad -n '__fish_use_subcommand' -a 'topic'");
    expect(fish.stdout).toContain("-l partitions -r");
    expect((await narad_(["completion", "ksh"], { url: false })).code).toBe(2);
  });

  // Where zsh and fish are installed, their scripts parse, and fish completes from its script.
  it.skipIf(!onPath("fish") || !onPath("zsh"))("zsh and fish scripts load in their shells", async () => {
    const zshScript = join(configDir, "_narad");
    writeFileSync(zshScript, (await narad_(["completion", "zsh"], { url: false })).stdout);
    expect(spawnSync("zsh", ["-n", zshScript]).status).toBe(0);
    const fishScript = join(configDir, "narad.fish");
    writeFileSync(fishScript, (await narad_(["completion", "fish"], { url: false })).stdout);
    const fish = (line: string) =>
      spawnSync("fish", ["--no-config", "-c", `source ${fishScript}; complete -C ${JSON.stringify(line)}`], {
        encoding: "utf8",
        env: { ...process.env, HOME: configDir },
      }).stdout;
    expect(fish("narad to")).toMatch(/^topic\t/);
    expect(fish("narad topic add x --re")).toContain("--retention-ms");
    expect(fish("narad serve --data")).toMatch(/^--data-dir/);
  });

  it("--json output uses snake_case keys in every command", async () => {
    const docs: unknown[] = [];
    const json = async (args: string[], opts: { url?: boolean } = {}) => {
      const r = await narad_([...args, "--json"], opts);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      const doc = JSON.parse(r.stdout) as unknown;
      docs.push(doc);
      return doc;
    };
    await json(["topic", "add", "cased", "--partitions", "1"]);
    await json(["topic", "edit", "cased", "--retention-ms", "60000"]);
    await json(["pub", "cased", "hello"]);
    await narad_(["sub", "cased", "--group", "g1", "--peek", "--count", "1", "--idle-ms", "5000"]);
    const info = (await json(["topic", "info", "cased"])) as Record<string, unknown>;
    expect(info).toHaveProperty("partition_stats");
    expect(info).toHaveProperty("visibility_timeout_ms");
    await json(["topic", "ls"]);
    const groups = (await json(["group", "ls", "cased"])) as Array<{
      partitions: Array<Record<string, unknown>>;
    }>;
    expect(groups[0]?.partitions[0]).toHaveProperty("in_flight");
    await json(["group", "describe", "cased", "g1"]);
    await json(["cluster", "status"]);
    await json(["context", "ls"], { url: false });
    expect(await json(["hash-password", "pw"], { url: false })).toHaveProperty("password_hash");
    await json(["bench", "--messages", "50", "--size", "10"]);
    await json(["group", "rm", "cased", "g1"]);
    await json(["topic", "rm", "cased"]);
    const camel = docs.flatMap(allKeys).filter((k) => /[A-Z]/.test(k));
    expect(camel).toEqual([]);
    expect(docs.flatMap(allKeys)).toContain("high_watermark");
  });

  it("bench on SIGINT stops producing, removes its topic, prints the summary and exits 130", async () => {
    /** Starts a bench and interrupts it once its topic exists and records have flowed for a while. */
    const interruptedBench = async (args: string[]) => {
      const before = new Set(await topicNames());
      const { child, result } = spawnNarad(["bench", "--messages", "2000000", "--size", "10", ...args]);
      let topic: string | undefined;
      for (let i = 0; i < 400 && topic === undefined; i++) {
        topic = (await topicNames()).find((n) => n.startsWith("bench-") && !before.has(n));
        if (topic === undefined) await new Promise((r) => setTimeout(r, 50));
      }
      expect(topic).toBeDefined();
      await new Promise((r) => setTimeout(r, 1500));
      child.kill("SIGINT");
      return { topic, ...(await result) };
    };
    const r = await interruptedBench(["--json"]);
    expect(r.code, r.stderr).toBe(130);
    const summary = JSON.parse(r.stdout) as {
      topic: string;
      interrupted: boolean;
      messages: number;
      sent: number;
      acknowledged: number;
      failed: number;
    };
    expect(summary.topic).toBe(r.topic);
    expect(summary.interrupted).toBe(true);
    expect(summary.acknowledged).toBeGreaterThan(0);
    expect(summary.sent).toBeLessThan(summary.messages);
    // Everything handed to the producers settled before the exit.
    expect(summary.acknowledged + summary.failed).toBe(summary.sent);
    expect(await topicNames()).not.toContain(r.topic);
    // The human summary says how far it got.
    const h = await interruptedBench([]);
    expect(h.code, h.stderr).toBe(130);
    expect(h.stdout).toMatch(/interrupted after [\d,]+ of 2,000,000/);
    expect(h.stdout).toMatch(/throughput\s+[\d,]+ msg\/s/);
    expect(h.stderr).toContain("bench: interrupted");
    expect(await topicNames()).not.toContain(h.topic);
  });
});
