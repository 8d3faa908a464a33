// The API users' document (packages/users/src/document.ts: format, strict
// decode, canonical encode), plus the broker's own last check: a decoded
// document must also load as the authenticator's users (users-file.ts), so
// the store fails closed on anything the authenticator would refuse.

import {
  type ApiUser,
  decodeUsersDocument as decodeDocument,
  UsersDocumentError,
} from "../../../packages/users/src/document.ts";
import { parseUsersFile, type UsersDb, UsersFileError } from "./users-file.ts";

export {
  emptyUsersDocument,
  encodeUsersDocument,
  UsersDocumentError,
  usersDocumentKey,
} from "../../../packages/users/src/document.ts";

/** The users as the authenticator reads them; the users file's parser checks every hash and grant. */
export function usersDbOf(users: ReadonlyMap<string, ApiUser>): UsersDb {
  const doc = {
    users: [...users.values()].map((u) => ({ name: u.name, passwordHash: u.passwordHash, grants: u.grants })),
  };
  return parseUsersFile(JSON.stringify(doc));
}

/** Parses and checks a whole document; throws UsersDocumentError naming the first problem. */
export function decodeUsersDocument(text: string): Map<string, ApiUser> {
  const users = decodeDocument(text);
  try {
    usersDbOf(users);
  } catch (err) {
    if (err instanceof UsersFileError) throw new UsersDocumentError(err.message);
    throw err;
  }
  return users;
}
