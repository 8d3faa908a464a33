// `narad <command>` for people and scripts: topics, publish, subscribe,
// replay, bench, cluster status and named contexts, all through the client
// library (client/). main.ts dispatches here; `serve` stays in main.ts.

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { type ClientAuth, NaradClient, NaradError } from "../../../client/index.ts";
import { type Command, type Io, intOption, type Options, UsageError, type Values } from "./args.ts";
import { bench } from "./bench.ts";
import { commands } from "./commands.ts";
import { type Context, loadContexts } from "./contexts.ts";
import { hashPasswordCommand } from "./hash-password.ts";
import { cliUsage } from "./usage.ts";

const globalOptions: Options = {
  url: { type: "string", multiple: true },
  context: { type: "string" },
  json: { type: "boolean" },
  "timeout-ms": { type: "string" },
  user: { type: "string" },
  password: { type: "string" },
  token: { type: "string" },
  ca: { type: "string" },
  help: { type: "boolean", short: "h" },
};

/** The context the urls come from (--context, else the current one unless --url or NARAD_URL win). */
function urlContext(values: Values, env: NodeJS.ProcessEnv): Context | undefined {
  const flag = values.url as string[] | undefined;
  if (flag !== undefined && flag.length > 0) return undefined;
  const file = loadContexts(env);
  const named = values.context as string | undefined;
  if (named !== undefined) return file.contexts[named];
  if (env.NARAD_URL !== undefined && env.NARAD_URL.trim() !== "") return undefined;
  return file.current === undefined ? undefined : file.contexts[file.current];
}

/**
 * Credentials: --token > --user/--password > NARAD_TOKEN > NARAD_USER/NARAD_PASSWORD >
 * the context the urls come from (a context's secrets never go to a --url broker).
 */
export function resolveAuth(values: Values, env: NodeJS.ProcessEnv): ClientAuth | undefined {
  const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);
  const token = str(values.token);
  if (token !== undefined) return { token };
  const user = str(values.user);
  if (user !== undefined) {
    const password = str(values.password) ?? str(env.NARAD_PASSWORD);
    if (password === undefined) throw new UsageError("--user needs --password (or NARAD_PASSWORD)");
    return { username: user, password };
  }
  if (str(values.password) !== undefined) throw new UsageError("--password needs --user");
  const envToken = str(env.NARAD_TOKEN);
  if (envToken !== undefined) return { token: envToken };
  const envUser = str(env.NARAD_USER);
  if (envUser !== undefined) return { username: envUser, password: str(env.NARAD_PASSWORD) ?? "" };
  const ctx = urlContext(values, env);
  if (ctx?.token !== undefined) return { token: ctx.token };
  if (ctx?.user !== undefined) return { username: ctx.user, password: ctx.password ?? "" };
  return undefined;
}

/** --ca > NARAD_CA > the context's ca: a PEM file to trust for https:// urls. */
export function resolveCaFile(values: Values, env: NodeJS.ProcessEnv): string | undefined {
  const flag = values.ca;
  if (typeof flag === "string" && flag !== "") return flag;
  if (env.NARAD_CA !== undefined && env.NARAD_CA !== "") return env.NARAD_CA;
  return urlContext(values, env)?.ca;
}

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
  return { ...commands, bench, "hash-password": hashPasswordCommand };
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
  const group = ["topic", "group", "cluster", "context"].includes(command);
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
        if (client === undefined) {
          const auth = resolveAuth(values, env);
          const caFile = resolveCaFile(values, env);
          client = new NaradClient({
            urls: io.urls(),
            timeoutMs,
            retries: 2,
            ...(auth === undefined ? {} : { auth }),
            ...(caFile === undefined ? {} : { tls: { ca: readFileSync(caFile) } }),
          });
        }
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
