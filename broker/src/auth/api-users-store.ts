// The users the API manages (POST /v1/users ...), on one node: one JSON file
// next to the topic metadata, <data-dir>/metastore/users.json, written like
// topics.json (temp file, fsync, rename, directory fsync), so a crash leaves
// the old or the new set. Durable first: a change is written before memory
// sees it, so a 201/204 is never answered for a state a crash could undo.
// Passwords are stored only as scrypt hashes ("scrypt$N$r$p$salt$key").
//
// The file is input (anyone with access to the data dir can edit it): it is
// parsed with the users file's checks; a bad file stops the start.

import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { ApiUser } from "../../../packages/users/src/document.ts";
import { writeDurably } from "../meta/file-metastore.ts";
import { parseUsersFile, type UserRecord, type UsersDb, UsersFileError } from "./users-file.ts";

export type { ApiUser };

export interface ApiUsersStore {
  /** list, get and db throw a 503 (users_unavailable) NaradError while staleness() says why. */
  list(): readonly ApiUser[];
  get(name: string): ApiUser | undefined;
  /** The users as the authenticator reads them. */
  db(): UsersDb;
  /**
   * Undefined while decisions may use this store's view; else why not (a
   * shared store past its freshness bound). The file store is always fresh.
   */
  staleness(): string | undefined;
  /**
   * Runs `change` on the current users (serialised with every other change);
   * a returned list is written durably and then swapped in. A throw leaves
   * everything as it was. A shared store may run `fn` more than once (again
   * on a fresh read after another broker's write), so it must be pure.
   */
  change<T>(
    fn: (current: ReadonlyMap<string, ApiUser>) => { next: Map<string, ApiUser>; result: T },
  ): Promise<T>;
  close(): Promise<void>;
}

interface StoreFile {
  version: 1;
  users: ApiUser[];
}

function toDb(users: ReadonlyMap<string, ApiUser>): UsersDb {
  // The users file's parser checks every hash and grant, so both sources read the same.
  const doc = {
    users: [...users.values()].map((u) => ({ name: u.name, passwordHash: u.passwordHash, grants: u.grants })),
  };
  return parseUsersFile(JSON.stringify(doc));
}

function parseStore(text: string, path: string): Map<string, ApiUser> {
  let doc: StoreFile;
  try {
    doc = JSON.parse(text) as StoreFile;
  } catch (err) {
    throw new UsersFileError(`${path}: not JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== "object" || doc === null || doc.version !== 1 || !Array.isArray(doc.users))
    throw new UsersFileError(`${path}: must be {"version": 1, "users": [...]}`);
  const users = new Map<string, ApiUser>();
  for (const u of doc.users) {
    users.set(u.name, {
      name: u.name,
      passwordHash: u.passwordHash,
      grants: u.grants,
      created_at_ms: Number(u.created_at_ms) || 0,
      updated_at_ms: Number(u.updated_at_ms) || 0,
    });
  }
  try {
    toDb(users);
  } catch (err) {
    throw new UsersFileError(`${path}: ${(err as Error).message}`);
  }
  return users;
}

function serialise(users: ReadonlyMap<string, ApiUser>): string {
  const doc: StoreFile = {
    version: 1,
    users: [...users.values()].sort((a, b) => (a.name < b.name ? -1 : 1)),
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

export async function openApiUsersStore(dataDir: string): Promise<ApiUsersStore> {
  const dir = join(dataDir, "metastore");
  const file = "users.json";
  await mkdir(dir, { recursive: true });
  let users = new Map<string, ApiUser>();
  try {
    users = parseStore(await readFile(join(dir, file), "utf8"), join(dir, file));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  let db = toDb(users);
  let sorted = [...users.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  let queue: Promise<unknown> = Promise.resolve();
  return {
    list: () => sorted,
    get: (name) => users.get(name),
    db: () => db,
    staleness: () => undefined,
    change(fn) {
      const run = queue.then(async () => {
        const { next, result } = fn(users);
        const nextDb = toDb(next);
        await writeDurably(dir, file, serialise(next));
        users = next;
        db = nextDb;
        sorted = [...users.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
        return result;
      });
      queue = run.catch(() => undefined);
      return run;
    },
    close: async () => {
      await queue;
    },
  };
}

/**
 * What authentication reads: the users file and the API's users together.
 * The file wins on a name clash (it is the operator's, and authoritative);
 * bearer tokens exist only in the file. With `apiStale`, the API's users are
 * left out and `unavailable` says why (authentication answers 503 for a name
 * not in the file, instead of deciding on an old view).
 */
export function mergeUsers(file: UsersDb, api: UsersDb | undefined, apiStale?: string): UsersDb {
  // The API's users cannot be decided on: only the file's, and the reason for the rest.
  if (apiStale !== undefined) return { users: file.users, tokens: file.tokens, unavailable: apiStale };
  if (api === undefined || api.users.size === 0) return file;
  const users = new Map<string, UserRecord>(api.users);
  for (const [name, u] of file.users) users.set(name, u);
  return { users, tokens: file.tokens };
}
