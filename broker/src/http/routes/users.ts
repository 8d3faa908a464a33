// The Users API, Narad v1's routes: /v1/users (create, list), /v1/users/{u}
// (get, delete), /v1/users/{u}/grants (PUT, POST: replace), /v1/users/{u}/password
// (PUT). The decisions are auth/user-rules.ts; this file reads the two user
// sources, hashes passwords and writes the API's store. Users of the
// operator's users file are shown but read-only. Passwords are never logged
// and never answered.

import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ApiUser, ApiUsersStore } from "../../auth/api-users-store.ts";
import type { PasswordChecker } from "../../auth/passwords.ts";
import { hashPassword } from "../../auth/passwords.ts";
import {
  createRefusal,
  deleteRefusal,
  grantsRefusal,
  grantsToWire,
  parseApiGrants,
  passwordProblem,
  passwordRefusal,
  type Refusal,
  readRefusal,
  type TargetUser,
} from "../../auth/user-rules.ts";
import type { UsersDb } from "../../auth/users-file.ts";
import { badRequest, coded, NaradError } from "../../errors.ts";
import { pathSchema, querySchema } from "../query-schema.ts";
import { registerLenientJson } from "./topics.ts";

export interface UsersApi {
  /** The operator's users file as now loaded. */
  file(): UsersDb;
  /** The API's store; undefined where it cannot write (the reason is `unavailable`). */
  store: ApiUsersStore | undefined;
  /** Why there is no store (answered as 501 users_api_unavailable). */
  unavailable?: string;
  passwords: PasswordChecker;
  nowMs(): number;
}

/** Users bodies are small; a hostile one is refused before it is parsed. */
const usersBodyLimit = 64 * 1024;
const userParams = pathSchema({ username: "user name" });

const refusalKind = { 400: "BAD_REQUEST", 403: "FORBIDDEN", 404: "NOT_FOUND", 409: "CONFLICT" } as const;

function refusalError(r: Refusal): NaradError {
  return new NaradError(refusalKind[r.status], r.message, { apiCode: r.code });
}

function check(r: Refusal | undefined): void {
  if (r !== undefined) throw refusalError(r);
}

function bodyObject(body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw badRequest("request body must be a JSON object");
  return body as Record<string, unknown>;
}

function onlyFields(body: Record<string, unknown>, allowed: readonly string[]): void {
  for (const k of Object.keys(body))
    if (!allowed.includes(k))
      throw badRequest(`unknown field "${k}" (this route takes: ${allowed.join(", ")})`);
}

function grantsOf(raw: unknown) {
  try {
    return parseApiGrants(raw);
  } catch (err) {
    throw badRequest((err as Error).message);
  }
}

interface UserWire {
  username: string;
  grants?: Array<Record<string, unknown>>;
  root?: boolean;
  /** "file": the operator's users file (read-only here); "api": this API's store. */
  source: "file" | "api";
  created_at_ms?: number;
  updated_at_ms?: number;
}

function apiUserToWire(u: ApiUser): UserWire {
  return {
    username: u.name,
    ...(u.grants.length === 0 ? {} : { grants: grantsToWire(u.grants) }),
    source: "api",
    created_at_ms: u.created_at_ms,
    updated_at_ms: u.updated_at_ms,
  };
}

