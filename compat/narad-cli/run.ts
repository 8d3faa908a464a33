// Runs Narad (Go)'s own CLI (`cmd/narad`, built from Narad's sources at the
// pinned commit) against this repository's broker: the topic, children, pub,
// sub, replay, bench, user, cluster and server report verbs a Narad user types, each checked by its
// exit code and what it prints. Not part of `npm test`: it needs Narad's
// sources (the local mirror or GitHub) and Go.
//
//   npm run compat:narad-cli
//
// NARAD_GO_REPO: a git directory or URL of Narad (default: the local mirror
// if present, else GitHub). NARAD_GO_COMMIT overrides the pin.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNarad } from "../../broker/test/harness/process.ts";
import { buildNaradGoCli, naradGoCommit, runNaradGoCli } from "./binary.ts";
import { type CliStep, cliScenario } from "./scenario.ts";

function runStep(bin: string, url: string, step: CliStep): { ok: boolean; detail: string } {
  const r = runNaradGoCli(bin, step.args, {
    url,
    user: step.as?.user ?? "admin",
    password: step.as?.password ?? "admin-secret",
    ...(step.stdin !== undefined ? { stdin: step.stdin } : {}),
    timeoutMs: step.timeoutMs ?? 20_000,
  });
  const out = r.output;
  // `sub` streams until stopped: the timeout is its normal end.
  const status = step.streams ? 0 : r.status;
  if (status !== step.exit)
    return {
      ok: false,
      detail: `exit ${r.status ?? "killed"}, want ${step.exit}: ${out.trim().slice(0, 300)}`,
    };
  const missing = step.prints.filter((re) => !re.test(out));
  if (missing.length > 0)
    return { ok: false, detail: `output lacks ${missing.join(", ")}: ${out.trim().slice(0, 300)}` };
  return { ok: true, detail: "" };
}

async function main(): Promise<void> {
  const bin = buildNaradGoCli();
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
    `Narad (Go) CLI ${naradGoCommit()} against this broker: ${steps.length - failed} of ${steps.length} steps pass`,
  );
  process.exitCode = failed > 0 ? 1 : 0;
}

await main();
