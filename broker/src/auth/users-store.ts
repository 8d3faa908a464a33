// The users file on disk: loaded at startup (a bad file stops the start),
// polled every few seconds and swapped in when it changes (a bad file then
// keeps the last good one and logs why). A single node with auth on and no
// --auth-file gets <data-dir>/auth.json with an "admin" user and a random
// password, logged once when the file is created.

import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseUsersFile, type UsersDb, UsersFileError } from "./users-file.ts";
import { watchFile } from "./watched-file.ts";

export interface UsersStore {
  current(): UsersDb;
  readonly path: string;
  close(): void;
}

interface StoreLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Creates <dataDir>/auth.json with a random admin password unless it exists; returns its path. */
export async function ensureDefaultUsersFile(dataDir: string, logger: StoreLogger): Promise<string> {
  const path = join(dataDir, "auth.json");
  const password = randomBytes(18).toString("base64url");
  const doc = { users: [{ name: "admin", password }] };
  try {
    await writeFile(path, `${JSON.stringify(doc, null, 2)}\n`, { flag: "wx", mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return path;
    throw err;
  }
  logger.warn(
    { path, user: "admin", password },
    "authentication is on and no --auth-file was given: created a users file with a random admin password (logged only now)",
  );
  return path;
}

export async function openUsersStore(path: string, logger: StoreLogger, pollMs: number): Promise<UsersStore> {
  const initial = await readFile(path);
  let db: UsersDb;
  try {
    db = parseUsersFile(initial.toString("utf8"));
  } catch (err) {
    throw new UsersFileError(`users file ${path}: ${(err as Error).message}`);
  }
  logger.info({ path, users: db.users.size }, "users file loaded");
  const watcher = watchFile(
    path,
    pollMs,
    (content) => {
      try {
        db = parseUsersFile(content.toString("utf8"));
        logger.info({ path, users: db.users.size }, "users file reloaded");
      } catch (err) {
        logger.error(
          { path, error: (err as Error).message },
          "users file invalid; keeping the previous users",
        );
      }
    },
    (err) =>
      logger.error({ path, error: err.message }, "cannot read the users file; keeping the previous users"),
    initial,
  );
  return { current: () => db, path, close: () => watcher.close() };
}
