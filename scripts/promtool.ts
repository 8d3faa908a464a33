// promtool, Prometheus's own checker (`promtool check metrics` for names and
// types, `promtool check rules` for rule files), built from the Go module
// proxy into ~/.cache/narad-promtool/<version>/promtool:
//
//   node scripts/promtool.ts        (npm run tools:promtool; needs Go)
//
// The tests that use it call ensurePromtool() in their beforeAll: it returns
// the cached binary, and builds one only when NARAD_PROMTOOL_BUILD=1. The
// build is opt-in because a cold one costs about 10 min of CPU on 2 cores
// (1,300 packages; 54 min of wall clock on a loaded machine), too much for
// `npm test` on a fresh machine. The build holds a flock on
// ~/.cache/narad-promtool/.build.lock, so two test files (or a test and
// `npm run tools:promtool`) build it once; the second waits and finds it
// cached. Without a binary the checks skip, saying why. PROMTOOL points them
// at another binary.

import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** Prometheus v3.x's Go module version (v0.3xx.y is Prometheus 3.xx.y). */
export const PROMTOOL_MODULE_VERSION = "v0.316.0";
/** Bound for a cold build on a loaded 2-core machine, for the tests' beforeAll. */
export const PROMTOOL_BUILD_TIMEOUT_MS = 40 * 60_000;
const cacheRoot = join(homedir(), ".cache", "narad-promtool");
const dir = join(cacheRoot, PROMTOOL_MODULE_VERSION);
const lockFile = join(cacheRoot, ".build.lock");
const HEARTBEAT_MS = 30_000;
const LOCKED_BUILD_FLAG = "--locked-build";

export function findPromtool(): string | undefined {
  const fromEnv = process.env["PROMTOOL"];
  if (fromEnv !== undefined && existsSync(fromEnv)) return fromEnv;
  const cached = join(dir, "promtool");
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
 * The promtool to use: the cached (or PROMTOOL) one, else one built now
 * under the lock. Undefined, with the reason logged, when it cannot be built
 * here (NARAD_PROMTOOL_BUILD is not 1, or no Go); a failed build throws.
 */
export async function ensurePromtool(log: (line: string) => void): Promise<string | undefined> {
  const found = findPromtool();
  if (found !== undefined) return found;
  if (process.env["NARAD_PROMTOOL_BUILD"] !== "1") {
    log(
      "promtool: not cached; skipping the promtool checks (`npm run tools:promtool` builds it, or NARAD_PROMTOOL_BUILD=1 builds it here)",
    );
    return undefined;
  }
  if (!hasGo()) {
    log("promtool: not built and no `go` on PATH to build it; skipping the promtool checks");
    return undefined;
  }
  mkdirSync(cacheRoot, { recursive: true });
  log(`promtool: not cached; building ${PROMTOOL_MODULE_VERSION} from the Go module proxy into ${dir}`);
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
    // `go install -v` names each package it compiles; downloads say so.
    if (line.startsWith("go: downloading ")) downloaded++;
    else if (line.startsWith("promtool:")) log(line);
    else compiled++;
    last = line;
  });
  createInterface({ input: child.stdout }).on("line", (line) => log(line));
  const heartbeat = setInterval(() => {
    const min = ((Date.now() - started) / 60_000).toFixed(1);
    log(
      `promtool: building (${min} min): ${downloaded} module(s) downloaded, ${compiled} package(s) compiled`,
    );
  }, HEARTBEAT_MS);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  }).finally(() => clearInterval(heartbeat));
  const built = findPromtool();
  if (code !== 0 || built === undefined)
    throw new Error(`promtool build failed (exit ${code}); last line: ${last}`);
  log(`promtool: ready in ${Math.round((Date.now() - started) / 1000)} s: ${built}`);
  return built;
}

/** Runs with the lock held: another holder may have built it meanwhile. */
function lockedBuild(): void {
  if (findPromtool() !== undefined) {
    console.error("promtool: built by another process while this one waited for the lock");
    return;
  }
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  // nice: tests run beside it in `npm test` (the unit group); they go first.
  execFileSync(
    "nice",
    [
      "-n",
      "19",
      "go",
      "install",
      "-v",
      `github.com/prometheus/prometheus/cmd/promtool@${PROMTOOL_MODULE_VERSION}`,
    ],
    { stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, GOBIN: partial } },
  );
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === LOCKED_BUILD_FLAG) lockedBuild();
  else {
    const path = await ensurePromtool((line) => console.error(line));
    if (path === undefined) process.exit(1);
    console.log(path);
  }
}
