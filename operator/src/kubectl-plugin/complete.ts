// Shell completion of `kubectl narad`, the pure part. kubectl (1.26+)
// completes a plugin's arguments by running `kubectl_complete-narad` with the
// words typed after `kubectl narad`, the last being the one under the cursor
// ("" for a new word), and reads cobra's __complete answer: one candidate a
// line, then `:<directive>`. This decides the candidates from the words;
// cluster names need the API server, so it says when to list them.

import { COMMANDS, type CommandName, type Connection } from "./args.ts";

/** cobra's ShellCompDirective values kubectl passes on to the shell. */
export const Directive = {
  /** Let the shell complete file names (the answer for --kubeconfig). */
  Default: 0,
  NoFileComp: 4,
} as const;

export type CompletionPlan =
  | { kind: "words"; words: string[]; directive: number }
  /** List the NaradClusters of the namespace (from the connection flags typed so far), filtered by prefix. */
  | { kind: "clusters"; prefix: string; connection: Connection };

const connectionFlags = ["--kubeconfig", "--context", "--namespace", "-n"];
const commandFlags: Record<CommandName, string[]> = {
  status: ["--output", "-o"],
  restart: [],
  rebalance: [],
  credentials: ["--json"],
  "port-forward": ["--address", "--pod"],
};
/** Flags followed by a value (the word after them is not a positional). */
const valueFlags = new Set([
  "--kubeconfig",
  "--context",
  "--namespace",
  "-n",
  "--output",
  "-o",
  "--address",
  "--pod",
]);

export function completionPlan(typed: readonly string[]): CompletionPlan {
  const current = typed.length === 0 ? "" : (typed[typed.length - 1] ?? "");
  const before = typed.slice(0, -1);
  const none: CompletionPlan = { kind: "words", words: [], directive: Directive.NoFileComp };
  const words = (all: readonly string[]): CompletionPlan => ({
    kind: "words",
    words: all.filter((w) => w.startsWith(current)),
    directive: Directive.NoFileComp,
  });

  const positionals: string[] = [];
  const connection: Connection = {};
  /** A value flag typed last, whose value is the word under the cursor. */
  let awaiting: string | undefined;
  for (let i = 0; i < before.length; i++) {
    const w = before[i] ?? "";
    if (!w.startsWith("-")) {
      positionals.push(w);
      continue;
    }
    const eq = w.indexOf("=");
    if (/^-n[^=]/.test(w))
      setConnection(connection, "-n", w.slice(2)); // kubectl's -nshop
    else if (eq > 0) setConnection(connection, w.slice(0, eq), w.slice(eq + 1));
    else if (valueFlags.has(w)) {
      const value = before[i + 1];
      if (value === undefined) awaiting = w;
      else setConnection(connection, w, value);
      i++;
    }
  }

  if (awaiting !== undefined) {
    if (awaiting === "--kubeconfig") return { kind: "words", words: [], directive: Directive.Default };
    if (awaiting === "--output" || awaiting === "-o") return words(["json", "yaml", "table"]);
    return none;
  }

  const command = COMMANDS.find((c) => c === positionals[0]);
  if (current.startsWith("-")) {
    const flags = [...connectionFlags.filter((f) => f.startsWith("--")), "--help"];
    if (command !== undefined) flags.push(...commandFlags[command].filter((f) => f.startsWith("--")));
    else if (positionals.length === 0) flags.push("--version");
    return words(flags);
  }
  if (positionals.length === 0) return words([...COMMANDS, "help", "version"]);
  if (positionals[0] === "help" && positionals.length === 1) return words(COMMANDS);
  if (command !== undefined && positionals.length === 1)
    return { kind: "clusters", prefix: current, connection };
  return none;
}

function setConnection(c: Connection, flag: string, value: string): void {
  if (flag === "--kubeconfig") c.kubeconfig = value;
  else if (flag === "--context") c.context = value;
  else if (flag === "--namespace" || flag === "-n") c.namespace = value;
}

/** cobra's __complete answer: the candidates, one a line, then the directive. */
export function renderCompletion(words: readonly string[], directive: number): string {
  return `${words.map((w) => `${w}\n`).join("")}:${directive}\n`;
}
