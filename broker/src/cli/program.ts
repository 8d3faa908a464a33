// Builds the `narad` command tree on commander from the declarative command
// specs (commands/*.ts): options, arguments, help text, "did you mean", and
// the tree the completion scripts are generated from. No command logic here.

import { Argument, Command as Commander, Option } from "commander";
import { NaradError } from "../../../client/index.ts";
import { type Command, type CommandGroup, type Options, UsageError, type Values } from "./args.ts";
import { bench } from "./commands/bench.ts";
import { cluster } from "./commands/cluster.ts";
import { context } from "./commands/context.ts";
import { group } from "./commands/group.ts";
import { hashPasswordCommand } from "./commands/hash-password.ts";
import { pub, replay, sub } from "./commands/messages.ts";
import { topic } from "./commands/topic.ts";
import {
  type CompletionNode,
  type CompletionShell,
  completionScript,
  completionShells,
} from "./completion.ts";
import { createSession } from "./session.ts";

/** `narad serve`'s flags, from config.ts (main.ts passes them in: cli/ does not import the broker's config). */
export interface ServeSpec {
  /** The broker's usage text, shown by `narad serve --help`. */
  usage: string;
  flags: ReadonlyArray<{ name: string; type: "string" | "boolean" }>;
}

export interface ProgramDeps {
  env: NodeJS.ProcessEnv;
  out(text: string): void;
  err(text: string): void;
  /** "narad 0.1.0 (node v24…)" */
  versionText: string;
  serve: ServeSpec;
}

export const globalOptions: Options = {
  url: {
    type: "string",
    value: "URL",
    multiple: true,
    description: "broker url (repeat, or comma-separate, for several)  env NARAD_URL",
  },
  context: {
    type: "string",
    value: "NAME",
    description: "a named context from contexts.json (NARAD_CONFIG_DIR, default ~/.config/narad)",
  },
  json: {
    type: "boolean",
    description: "machine-readable output: one JSON document, snake_case keys (NDJSON for sub and replay)",
  },
  "timeout-ms": { type: "string", value: "N", description: "per request (default 10000)" },
  user: { type: "string", value: "U", description: "Basic credentials with --password  env NARAD_USER" },
  password: { type: "string", value: "P", description: "env NARAD_PASSWORD" },
  token: { type: "string", value: "T", description: "bearer token instead  env NARAD_TOKEN" },
  ca: { type: "string", value: "FILE", description: "PEM CA to trust for https:// urls  env NARAD_CA" },
};

const rootNotes = `
Without --url, --context or NARAD_URL the current context's brokers (and its
credentials) are used, else http://127.0.0.1:7942.

Run "narad <command> --help" for a command's options, "narad serve --help" for the broker's.
Exit codes: 0 ok, 1 error (broker or network), 2 usage, 130 interrupted (bench).`;

/** Commands that take none of the global (client) options: their completion offers only their own. */
const ownOptionsOnly = new WeakSet<Commander>();

/** A value is a path when its placeholder names one: such options complete file names. */
const pathPlaceholders = new Set(["PATH", "FILE", "DIR"]);

/** Commander's option for a spec (valuesOf maps its camelCase key back to the flag name). */
function toOption(flag: string, spec: Options[string]): Option {
  const value = spec.type === "string" ? ` <${spec.value ?? "VALUE"}>` : "";
  const option = new Option(
    `${spec.short === undefined ? "" : `-${spec.short}, `}--${flag}${value}`,
    spec.description,
  );
  if (spec.multiple === true)
    option.argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), v]);
  return option;
}

function addOptions(cmd: Commander, options: Options): void {
  for (const [flag, spec] of Object.entries(options)) cmd.addOption(toOption(flag, spec));
}

/** The parsed values keyed by flag name, as the command specs read them. */
function valuesOf(cmd: Commander): Values {
  const values: Values = {};
  const opts = cmd.optsWithGlobals<Record<string, unknown>>();
  for (let c: Commander | null = cmd; c !== null; c = c.parent) {
    for (const o of c.options) {
      const v = opts[o.attributeName()];
      if (v !== undefined && o.long !== undefined) values[o.long.slice(2)] ??= v as Values[string];
    }
  }
  return values;
}

/** How a failed run is reported: its exit code, the message on stderr. */
function reportFailure(e: unknown, cmd: Commander, json: boolean, err: (t: string) => void): number {
  if (e instanceof UsageError) {
    err(`narad: ${e.message}\n${usageHint(cmd)}\n`);
    return 2;
  }
  if (json) {
    const ne = e instanceof NaradError ? e : undefined;
    err(
      `${JSON.stringify({ error: (e as Error).message, status: ne?.status, code: ne?.code, hint: ne?.hint })}\n`,
    );
  } else if (e instanceof NaradError) {
    err(`narad: ${e.message}\n  hint: ${e.hint}\n`);
  } else {
    err(`narad: ${(e as Error).message ?? String(e)}\n`);
  }
  return 1;
}

export interface Program {
  program: Commander;
  /** The exit code of the command that ran (0 when only help or the version was printed). */
  exitCode(): number;
}

