// The plugin's command line, parsed without I/O. kubectl hands a plugin its
// arguments as the user typed them after `kubectl narad`, so the kubectl
// connection flags (--kubeconfig, --context, -n/--namespace) are ours to
// read, and they may stand anywhere on the line, as with kubectl itself.

export const COMMANDS = ["status", "restart", "rebalance", "credentials", "port-forward"] as const;
export type CommandName = (typeof COMMANDS)[number];

/** Where to find the API server and which namespace to use (unset: the kubeconfig decides). */
export interface Connection {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
}

export type StatusOutput = "table" | "json" | "yaml";

export type Command =
  | { name: "status"; cluster: string; output: StatusOutput }
  | { name: "restart"; cluster: string }
  | { name: "rebalance"; cluster: string }
  | { name: "credentials"; cluster: string; json: boolean }
  | { name: "port-forward"; cluster: string; localPort: number; address: string; pod?: string };

export type Parsed =
  | { kind: "run"; command: Command; connection: Connection }
  | { kind: "help"; command?: CommandName }
  | { kind: "version" }
  | { kind: "usage-error"; message: string; command?: CommandName };

/** The broker HTTP port, also the default local port of port-forward. */
export const DEFAULT_LOCAL_PORT = 7942;

/** Flags that take a value, by command (undefined: any command). */
const VALUE_FLAGS: Record<string, CommandName | undefined> = {
  "--kubeconfig": undefined,
  "--context": undefined,
  "--namespace": undefined,
  "-n": undefined,
  "--output": "status",
  "-o": "status",
  "--address": "port-forward",
  "--pod": "port-forward",
};

const BOOLEAN_FLAGS: Record<string, CommandName | undefined> = {
  "--help": undefined,
  "-h": undefined,
  "--version": undefined,
  "--json": "credentials",
};

export function parseArgs(argv: readonly string[]): Parsed {
  const values = new Map<string, string>();
  const booleans = new Set<string>();
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positionals.push(arg);
      continue;
    }
    // kubectl's short forms with the value attached: -ojson, -nshop.
    const attached = /^-[no][^=]/.test(arg);
    const eq = attached ? -1 : arg.indexOf("=");
    const flag = attached ? arg.slice(0, 2) : eq > 0 ? arg.slice(0, eq) : arg;
    if (flag in VALUE_FLAGS) {
      let value: string | undefined;
      if (attached) value = arg.slice(2);
      else if (eq > 0) value = arg.slice(eq + 1);
      else {
        value = argv[i + 1];
        i++;
      }
      if (value === undefined || value === "") return usageError(`${flag} needs a value`, positionals);
      values.set(canonical(flag), value);
    } else if (flag in BOOLEAN_FLAGS && eq < 0) {
      booleans.add(canonical(flag));
    } else {
      return usageError(`unknown flag ${flag}`, positionals);
    }
  }

  const [first, ...rest] = positionals;
  const command = COMMANDS.find((c) => c === first);
  if (booleans.has("--help")) return command === undefined ? { kind: "help" } : { kind: "help", command };
  if (booleans.has("--version")) return { kind: "version" };
  if (first === undefined) return { kind: "usage-error", message: "no command given" };
  if (first === "help") {
    const about = COMMANDS.find((c) => c === rest[0]);
    return about === undefined ? { kind: "help" } : { kind: "help", command: about };
  }
  if (first === "version") return { kind: "version" };
  if (command === undefined) return { kind: "usage-error", message: `unknown command "${first}"` };

  for (const flag of [...values.keys(), ...booleans]) {
    const only = VALUE_FLAGS[flag] ?? BOOLEAN_FLAGS[flag];
    if (only !== undefined && only !== command)
      return { kind: "usage-error", message: `${flag} is not a flag of ${command}`, command };
  }

  const cluster = rest[0];
  if (cluster === undefined)
    return { kind: "usage-error", message: `${command} needs a cluster name`, command };
  const maxPositionals = command === "port-forward" ? 2 : 1;
  if (rest.length > maxPositionals)
    return { kind: "usage-error", message: `unexpected argument "${rest[maxPositionals]}"`, command };

  const connection: Connection = {};
  const kubeconfig = values.get("--kubeconfig");
  const context = values.get("--context");
  const namespace = values.get("--namespace");
  if (kubeconfig !== undefined) connection.kubeconfig = kubeconfig;
  if (context !== undefined) connection.context = context;
  if (namespace !== undefined) connection.namespace = namespace;

  const parsed = parseCommand(command, cluster, rest[1], values, booleans);
  if (typeof parsed === "string") return { kind: "usage-error", message: parsed, command };
  return { kind: "run", command: parsed, connection };
}

function parseCommand(
  name: CommandName,
  cluster: string,
  extra: string | undefined,
  values: ReadonlyMap<string, string>,
  booleans: ReadonlySet<string>,
): Command | string {
  switch (name) {
    case "status": {
      const output = values.get("--output") ?? "table";
      if (output !== "table" && output !== "json" && output !== "yaml")
        return `--output must be json, yaml or table, not "${output}"`;
      return { name, cluster, output };
    }
    case "restart":
    case "rebalance":
      return { name, cluster };
    case "credentials":
      return { name, cluster, json: booleans.has("--json") };
    case "port-forward": {
      const localPort = extra === undefined ? DEFAULT_LOCAL_PORT : parsePort(extra);
      if (localPort === undefined) return `local port must be an integer from 0 to 65535, not "${extra}"`;
      const pod = values.get("--pod");
      const command: Command = { name, cluster, localPort, address: values.get("--address") ?? "127.0.0.1" };
      if (pod !== undefined) command.pod = pod;
      return command;
    }
  }
}

/** 0 asks the system for a free port. */
export function parsePort(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port <= 65535 ? port : undefined;
}

function canonical(flag: string): string {
  if (flag === "-n") return "--namespace";
  if (flag === "-o") return "--output";
  if (flag === "-h") return "--help";
  return flag;
}

function usageError(message: string, positionals: readonly string[]): Parsed {
  const command = COMMANDS.find((c) => c === positionals[0]);
  return command === undefined ? { kind: "usage-error", message } : { kind: "usage-error", message, command };
}
