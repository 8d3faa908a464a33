// Runs Narad (Go)'s own CLI (`cmd/narad`, built from Narad's sources at the
// pinned commit) against this repository's broker: the topic, children, pub,
// sub, replay, user and cluster verbs a Narad user types, each checked by its
// exit code and what it prints. Not part of `npm test`: it needs Narad's
// sources (the local mirror or GitHub) and Go.
//
//   npm run compat:narad-cli
//
// NARAD_GO_REPO: a git directory or URL of Narad (default: the local mirror
// if present, else GitHub). NARAD_GO_COMMIT overrides the pin.

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { startNarad } from "../../broker/test/harness/process.ts";
import { type CliStep, cliScenario } from "./scenario.ts";

const pinnedCommit = "0ac256f";
const localMirror = "/work/.mirror/DebanganThakuria+narad/repo";

/** Narad's CLI binary for the commit, built once and cached under ~/.cache. */
function naradGoCli(): string {
  const commit = process.env.NARAD_GO_COMMIT ?? pinnedCommit;
  const cache = join(homedir(), ".cache", "narad-go-cli");
  const bin = join(cache, `narad-${commit}`);
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
    mkdirSync(cache, { recursive: true });
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

function runStep(bin: string, url: string, step: CliStep): { ok: boolean; detail: string } {
  const r = spawnSync(bin, step.args, {
    env: {
      ...process.env,
      NARAD_ADDR: url,
      NARAD_USER: step.as?.user ?? "admin",
      NARAD_PASS: step.as?.password ?? "admin-secret",
    },
    input: step.stdin ?? "",
    timeout: step.timeoutMs ?? 20_000,
    encoding: "utf8",
  });
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  // `sub` streams until stopped: the timeout is its normal end.
  const status = step.streams ? 0 : r.status;
  if (status !== step.exit)
    return {
      ok: false,
      detail: `exit ${r.status ?? r.signal}, want ${step.exit}: ${out.trim().slice(0, 300)}`,
    };
  const missing = step.prints.filter((re) => !re.test(out));
  if (missing.length > 0)
    return { ok: false, detail: `output lacks ${missing.join(", ")}: ${out.trim().slice(0, 300)}` };
  return { ok: true, detail: "" };
}

async function main(): Promise<void> {
  const bin = naradGoCli();
  const dir = mkdtempSync(join(tmpdir(), "narad-cli-compat-"));
  const usersFile = join(dir, "users.json");
  writeFileSync(usersFile, JSON.stringify({ users: [{ name: "admin", password: "admin-secret" }] }), {
    mode: 0o600,
  });
  const broker = await startNarad({ args: ["--auth", "on", "--auth-file", usersFile], logLevel: "warn" });
  let failed = 0;
  const steps = cliScenario();
  try {
    for (const step of steps) {
      let r = runStep(bin, broker.url, step);
      for (const until = Date.now() + 15_000; !r.ok && step.eventually && Date.now() < until; ) {
        await new Promise((ok) => setTimeout(ok, 500));
        r = runStep(bin, broker.url, step);
      }
      if (!r.ok) failed++;
      console.log(
        `${r.ok ? "PASS" : "FAIL"} narad ${step.args.join(" ")}${r.ok ? "" : `\n     ${r.detail}`}`,
      );
    }
  } finally {
    await broker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `Narad (Go) CLI ${process.env.NARAD_GO_COMMIT ?? pinnedCommit} against this broker: ${steps.length - failed} of ${steps.length} steps pass`,
  );
  process.exitCode = failed > 0 ? 1 : 0;
}

await main();
