// The packages as a user installs them: `npm pack` of @narad/wire,
// @narad/client and narad, the three tarballs installed into an empty
// project, then the `narad` command from node_modules/.bin starts a broker
// and runs a CLI command, and the client is imported from plain JavaScript
// and from TypeScript (type-checked by tsc) and run against that broker.
// Installing needs the npm registry (or npm's cache: --prefer-offline).

import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, repoRoot, waitReady } from "./harness/process.ts";

const run = promisify(execFile);

let work: string;
let app: string;
let broker: ChildProcess | undefined;
let url: string;
const tarballs: Record<string, string> = {};
const contents: Record<string, string[]> = {};

/** Node 24 (this test's) first on PATH, so npm, npx and `#!/usr/bin/env node` use it. */
const env = { ...process.env, PATH: dirname(process.execPath) + delimiter + (process.env.PATH ?? "") };

async function npm(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run("npm", args, { cwd, env, maxBuffer: 64 << 20 });
  return stdout;
}

async function pack(dir: string): Promise<void> {
  const out = JSON.parse(await npm(["pack", "--json", "--pack-destination", work], join(repoRoot, dir))) as {
    name: string;
    filename: string;
    files: { path: string }[];
  }[];
  const p = out[0]!;
  tarballs[p.name] = join(work, p.filename);
  contents[p.name] = p.files.map((f) => f.path);
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "narad-packages-"));
  for (const dir of ["packages/wire", "client", "."]) await pack(dir);
  app = join(work, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  const typesNode = JSON.parse(readFileSync(join(repoRoot, "node_modules/@types/node/package.json"), "utf8"))
    .version as string;
  await npm(
    [
      "install",
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      tarballs["@narad/wire"]!,
      tarballs["@narad/client"]!,
      tarballs.narad!,
      `@types/node@${typesNode}`,
    ],
    app,
  );
  // The broker, from the installed package's bin.
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  broker = spawn(
    join(app, "node_modules/.bin/narad"),
    [
      "serve",
      "--addr",
      `127.0.0.1:${port}`,
      "--cluster-addr",
      "127.0.0.1:0",
      "--data-dir",
      join(work, "data"),
      "--log-level",
      "warn",
    ],
    { cwd: app, env, stdio: ["ignore", "inherit", "inherit"] },
  );
  const exited = new Promise<never>((_, fail) =>
    broker!.once("exit", (code) => fail(new Error(`installed narad serve exited with ${code}`))),
  );
  await Promise.race([waitReady(url), exited]);
}, 600_000);