export function buildProgram(deps: ProgramDeps): Program {
  let code = 0;
  const program = new Commander("narad")
    .usage("<command> [options]")
    .description("Narad's command line: topics, publish, subscribe, replay, bench, cluster status, contexts")
    .configureOutput({
      writeOut: deps.out,
      writeErr: deps.err,
      outputError: (text, write) => write(text.replace(/^error: /, "narad: ")),
    })
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .showSuggestionAfterError(true)
    .exitOverride()
    .version(deps.versionText, "-V, --version", "the version of narad (also: narad version)")
    .helpOption("-h, --help", "this text")
    .addHelpText("after", rootNotes);
  addOptions(program, globalOptions);

  const attach = (cmd: Commander, spec: Command) => {
    for (const a of spec.args ?? []) cmd.argument(a);
    addOptions(cmd, spec.options);
    if (spec.notes !== undefined) cmd.addHelpText("after", `\n${spec.notes}`);
    cmd.action(async () => {
      const values = valuesOf(cmd);
      const json = values.json === true;
      let session: ReturnType<typeof createSession> | undefined;
      try {
        session = createSession(values, deps.env, deps.out, deps.err);
        code = (await spec.run(values, cmd.args, session.io)) ?? 0;
      } catch (e) {
        code = reportFailure(e, cmd, json, deps.err);
      } finally {
        await session?.close();
      }
    });
  };
  const addGroup = (name: string, g: CommandGroup) => {
    const parent = program.command(name).summary(g.summary).description(g.summary);
    for (const [sub, spec] of Object.entries(g.commands))
      attach(parent.command(sub).summary(spec.summary).description(spec.summary), spec);
  };
  const addLeaf = (name: string, spec: Command) =>
    attach(program.command(name).summary(spec.summary).description(spec.summary), spec);

  const serve = program
    .command("serve")
    .summary("run a broker (narad serve --help for its flags)")
    .configureHelp({ formatHelp: () => deps.serve.usage });
  ownOptionsOnly.add(serve);
  for (const f of deps.serve.flags)
    serve.addOption(new Option(`--${f.name}${f.type === "string" ? " <value>" : ""}`));
  // main.ts starts the broker itself (without loading commander); only help and completion come here.
  serve.action(() => {
    throw new Error("narad serve is started by main.ts, not the client CLI");
  });

  addGroup("topic", topic);
  addGroup("group", group);
  addLeaf("pub", pub);
  addLeaf("sub", sub);
  addLeaf("replay", replay);
  addLeaf("bench", bench);
  addGroup("cluster", cluster);
  addGroup("context", context);
  addLeaf("hash-password", hashPasswordCommand);

  program
    .command("completion")
    .summary("print a shell completion script (bash, zsh or fish)")
    .description("Print a shell completion script generated from the command tree.")
    .addArgument(new Argument("<shell>").choices(completionShells))
    .addHelpText(
      "after",
      `
Install:
  bash:  echo 'source <(narad completion bash)' >> ~/.bashrc
  zsh:   narad completion zsh > "\${fpath[1]}/_narad"     (or: source <(narad completion zsh) in ~/.zshrc)
  fish:  narad completion fish > ~/.config/fish/completions/narad.fish`,
    )
    .action((shell: CompletionShell) => {
      deps.out(completionScript(shell, completionTree(program)));
    });
  program
    .command("version")
    .summary("the version of narad")
    .action(() => deps.out(`${deps.versionText}\n`));

  for (const cmd of allCommands(program)) cmd.showHelpAfterError(usageHint(cmd));
  return { program, exitCode: () => code };
}

function allCommands(cmd: Commander): Commander[] {
  return [cmd, ...cmd.commands.flatMap(allCommands)];
}

function commandPath(cmd: Commander): string {
  return cmd.parent === null ? cmd.name() : `${commandPath(cmd.parent)} ${cmd.name()}`;
}

/** Printed after a usage error: the command's usage line and where its help is (not the whole help). */
function usageHint(cmd: Commander): string {
  return `Usage: ${commandPath(cmd)} ${cmd.usage()}\nRun "${commandPath(cmd)} --help" for its options.`;
}

/** The tree the completion scripts are generated from: every command, option and argument choice. */
export function completionTree(cmd: Commander): CompletionNode {
  const help = { flags: ["-h", "--help"], takesValue: false, isPath: false, description: "help" };
  return {
    name: cmd.name(),
    description: cmd.summary() || cmd.description(),
    options: [
      ...cmd.options.map((o) => ({
        flags: [o.short, o.long].filter((f): f is string => f !== undefined),
        takesValue: o.required || o.optional,
        isPath: pathPlaceholders.has(/<(\w+)>/.exec(o.flags)?.[1] ?? ""),
        description: o.description,
      })),
      ...(cmd.parent === null || ownOptionsOnly.has(cmd) ? [help] : []),
    ],
    choices: cmd.registeredArguments[0]?.argChoices ?? [],
    inheritsOptions: !ownOptionsOnly.has(cmd),
    commands: cmd.commands.map(completionTree),
  };
}
