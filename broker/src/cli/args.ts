// Shared CLI plumbing: the command shape, usage errors, integer flags.

import type { NaradClient } from "../../../client/index.ts";

export class UsageError extends Error {}

export type Options = Record<string, { type: "string" | "boolean"; multiple?: boolean; short?: string }>;
export type Values = Record<string, string | boolean | string[] | undefined>;

export interface Io {
  env: NodeJS.ProcessEnv;
  json: boolean;
  out(text: string): void;
  err(text: string): void;
  /** The client for the resolved urls (created on first use). */
  client(): NaradClient;
  urls(): string[];
}

export interface Command {
  options: Options;
  /** Positional arguments: min and max count (after the subcommand, if any). */
  run(values: Values, positionals: string[], io: Io): Promise<number | undefined>;
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
