// `narad <command>` for people and scripts: topics, publish, subscribe,
// replay, bench, cluster status and named contexts, all through the client
// library (client/). main.ts dispatches here; `serve` stays in main.ts.

import { parseArgs } from "node:util";
import { NaradClient, NaradError } from "../../../client/index.ts";
import { type Command, type Io, intOption, type Options, UsageError, type Values } from "./args.ts";
import { bench } from "./bench.ts";
import { commands } from "./commands.ts";
import { loadContexts } from "./contexts.ts";
import { cliUsage } from "./usage.ts";

const globalOptions: Options = {
  url: { type: "string", multiple: true },
  context: { type: "string" },
  json: { type: "boolean" },
  "timeout-ms": { type: "string" },
  help: { type: "boolean", short: "h" },
};

/** --url > --context > NARAD_URL > the current context > http://127.0.0.1:7942. */
export function resolveUrls(values: Values, env: NodeJS.ProcessEnv): string[] {
  const split = (list: string[]) =>
    list
      .flatMap((u) => u.split(","))
      .map((u) => u.trim())
      .filter((u) => u !== "");
  const flag = values.url as string[] | undefined;
  if (flag !== undefined && flag.length > 0) return split(flag);
  const file = loadContexts(env);
  const named = values.context as string | undefined;
  if (named !== undefined) {
    const ctx = file.contexts[named];
    if (ctx === undefined) {
      throw new UsageError(
        `no context "${named}" (known: ${Object.keys(file.contexts).join(", ") || "none"}); add it with: narad context add ${named} --url http://HOST:7942`,
      );
    }
    return ctx.urls;
  }
  if (env.NARAD_URL !== undefined && env.NARAD_URL.trim() !== "") return split([env.NARAD_URL]);
  if (file.current !== undefined && file.contexts[file.current] !== undefined) {
    return file.contexts[file.current]?.urls ?? [];
  }
  return ["http://127.0.0.1:7942"];
}

function allCommands(): Record<string, Command> {
  return { ...commands, bench };
}

export async function runCli(
  command: string,
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const out = (t: string) => void process.stdout.write(t);
  const err = (t: string) => void process.stderr.write(t);
  // Subcommand groups: "topic add", "cluster status", "context use".
  let key = command;
  let rest = argv;
  const group = ["topic", "cluster", "context"].includes(command);
  if (group) {
    const sub = argv[0];
    if (sub === undefined || sub.startsWith("-")) {
      if (argv.includes("--help") || argv.includes("-h")) {
        out(cliUsage);
        return 0;
      }
      err(`narad: "${command}" needs a subcommand\n\n${cliUsage}`);
      return 2;
    }
    key = `${command} ${sub}`;
    rest = argv.slice(1);
  }
  const cmd = allCommands()[key];
  if (cmd === undefined) {
    err(`narad: unknown command "${key}"\n\n${cliUsage}`);
    return 2;
  }
  let client: NaradClient | undefined;
  let json = false;
  try {
    const parsed = parseArgs({
      args: rest,
      options: { ...globalOptions, ...cmd.options },
      allowPositionals: true,
      strict: true,
    });
    const values = parsed.values as Values;
    if (values.help === true) {
      out(cliUsage);
      return 0;
    }
    json = values.json === true;
    const timeoutMs = intOption(values, "timeout-ms", 1, 10_000) as number;
    let urls: string[] | undefined;
    const io: Io = {
      env,
      json,
      out,
      err,
      urls: () => {
        urls ??= resolveUrls(values, env);
        return urls;
      },
      client: () => {
        client ??= new NaradClient({ urls: io.urls(), timeoutMs, retries: 2 });
        return client;
      },
    };
    return (await cmd.run(values, parsed.positionals, io)) ?? 0;
  } catch (e) {
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      err(`narad: ${(e as Error).message}\n\n${cliUsage}`);
      return 2;
    }
    if (json) {
      const ne = e instanceof NaradError ? e : undefined;
      err(
        `${JSON.stringify({ error: (e as Error).message, status: ne?.status, code: ne?.code, hint: ne?.hint })}\n`,
      );
    } else if (e instanceof NaradError) {
      err(`narad: ${e.message}\n  hint: ${e.hint}\n`);
    } else if (e instanceof TypeError) {
      err(`narad: ${e.message}\n`);
    } else {
      err(`narad: ${(e as Error).message ?? String(e)}\n`);
    }
    return 1;
  } finally {
    await client?.close();
  }
}

/** Runs a command and exits once stdout and stderr are flushed (keep-alive sockets must not hold the process). */
export async function main(command: string, argv: string[]): Promise<void> {
  const code = await runCli(command, argv);
  await new Promise<void>((r) => process.stdout.write("", () => r()));
  await new Promise<void>((r) => process.stderr.write("", () => r()));
  process.exit(code);
}
