// `narad context add | use | ls | rm`: named sets of broker urls and credentials.

import { resolve } from "node:path";
import type { Command, CommandGroup } from "../args.ts";
import { UsageError } from "../args.ts";
import { type Context, loadContexts, saveContexts } from "../contexts.ts";
import { table } from "../format.ts";
import { positionals } from "./shared.ts";

const add: Command = {
  summary: "add (or replace) a context; the first one becomes current",
  args: ["<name>"],
  options: {},
  notes:
    "Takes the global --url (repeatable), --user/--password or --token, and --ca.\n" +
    "Example: narad context add prod --url http://10.0.0.1:7942 --url http://10.0.0.2:7942",
  async run(values, args, io) {
    const [name] = positionals(args, ["name"]);
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(name as string))
      throw new UsageError(`invalid context name "${name}"`);
    const urls = ((values.url as string[] | undefined) ?? [])
      .flatMap((u) => u.split(","))
      .map((u) => u.trim())
      .filter((u) => u !== "");
    if (urls.length === 0) throw new UsageError("context add needs --url http://HOST:PORT (repeatable)");
    for (const u of urls)
      if (!/^https?:\/\/[^/]+/.test(u)) throw new UsageError(`--url must be http(s)://HOST:PORT, got "${u}"`);
    const file = loadContexts(io.env);
    const ctx: Context = { urls };
    if (typeof values.token === "string") ctx.token = values.token;
    if (typeof values.user === "string") {
      if (typeof values.password !== "string") throw new UsageError("--user needs --password");
      ctx.user = values.user;
      ctx.password = values.password;
    }
    if (typeof values.ca === "string") ctx.ca = resolve(values.ca);
    file.contexts[name as string] = ctx;
    file.current ??= name;
    saveContexts(io.env, file);
    if (io.json) io.outJson({ name, urls, current: file.current === name });
    else io.out(`context ${name}: ${urls.join(", ")}${file.current === name ? " (current)" : ""}\n`);
    return 0;
  },
};

const use: Command = {
  summary: "make a context the current one",
  args: ["<name>"],
  options: {},
  async run(_values, args, io) {
    const [name] = positionals(args, ["name"]);
    const file = loadContexts(io.env);
    if (file.contexts[name as string] === undefined)
      throw new UsageError(
        `no context "${name}"; add it with: narad context add ${name} --url http://HOST:7942`,
      );
    file.current = name;
    saveContexts(io.env, file);
    if (io.json) io.outJson({ current: name });
    else io.out(`using context ${name}\n`);
    return 0;
  },
};

const ls: Command = {
  summary: "list contexts (never their secrets)",
  options: {},
  async run(_values, args, io) {
    positionals(args, []);
    const file = loadContexts(io.env);
    const list = Object.entries(file.contexts).map(([name, c]) => ({
      name,
      urls: c.urls,
      current: name === file.current,
      // Never the secret itself; absent without credentials.
      ...(c.token !== undefined ? { auth: "token" } : c.user !== undefined ? { auth: `user ${c.user}` } : {}),
    }));
    if (io.json) io.outJson(list);
    else if (list.length === 0)
      io.out("no contexts (add one: narad context add <name> --url http://HOST:7942)\n");
    else
      io.out(
        table(
          ["CURRENT", "NAME", "URLS", "AUTH"],
          list.map((c) => [c.current ? "*" : "", c.name, c.urls.join(","), c.auth ?? ""]),
        ),
      );
    return 0;
  },
};

const rm: Command = {
  summary: "remove a context",
  args: ["<name>"],
  options: {},
  async run(_values, args, io) {
    const [name] = positionals(args, ["name"]);
    const file = loadContexts(io.env);
    if (file.contexts[name as string] === undefined) throw new UsageError(`no context "${name}"`);
    delete file.contexts[name as string];
    if (file.current === name) file.current = undefined;
    saveContexts(io.env, file);
    if (io.json) io.outJson({ removed: name });
    else io.out(`removed context ${name}\n`);
    return 0;
  },
};

export const context: CommandGroup = {
  summary: "named brokers and credentials (contexts.json)",
  commands: { add, use, ls, rm },
};
