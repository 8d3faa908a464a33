// Shared CLI plumbing: the declarative command shape the program builder
// turns into commander commands, usage errors, integer flags.

import type { NaradClient } from "../../../client/index.ts";

/** A bad invocation (exit 2): printed with the command's help. */
export class UsageError extends Error {}

export interface OptionSpec {
  type: "string" | "boolean";
  /** Placeholder of the value in the help ("N", "PATH"); string options only. */
  value?: string;
  description: string;
  /** Repeatable: the values collect into an array. */
  multiple?: boolean;
  short?: string;
}

/** Options by flag name (kebab-case, without the dashes). */
export type Options = Record<string, OptionSpec>;
/** Parsed option values by flag name. */
export type Values = Record<string, string | boolean | string[] | undefined>;

export interface Io {
  env: NodeJS.ProcessEnv;
  json: boolean;
  out(text: string): void;
  err(text: string): void;
  /** One JSON document on stdout, keys in snake_case like the HTTP API. */
  outJson(value: unknown): void;
  /** The client for the resolved urls (created on first use). */
  client(): NaradClient;
  urls(): string[];
}

export interface Command {
  /** One line for the command list. */
  summary: string;
  /** Positional arguments in commander's syntax: "<name>" required, "[message]" optional. */
  args?: string[];
  options: Options;
  /** Extra help text (examples, notes) after the generated help. */
  notes?: string;
  run(values: Values, positionals: string[], io: Io): Promise<number | undefined>;
}

/** A command with subcommands ("topic add", "group ls"). */
export interface CommandGroup {
  summary: string;
  commands: Record<string, Command>;
}

export function intOption(values: Values, name: string, min: number, fallback?: number): number | undefined {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (typeof raw !== "string" || raw.trim() === "" || !Number.isSafeInteger(n) || n < min) {
    throw new UsageError(`--${name} must be an integer >= ${min}, got "${String(raw)}"`);
  }
  return n;
}
