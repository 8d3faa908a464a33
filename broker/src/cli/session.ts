// Where a client command's brokers and credentials come from (flags,
// environment, contexts), and the lazily created client of one invocation.

import { readFileSync } from "node:fs";
import { type ClientAuth, NaradClient } from "../../../client/index.ts";
import { type Io, intOption, UsageError, type Values } from "./args.ts";
import { type Context, loadContexts } from "./contexts.ts";
import { snakeCaseKeys } from "./json.ts";

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

/** The Io of one command run; `close` ends the client if one was made. */
export function createSession(
  values: Values,
  env: NodeJS.ProcessEnv,
  out: (t: string) => void,
  err: (t: string) => void,
): { io: Io; close(): Promise<void> } {
  const json = values.json === true;
  const timeoutMs = intOption(values, "timeout-ms", 1, 10_000) as number;
  let urls: string[] | undefined;
  let client: NaradClient | undefined;
  const io: Io = {
    env,
    json,
    out,
    err,
    outJson: (value) => out(`${JSON.stringify(snakeCaseKeys(value))}\n`),
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
  return { io, close: async () => client?.close() };
}
