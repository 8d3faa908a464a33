// `narad hash-password [password]`: prints the scrypt passwordHash for a
// users file entry, so the file need not hold plaintext. Reads the password
// from stdin (first line) when not given, which keeps it out of shell history.

import { createInterface } from "node:readline";
import { hashPassword } from "../../auth/passwords.ts";
import { type Command, UsageError } from "../args.ts";

async function firstStdinLine(): Promise<string> {
  const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  return "";
}

export const hashPasswordCommand: Command = {
  summary: "scrypt passwordHash for a users file (--auth-file); stdin if omitted",
  args: ["[password]"],
  options: {},
  async run(_values, args, io) {
    if (args.length > 1) throw new UsageError(`unexpected argument "${args[1]}"`);
    if (args[0] === undefined && process.stdin.isTTY) io.err("password: ");
    const password = args[0] ?? (await firstStdinLine());
    if (password === "") throw new UsageError("the password must not be empty");
    const hash = await hashPassword(password);
    if (io.json) io.outJson({ passwordHash: hash });
    else io.out(`${hash}\n`);
    return 0;
  },
};
