// metricslint (tools/metricslint): Prometheus's own conventions checks,
// `check metrics` (promlint, as promtool uses it) and `check rules`
// (rulefmt, which Prometheus loads rule files with), built with Go into
//
//   ~/.cache/narad-metricslint/<hash of go.mod, go.sum, main.go>/metricslint
//
//   node scripts/metricslint.ts     (npm run tools:metricslint; prints the path)
//
// The tests that use it call ensureMetricslint() in their beforeAll. A cold
// build is about 85 s of CPU (about 300 packages; 2.6 min of wall clock on a
// loaded 2-core machine), so it always runs; a change to the tool's sources
// changes the hash and so builds anew. The build holds a flock on
// ~/.cache/narad-metricslint/.build.lock, so concurrent test files build it
// once and the others wait and find it cached. Without `go` on PATH the
// checks skip, saying why.

import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** Bound for a cold build on a loaded 2-core machine, for the tests' beforeAll. */
export const METRICSLINT_BUILD_TIMEOUT_MS = 20 * 60_000;
/** The tool's sources: what the cache key hashes and what `go build` builds. */
export const METRICSLINT_SOURCE_DIR = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "tools",
  "metricslint",
);
const SOURCE_FILES = ["go.mod", "go.sum", "main.go"];
const cacheRoot = join(homedir(), ".cache", "narad-metricslint");
const lockFile = join(cacheRoot, ".build.lock");
const HEARTBEAT_MS = 30_000;
const LOCKED_BUILD_FLAG = "--locked-build";

/** The cache key: the first 16 hex digits of a SHA-256 over the sources. */
export function sourceHash(sourceDir = METRICSLINT_SOURCE_DIR): string {
  const h = createHash("sha256");
  for (const name of SOURCE_FILES) {
    h.update(`${name}\0`);
    h.update(readFileSync(join(sourceDir, name)));
    h.update("\0");
  }
  return h.digest("hex").slice(0, 16);
}

const binaryDir = (): string => join(cacheRoot, sourceHash());

export function findMetricslint(): string | undefined {
  const cached = join(binaryDir(), "metricslint");
  return existsSync(cached) ? cached : undefined;
}

function hasGo(): boolean {
  try {
    execFileSync("go", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/**
 * The metricslint binary: the cached one, else one built now under the lock.
 * Undefined, with the reason logged, only when there is no `go` to build it
 * with; a failed build throws.
 */
export async function ensureMetricslint(log: (line: string) => void): Promise<string | undefined> {
  const found = findMetricslint();
  if (found !== undefined) return found;
  if (!hasGo()) {
    log("metricslint: not built and no `go` on PATH to build it; skipping the Prometheus checks");
    return undefined;
  }
  mkdirSync(cacheRoot, { recursive: true });
  log(`metricslint: not cached; building ${METRICSLINT_SOURCE_DIR} into ${binaryDir()}`);
  const started = Date.now();
  // flock(1) holds the lock for the child's life and drops it if it dies.
  const child = spawn(
    "flock",
    [lockFile, process.execPath, fileURLToPath(import.meta.url), LOCKED_BUILD_FLAG],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let downloaded = 0;
  let compiled = 0;
  let last = "";
  createInterface({ input: child.stderr }).on("line", (line) => {
    // `go build -v` names each package it compiles; downloads say so.
    if (line.startsWith("go: downloading ")) downloaded++;
    else if (line.startsWith("metricslint:")) log(line);
    else compiled++;
    last = line;
  });
  createInterface({ input: child.stdout }).on("line", (line) => log(line));
  const heartbeat = setInterval(() => {
    const min = ((Date.now() - started) / 60_000).toFixed(1);
    log(
      `metricslint: building (${min} min): ${downloaded} module(s) downloaded, ${compiled} package(s) compiled`,
    );
  }, HEARTBEAT_MS);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  }).finally(() => clearInterval(heartbeat));
  const built = findMetricslint();
  if (code !== 0 || built === undefined)
    throw new Error(`metricslint build failed (exit ${code}); last line: ${last}`);
  log(`metricslint: ready in ${Math.round((Date.now() - started) / 1000)} s: ${built}`);
  return built;
}

export interface MetricslintResult {
  /** promtool's codes: 0 clean, 1 unreadable or invalid input, 3 lint problems. */
  code: number | null;
  stdout: string;
  /** The problems, one a line, as promtool prints them. */
  stderr: string;
}

function run(bin: string, args: string[], input?: string): MetricslintResult {
  const r = spawnSync(bin, args, { input, encoding: "utf8" });
  if (r.error !== undefined) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `check metrics` on a text exposition; each problem is a "<metric> <text>" line. */
export function checkMetrics(bin: string, exposition: string): MetricslintResult & { problems: string[] } {
  const r = run(bin, ["check", "metrics"], exposition);
  return { ...r, problems: r.stderr.split("\n").filter((l) => l.trim() !== "") };
}

/** `check rules` on rule files: "  SUCCESS: N rules found" per good file on stdout. */
export function checkRules(bin: string, files: string[]): MetricslintResult {
  return run(bin, ["check", "rules", ...files]);
}

/** Runs with the lock held: another holder may have built it meanwhile. */
function lockedBuild(): void {
  if (findMetricslint() !== undefined) {
    console.error("metricslint: built by another process while this one waited for the lock");
    return;
  }
  const dir = binaryDir();
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  // nice: tests run beside it in `npm test` (the unit group); they go first.
  // -mod=readonly: go.sum is committed, a build never rewrites it.
  execFileSync(
    "nice",
    [
      "-n",
      "19",
      "go",
      "build",
      "-v",
      "-mod=readonly",
      "-buildvcs=false",
      "-trimpath",
      "-ldflags=-s -w",
      "-o",
      join(partial, "metricslint"),
      ".",
    ],
    { cwd: METRICSLINT_SOURCE_DIR, stdio: ["ignore", "inherit", "inherit"] },
  );
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === LOCKED_BUILD_FLAG) lockedBuild();
  else {
    const path = await ensureMetricslint((line) => console.error(line));
    if (path === undefined) process.exit(1);
    console.log(path);
  }
}