afterAll(async () => {
  if (broker !== undefined && broker.exitCode === null && broker.signalCode === null) {
    const exited = new Promise((r) => broker!.once("exit", r));
    broker.kill("SIGTERM");
    await exited;
  }
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe("packed tarballs", () => {
  it("ship compiled JavaScript with declarations, and no TypeScript sources", () => {
    for (const name of ["@narad/wire", "@narad/client"]) {
      const files = contents[name]!;
      expect(files).toEqual(
        expect.arrayContaining(["package.json", "README.md", "LICENSE", "dist/index.js"]),
      );
      expect(files).toContain("dist/index.d.ts");
      expect(files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([]);
    }
    expect(contents["@narad/client"]!.some((f) => f.includes("test") || f.includes("testing"))).toBe(false);
    const narad = contents.narad!;
    expect(narad).toEqual(
      expect.arrayContaining([
        "bin/narad.js",
        "bin/narad-operator.js",
        "bin/kubectl-narad.js",
        "dist/broker/src/entry.js",
        "dist/operator/src/entry.js",
        "dist/operator/src/kubectl-plugin/entry.js",
        "dist/proto/narad/v1/cluster.proto",
        "LICENSE",
      ]),
    );
    expect(narad.filter((f) => f.endsWith(".ts"))).toEqual([]);
  });

  it("the installed client depends on @narad/wire, not on the broker's sources", () => {
    const wire = readFileSync(join(app, "node_modules/@narad/client/dist/wire.js"), "utf8");
    expect(wire).toContain('from "@narad/wire"');
    const pkg = JSON.parse(readFileSync(join(app, "node_modules/@narad/client/package.json"), "utf8"));
    expect(pkg.dependencies).toEqual({ "@narad/wire": pkg.version });
  });
});

describe("installed from tarballs", () => {
  it("npx narad runs a CLI command against the installed broker", async () => {
    const { stdout: added } = await run("npx", ["narad", "topic", "add", "cli-orders", "--partitions", "2"], {
      cwd: app,
      env: { ...env, NARAD_URL: url },
    });
    expect(added).toContain("cli-orders");
    const { stdout } = await run("npx", ["narad", "topic", "ls", "--json"], {
      cwd: app,
      env: { ...env, NARAD_URL: url },
    });
    expect(stdout).toContain('"cli-orders"');
  });

  it("npx narad-operator starts from the installed package (serves /healthz)", async () => {
    const port = await freePort();
    // An API server nobody listens on: the operator starts, serves its probes and retries its watches.
    const kubeconfig = join(work, "kubeconfig");
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters: [{name: none, cluster: {server: 'http://127.0.0.1:1'}}]",
        "users: [{name: none, user: {}}]",
        "contexts: [{name: none, context: {cluster: none, user: none}}]",
        "current-context: none",
        "",
      ].join("\n"),
    );
    const operator = spawn(join(app, "node_modules/.bin/narad-operator"), [], {
      cwd: app,
      env: {
        ...env,
        KUBECONFIG: kubeconfig,
        NARAD_OPERATOR_ADDR: `127.0.0.1:${port}`,
        NARAD_OPERATOR_LEADER_ELECT: "false",
      },
      stdio: ["ignore", "ignore", "inherit"],
    });
    let gone = false;
    const exited = new Promise<number | null>((r) =>
      operator.once("exit", (code) => {
        gone = true;
        r(code);
      }),
    );
    try {
      const healthy = (async () => {
        while (!gone) {
          const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
          if (res?.ok) return "healthy";
          await new Promise((r) => setTimeout(r, 100));
        }
        return "gone";
      })();
      expect(await Promise.race([healthy, exited.then((code) => `exited ${code}`)])).toBe("healthy");
    } finally {
      operator.kill("SIGTERM");
      await exited;
    }
  });

  it("kubectl-narad (the kubectl plugin) runs from the installed package", async () => {
    const bin = join(app, "node_modules/.bin/kubectl-narad");
    const version = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).version as string;
    const { stdout } = await run(bin, ["--version"], { cwd: app, env });
    expect(stdout).toBe(`kubectl-narad ${version}\n`);
    // A command loads client-node and the kubeconfig: no API server listens here, so it fails with exit 1.
    const kubeconfig = join(work, "kubeconfig-plugin");
    writeFileSync(
      kubeconfig,
      "apiVersion: v1\nkind: Config\nclusters: [{name: none, cluster: {server: 'http://127.0.0.1:1'}}]\n" +
        "users: [{name: none, user: {}}]\ncontexts: [{name: none, context: {cluster: none, user: none}}]\ncurrent-context: none\n",
    );
    const failed = await run(bin, ["status", "demo", "--kubeconfig", kubeconfig], { cwd: app, env }).catch(
      (err: { code?: number; stderr?: string }) => err,
    );
    expect(failed).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^error: reading naradcluster default\/demo: /),
    });
    // Its completion executable (kubectl runs kubectl_complete-narad for `kubectl narad <TAB>`).
    const completion = await run(join(app, "node_modules/.bin/kubectl_complete-narad"), ["re"], {
      cwd: app,
      env,
    });
    expect(completion.stdout).toBe("restart\nrebalance\n:4\n");
  });

  it("plain JavaScript imports @narad/client and @narad/wire, produces and consumes", async () => {
    writeFileSync(
      join(app, "main.mjs"),
      `import { NaradClient, TopicNotFoundError } from "@narad/client";
import { partitionForKey } from "@narad/wire";
const client = new NaradClient({ url: process.argv[2] });
const topic = process.argv[3];
await client.topics.create(topic, { partitions: 3 });
const producer = client.producer(topic, { lingerMs: 1, acks: "all" });
const sent = [];
for (let i = 0; i < 20; i++) sent.push(await producer.send({ n: i }, { key: "user-" + (i % 4) }));
await producer.close();
const deliveries = await Promise.all(sent.map((s) => s.delivered));
const keyed = deliveries.every((d, i) => d.partition === partitionForKey(Buffer.from("user-" + (i % 4)), 3));
let read = 0;
for (let p = 0; p < 3; p++) read += (await client.read(topic, p, 0, 100)).records.length;
let missing;
try { await client.topics.get("no-such-topic"); } catch (err) { missing = err instanceof TopicNotFoundError; }
await client.close();
console.log(JSON.stringify({ keyed, read, missing }));
`,
    );
    const { stdout } = await run(process.execPath, ["main.mjs", url, "js-orders"], { cwd: app, env });
    expect(JSON.parse(stdout)).toEqual({ keyed: true, read: 20, missing: true });
  });

  // The client's engines say Node 20; the machine's system node is one, when present.
  const node20 = ["/usr/bin/node", "/usr/local/bin/node"].find(
    (p) => existsSync(p) && execFileSync(p, ["--version"], { encoding: "utf8" }).startsWith("v20."),
  );
  it.skipIf(node20 === undefined)("the same program runs on Node 20 (the client's engines)", async () => {
    const { stdout } = await run(node20!, ["main.mjs", url, "js-orders-node20"], { cwd: app, env });
    expect(JSON.parse(stdout)).toEqual({ keyed: true, read: 20, missing: true });
  });

  it("TypeScript type-checks against the shipped declarations and runs", async () => {
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "es2022",
          module: "nodenext",
          moduleResolution: "nodenext",
          strict: true,
          noEmit: true,
          types: ["node"],
          allowImportingTsExtensions: true,
        },
        include: ["*.ts"],
      }),
    );
    writeFileSync(
      join(app, "main.ts"),
      `import { NaradClient, type Message, type TopicInfo } from "@narad/client";
const client = new NaradClient({ url: process.argv[2]! });
await client.topics.create("ts-orders", { partitions: 1 });
await client.produce("ts-orders", { item: "book" }, { key: "user-1" });
const info: TopicInfo = await client.topics.get("ts-orders");
const consumer = client.consumer("ts-orders", { group: "g", waitMs: 1000 });
let got: Message | undefined;
for await (const msg of consumer) {
  got = msg;
  await msg.ack();
  break;
}
await consumer.close();
await client.close();
console.log(JSON.stringify({ name: info.name, payload: got?.payload }));
`,
    );
    const tsc = join(repoRoot, "node_modules/typescript/bin/tsc");
    await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app, env });
    // A type error must fail tsc: the check above is not vacuous.
    writeFileSync(
      join(app, "bad.ts"),
      `import { NaradClient } from "@narad/client";\nnew NaradClient({ url: 7942 });\n`,
    );
    const failed = await run(process.execPath, [tsc, "-p", "tsconfig.json", "--skipLibCheck"], {
      cwd: app,
      env,
    }).then(
      () => "",
      (err: { stdout?: string }) => err.stdout ?? "",
    );
    expect(failed).toMatch(/bad\.ts.*error TS2322/);
    rmSync(join(app, "bad.ts"));
    const { stdout } = await run(process.execPath, ["main.ts", url], { cwd: app, env });
    expect(JSON.parse(stdout)).toEqual({ name: "ts-orders", payload: { item: "book" } });
  });
});
