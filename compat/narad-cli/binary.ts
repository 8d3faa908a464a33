// Narad (Go)'s own `narad` CLI binary, built from Narad's sources at the
// pinned commit and cached under ~/.cache/narad-go-cli (never committed).
// compat/narad-cli/run.ts builds it when missing; e2e suites that drive it
// (e2e/operator/decommission-api.e2e.test.ts) only use a cached one.

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

export const pinnedNaradCommit = "0ac256f";
const localMirror = "/work/.mirror/DebanganThakuria+narad/repo";

/** The commit to build: NARAD_GO_COMMIT, else the pin. */
export function naradGoCommit(env: NodeJS.ProcessEnv = process.env): string {
  return env.NARAD_GO_COMMIT ?? pinnedNaradCommit;
}

/** Where the CLI of `commit` is cached (it may not exist yet). */
export function naradGoCliPath(commit = naradGoCommit()): string {
  return join(homedir(), ".cache", "narad-go-cli", `narad-${commit}`);
}

/** The cached CLI binary, or undefined when it has not been built (`npm run compat:narad-cli` builds it). */
export function cachedNaradGoCli(commit = naradGoCommit()): string | undefined {
  const bin = naradGoCliPath(commit);
  return existsSync(bin) ? bin : undefined;
}

/**
 * The CLI binary for the commit, built once (`go build ./cmd/narad` from
 * `git archive` of NARAD_GO_REPO, the local mirror, or GitHub).
 */
export function buildNaradGoCli(commit = naradGoCommit()): string {
  const bin = naradGoCliPath(commit);
  if (existsSync(bin)) return bin;
  const source =
    process.env.NARAD_GO_REPO ??
    (existsSync(localMirror) ? localMirror : "https://github.com/DebanganThakuria/narad");
  const tree = mkdtempSync(join(tmpdir(), "narad-go-cli-"));
  try {
    let gitDir = source;
    if (!existsSync(source)) {
      gitDir = join(tree, ".src.git");
      must("git", ["clone", "--bare", "--quiet", source, gitDir]);
    }
    const archive = spawnSync("git", ["--git-dir", gitDir, "archive", commit], { maxBuffer: 1 << 30 });
    if (archive.status !== 0) throw new Error(`git archive ${commit}: ${archive.stderr.toString()}`);
    const untar = spawnSync("tar", ["-x", "-C", tree], { input: archive.stdout });
    if (untar.status !== 0) throw new Error(`tar: ${untar.stderr.toString()}`);
    mkdirSync(join(bin, ".."), { recursive: true });
    console.error(`narad-cli: building Narad's CLI at ${commit} (go build ./cmd/narad)`);
    must("go", ["build", "-o", bin, "./cmd/narad"], tree);
    return bin;
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
}

function must(cmd: string, args: string[], cwd?: string): void {
  const r = spawnSync(cmd, args, { cwd, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (${r.status ?? r.signal})`);
}

export interface CliRun {
  /** Exit code (null when killed at the timeout). */
  status: number | null;
  /** stdout and stderr, in that order. */
  output: string;
}

/** Runs the CLI against `url` as `user`/`password` (Narad's NARAD_ADDR/NARAD_USER/NARAD_PASS). */
export function runNaradGoCli(
  bin: string,
  args: readonly string[],
  opts: { url: string; user: string; password: string; stdin?: string; timeoutMs?: number },
): CliRun {
  const r = spawnSync(bin, args, {
    env: { ...process.env, NARAD_ADDR: opts.url, NARAD_USER: opts.user, NARAD_PASS: opts.password },
    input: opts.stdin ?? "",
    timeout: opts.timeoutMs ?? 20_000,
    encoding: "utf8",
  });
  return { status: r.status, output: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}
