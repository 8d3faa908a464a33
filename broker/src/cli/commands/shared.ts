// Helpers the command modules share: positional checks.

import { UsageError } from "../args.ts";

/** The positionals, checked against the required names and the optional count. */
export function positionals(args: string[], names: string[], optional: string[] = []): string[] {
  if (args.length < names.length) throw new UsageError(`missing <${names[args.length]}>`);
  if (args.length > names.length + optional.length)
    throw new UsageError(`unexpected argument "${args[names.length + optional.length]}"`);
  return args;
}