export function userRoutes(api: UsersApi | undefined) {
  return async (app: FastifyInstance): Promise<void> => {
    registerLenientJson(app);

    const writable = (): { api: UsersApi; store: ApiUsersStore } => {
      if (api === undefined)
        throw coded(
          "NOT_IMPLEMENTED",
          "users_api_unavailable",
          "authentication is off (--auth off): there are no users to manage",
        );
      if (api.store === undefined)
        throw coded(
          "NOT_IMPLEMENTED",
          "users_api_unavailable",
          api.unavailable ?? "the Users API is unavailable",
        );
      return { api, store: api.store };
    };

    /** Where a name lives now: the file wins on a clash, as in authentication. */
    const targetOf = (a: UsersApi, store: ApiUsersStore, name: string): TargetUser | undefined => {
      if (a.file().users.has(name)) return { name, source: "file" };
      if (store.get(name) !== undefined) return { name, source: "api" };
      return undefined;
    };

    const wireOf = (a: UsersApi, store: ApiUsersStore, name: string): UserWire | undefined => {
      const f = a.file().users.get(name);
      if (f !== undefined)
        return {
          username: f.name,
          ...(f.grants.length === 0 ? {} : { grants: grantsToWire(f.grants) }),
          ...(f.name === "admin" ? { root: true } : {}),
          source: "file",
        };
      const u = store.get(name);
      return u === undefined ? undefined : apiUserToWire(u);
    };

    app.post(
      "/v1/users",
      {
        bodyLimit: usersBodyLimit,
        schema: {
          tags: ["users"],
          summary: "Create a user",
          description:
            'Admin only. Body: {"username", "password", "grants": [{"action", "patterns": [...]}]}; 201 with the user (never the password). Only root grants admin; nobody grants more than they hold (403 privilege_escalation). 409 user_exists, or user_read_only for a name in the users file.',
          querystring: querySchema(),
        },
      },
      async (request, reply) => {
        const { api: a, store } = writable();
        const body = bodyObject(request.body);
        onlyFields(body, ["username", "password", "grants"]);
        const grants = grantsOf(body.grants);
        const name = body.username;
        check(
          createRefusal(
            request.principal,
            name,
            grants,
            typeof name === "string" ? targetOf(a, store, name)?.source : undefined,
          ),
        );
        const problem = passwordProblem(body.password, "password");
        if (problem !== undefined) throw badRequest(problem);
        const username = name as string;
        const passwordHash = await hashPassword(body.password as string);
        const now = a.nowMs();
        const created = await store.change((current) => {
          // Checked again in the serialised change: a concurrent create of the same name loses here.
          if (current.has(username) || a.file().users.has(username))
            throw coded("CONFLICT", "user_exists", `user "${username}" already exists`);
          const user: ApiUser = {
            name: username,
            passwordHash,
            grants,
            created_at_ms: now,
            updated_at_ms: now,
          };
          const next = new Map(current);
          next.set(username, user);
          return { next, result: user };
        });
        request.log.info({ user: username, by: request.principal?.name }, "user created");
        return reply.code(201).send(apiUserToWire(created));
      },
    );

    app.get(
      "/v1/users",
      {
        schema: {
          tags: ["users"],
          summary: "List users",
          description:
            "Admin only. Every user of the users file (source file, read-only) and of the API (source api), sorted by name; a name in both is the file's.",
          querystring: querySchema(),
        },
      },
      async (request) => {
        const { api: a, store } = writable();
        check(readRefusal(request.principal));
        const names = new Set([...a.file().users.keys(), ...store.list().map((u) => u.name)]);
        return [...names].sort().map((n) => wireOf(a, store, n));
      },
    );

    app.get<{ Params: { username: string } }>(
      "/v1/users/:username",
      {
        schema: {
          tags: ["users"],
          summary: "Describe a user",
          description: "Admin only. The user's grants and source; never the password.",
          params: userParams,
          querystring: querySchema(),
        },
      },
      async (request) => {
        const { api: a, store } = writable();
        check(readRefusal(request.principal));
        const w = wireOf(a, store, request.params.username);
        if (w === undefined)
          throw coded("NOT_FOUND", "user_not_found", `user "${request.params.username}" not found`);
        return w;
      },
    );

    app.delete<{ Params: { username: string } }>(
      "/v1/users/:username",
      {
        schema: {
          tags: ["users"],
          summary: "Delete a user",
          description:
            "Admin only; 204. Root and one's own account cannot be deleted (403); a users-file user is read-only (409 user_read_only).",
          params: userParams,
          querystring: querySchema(),
        },
      },
      async (request, reply) => {
        const { api: a, store } = writable();
        const name = request.params.username;
        check(deleteRefusal(request.principal, targetOf(a, store, name), name));
        await store.change((current) => {
          if (!current.has(name)) throw coded("NOT_FOUND", "user_not_found", `user "${name}" not found`);
          const next = new Map(current);
          next.delete(name);
          return { next, result: undefined };
        });
        request.log.info({ user: name, by: request.principal?.name }, "user deleted");
        return reply.code(204).send();
      },
    );

    const replaceGrants = async (request: FastifyRequest<{ Params: { username: string } }>) => {
      const { api: a, store } = writable();
      const name = request.params.username;
      const body = bodyObject(request.body);
      onlyFields(body, ["grants"]);
      if (body.grants === undefined) throw badRequest("grants required");
      const grants = grantsOf(body.grants);
      check(grantsRefusal(request.principal, targetOf(a, store, name), name, grants));
      const updated = await store.change((current) => {
        const u = current.get(name);
        if (u === undefined) throw coded("NOT_FOUND", "user_not_found", `user "${name}" not found`);
        const next = new Map(current);
        const changed: ApiUser = { ...u, grants, updated_at_ms: a.nowMs() };
        next.set(name, changed);
        return { next, result: changed };
      });
      request.log.info({ user: name, by: request.principal?.name }, "user grants replaced");
      return apiUserToWire(updated);
    };
    const grantsSchema = {
      bodyLimit: usersBodyLimit,
      schema: {
        tags: ["users"],
        summary: "Replace a user's grants",
        description:
          "Admin only. Body: {\"grants\": [...]}, the whole new list; 200 with the user. Not one's own grants, not root's (403); no escalation (403 privilege_escalation).",
        params: userParams,
        querystring: querySchema(),
      },
    };
    app.put<{ Params: { username: string } }>("/v1/users/:username/grants", grantsSchema, replaceGrants);
    app.post<{ Params: { username: string } }>("/v1/users/:username/grants", grantsSchema, replaceGrants);

    app.put<{ Params: { username: string } }>(
      "/v1/users/:username/password",
      {
        bodyLimit: usersBodyLimit,
        schema: {
          tags: ["users"],
          summary: "Change a password",
          description:
            'Body: {"new_password", "current_password"}; 204. A user may change their own (with current_password); an admin resets anyone\'s but root\'s without it.',
          params: userParams,
          querystring: querySchema(),
        },
      },
      async (request, reply) => {
        const { api: a, store } = writable();
        const name = request.params.username;
        const body = bodyObject(request.body);
        onlyFields(body, ["new_password", "current_password"]);
        const decision = passwordRefusal(request.principal, targetOf(a, store, name), name);
        if ("status" in decision) throw refusalError(decision);
        const problem = passwordProblem(body.new_password, "new_password");
        if (problem !== undefined) throw badRequest(problem);
        if (decision.needsCurrent) {
          const current = body.current_password;
          const stored = store.db().users.get(name)?.password;
          const ok =
            typeof current === "string" &&
            passwordProblem(current, "current_password") === undefined &&
            stored !== undefined &&
            (await a.passwords.verify(stored, current));
          if (!ok) throw coded("FORBIDDEN", "forbidden", "current password is incorrect");
        }
        const passwordHash = await hashPassword(body.new_password as string);
        await store.change((current) => {
          const u = current.get(name);
          if (u === undefined) throw coded("NOT_FOUND", "user_not_found", `user "${name}" not found`);
          const next = new Map(current);
          next.set(name, { ...u, passwordHash, updated_at_ms: a.nowMs() });
          return { next, result: undefined };
        });
        request.log.info({ user: name, by: request.principal?.name }, "user password changed");
        return reply.code(204).send();
      },
    );
  };
}
