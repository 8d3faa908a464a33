// Named contexts (broker urls) in $NARAD_CONFIG_DIR/contexts.json, default
// ~/.config/narad/contexts.json, written with temp file + rename.

import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export interface Context {
  urls: string[];
  /** Basic credentials, or a bearer token (brokers with --auth on). The file is written 0600. */
  user?: string;
  password?: string;
  token?: string;
  /** PEM file of a CA to trust for https:// urls. */
  ca?: string;
}

export interface ContextsFile {
  current?: string | undefined;
  contexts: Record<string, Context>;
}

export function configDir(env: NodeJS.ProcessEnv): string {
  const dir = env.NARAD_CONFIG_DIR;
  if (dir !== undefined && dir !== "") return dir;
  const xdg = env.XDG_CONFIG_HOME;
  return join(xdg !== undefined && xdg !== "" ? xdg : join(homedir(), ".config"), "narad");
}

export function contextsPath(env: NodeJS.ProcessEnv): string {
  return join(configDir(env), "contexts.json");
}

export function loadContexts(env: NodeJS.ProcessEnv): ContextsFile {
  let text: string;
  try {
    text = readFileSync(contextsPath(env), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { contexts: {} };
    throw err;
  }
  let parsed: ContextsFile;
  try {
    parsed = JSON.parse(text) as ContextsFile;
  } catch {
    throw new Error(`${contextsPath(env)} is not valid JSON; fix or remove it`);
  }
  return { current: parsed.current, contexts: parsed.contexts ?? {} };
}

export function saveContexts(env: NodeJS.ProcessEnv, file: ContextsFile): void {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true });
  const path = contextsPath(env);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
}
