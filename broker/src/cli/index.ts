// `narad <command>` for people and scripts: topics, publish, subscribe,
// replay, bench, cluster status and named contexts, all through the client
// library (client/). main.ts loads this module for every command but a
// broker start (`narad serve` without --help).

import { CommanderError } from "commander";
import { buildProgram, type ServeSpec } from "./program.ts";

/** Exit code of commander's own outcomes: help and version are fine, every parse error is a usage error. */
export function commanderExitCode(e: CommanderError): number {
  if (e.code === "commander.helpDisplayed" || e.code === "commander.version") return 0;
  if (e.code === "commander.help") return e.exitCode === 0 ? 0 : 2;
  return 2;
}

export async function runCli(
  argv: string[],
  serve: ServeSpec,
  versionText: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const { program, exitCode } = buildProgram({
    env,
    out: (t) => void process.stdout.write(t),
    err: (t) => void process.stderr.write(t),
    versionText,
    serve,
  });
  try {
    // A bare `narad` is asking what there is: the help, on stdout, exit 0.
    await program.parseAsync(argv.length === 0 ? ["--help"] : argv, { from: "user" });
    return exitCode();
  } catch (e) {
    if (e instanceof CommanderError) return commanderExitCode(e);
    throw e;
  }
}

/** Runs a command and exits once stdout and stderr are flushed (keep-alive sockets must not hold the process). */
export async function main(argv: string[], serve: ServeSpec, versionText: string): Promise<void> {
  const code = await runCli(argv, serve, versionText);
  await new Promise<void>((r) => process.stdout.write("", () => r()));
  await new Promise<void>((r) => process.stderr.write("", () => r()));
  process.exit(code);
}
