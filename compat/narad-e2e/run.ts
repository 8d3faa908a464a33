// Runs Narad (Go)'s own black-box e2e suite (tests/e2e) against this
// repository's broker: extracts Narad's sources at a pinned commit, swaps
// its in-process test env for env_test.go (a `narad serve` process per
// test), runs `go test -json` and prints pass/fail counts with the first
// failure line of each failing test. Not part of `npm test`: it needs Go
// and Narad's sources, and takes minutes.
//
//   npm run compat:narad [-- --run REGEX] [-- --parallel N] [-- --keep]
//
// NARAD_E2E_BROKER_ROOT: another checkout whose broker to run (default: this one).
// NARAD_GO_REPO: a git directory or URL of Narad (default: the local
// mirror if present, else GitHub). NARAD_GO_COMMIT overrides the pin.

import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { summarise, type TestEvent } from "./summary.ts";

const here = import.meta.dirname;
const repoRoot = resolve(here, "..", "..");
/** The commit shared/reference/narad-go.md describes. */
const pinnedCommit = "0ac256f";
const localMirror = "/work/.mirror/DebanganThakuria+narad/repo";

const { values } = parseArgs({
  options: {
    run: { type: "string" },
    parallel: { type: "string", default: "2" },
    keep: { type: "boolean", default: false },
  },
});

function sh(cmd: string, args: string[], cwd?: string): void {
  const r = spawnSync(cmd, args, { cwd, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (${r.status ?? r.signal})`);
}

/** A clean tree of Narad's sources at the commit, with our env in place of theirs. */
function prepareTree(): string {
  const source =
    process.env.NARAD_GO_REPO ??
    (existsSync(localMirror) ? localMirror : "https://github.com/DebanganThakuria/narad");
  const commit = process.env.NARAD_GO_COMMIT ?? pinnedCommit;
  const tree = join(tmpdir(), `narad-go-e2e-${commit}`);
  rmSync(tree, { recursive: true, force: true });
  mkdirSync(tree, { recursive: true });
  let gitDir = source;
  if (!existsSync(source)) {
    gitDir = join(tree, ".src.git");
    sh("git", ["clone", "--bare", "--quiet", source, gitDir]);
  }
  const archive = spawnSync("git", ["--git-dir", gitDir, "archive", commit], { maxBuffer: 1 << 30 });
  if (archive.status !== 0) throw new Error(`git archive ${commit}: ${archive.stderr.toString()}`);
  const untar = spawnSync("tar", ["-x", "-C", tree], { input: archive.stdout });
  if (untar.status !== 0) throw new Error(`tar: ${untar.stderr.toString()}`);
  for (const file of ["env_test.go", "procattr_linux_test.go", "procattr_other_test.go"])
    copyFileSync(join(here, file), join(tree, "tests/e2e", file));
  return tree;
}

async function main(): Promise<void> {
  const skips = JSON.parse(readFileSync(join(here, "skips.json"), "utf8")) as Record<string, string>;
  const tree = prepareTree();
  const args = ["test", "./tests/e2e/", "-count=1", "-json", "-timeout=40m", `-parallel=${values.parallel}`];
  const skipNames = Object.keys(skips);
  if (skipNames.length > 0) args.push(`-skip=^(${skipNames.join("|")})$`);
  if (values.run) args.push(`-run=${values.run}`);
  console.error(`narad-e2e: go ${args.join(" ")} (in ${tree})`);
  const child = spawn("nice", ["-n", "10", "go", ...args], {
    cwd: tree,
    env: {
      ...process.env,
      NARAD_E2E_NODE: process.execPath,
      // NARAD_E2E_BROKER_ROOT: run another checkout's broker (a baseline).
      NARAD_E2E_MAIN: join(process.env.NARAD_E2E_BROKER_ROOT ?? repoRoot, "broker/src/main.ts"),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const events: TestEvent[] = [];
  let rest = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    rest += chunk;
    const lines = rest.split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.startsWith("{")) {
        console.error(line);
        continue;
      }
      const ev = JSON.parse(line) as TestEvent;
      events.push(ev);
      if (ev.Test && !ev.Test.includes("/") && (ev.Action === "pass" || ev.Action === "fail")) {
        console.error(`${ev.Action.toUpperCase()} ${ev.Test} (${ev.Elapsed ?? 0}s)`);
      }
    }
  });
  const code = await new Promise<number>((ok) => child.on("exit", (c) => ok(c ?? 1)));
  // With --run, the listed skips may not be in the selection: count only what ran.
  const s = summarise(events, values.run ? {} : skips);
  const report = [
    `Narad e2e suite (${process.env.NARAD_GO_COMMIT ?? pinnedCommit}) against this broker:`,
    `  ${s.passed} passed, ${s.failed} failed, ${s.skipped.length} skipped (of ${s.total})`,
    ...s.skipped.map((n) => `  skip ${n}: ${skips[n] ?? "skipped by the test itself"}`),
    ...s.failures.map((f) => `  FAIL ${f.test}: ${f.reason}`),
  ].join("\n");
  console.log(report);
  writeFileSync(join(tmpdir(), "narad-go-e2e-report.txt"), `${report}\n`);
  if (!values.keep) rmSync(tree, { recursive: true, force: true });
  process.exitCode = s.failed > 0 || (code !== 0 && s.total === 0) ? 1 : 0;
}

await main();
