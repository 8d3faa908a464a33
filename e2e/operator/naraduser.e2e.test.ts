// NaradUser against a real API server with the real operator and brokers
// (the local platform), the sync rule of docs/users.md:
//   1. a NaradUser gets a generated Secret (username, password, owned by
//      it); that password logs in to a broker; grants are enforced (a topic
//      outside them is 403); a grants edit of the CR takes effect;
//   2. a user-provided passwordSecret: its password logs in, another is
//      401; a changed value is the new password after the next reconcile;
//   3. a user created through the API becomes a NaradUser (managed-by:
//      api); a CR edit of its grants reaches the API, an API change reaches
//      the CR, a DELETE through the API deletes the mirror;
//   4. a NaradUser naming a user the API created is a conflict (Ready
//      False, UserExists) and the API user keeps working;
//   5. deleting a CR-managed NaradUser deletes its user: login refused.
//   6. NaradUsers applied while users are created through the API (both
//      writing the users Secret at once): every user survives and logs in.
// Timings go to console.log ("naraduser-e2e:").
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stderrLog } from "../platform/log.ts";
import { basicAuth } from "./credentials.ts";
import { getJson, waitFor } from "./harness.ts";
import { BROKER_PORT } from "./load.ts";
import { type Condition, type SuiteCluster, startSuiteCluster } from "./suite.ts";

const log = stderrLog("naraduser-e2e");
const NS = "users";
const NAME = "uc";

interface UserView {
  metadata: { annotations?: Record<string, string>; finalizers?: string[] };
  spec: { grants?: Array<{ action: string; topics: string; groups?: string }> };
  status?: { conditions?: Condition[]; secret?: string; username?: string };
}

let s: SuiteCluster;

async function brokerUrl(): Promise<string> {
  const ip = (await s.pods())[0]?.ip;
  if (ip === undefined) throw new Error("no broker pod IP");
  return `http://${ip}:${BROKER_PORT}`;
}

async function call(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string | object,
): Promise<{ status: number; text: string }> {
  const h: Record<string, string> = { ...headers };
  if (typeof body === "object") h["content-type"] = "application/json";
  const res = await fetch(`${await brokerUrl()}${path}`, {
    method,
    headers: h,
    ...(body === undefined ? {} : { body: typeof body === "object" ? JSON.stringify(body) : body }),
    signal: AbortSignal.timeout(20_000),
  });
  return { status: res.status, text: await res.text() };
}

const produce = (topic: string, auth: Record<string, string>) =>
  call("POST", `/v1/topics/${topic}/produce?key=k`, auth, "x");

/** Waits until `fn` answers `status`; returns how long it took (ms). */
async function until(status: number, what: string, fn: () => Promise<{ status: number }>): Promise<number> {
  const t0 = performance.now();
  await waitFor(async () => (await fn()).status === status, { timeoutMs: 60_000, intervalMs: 250, what });
  return performance.now() - t0;
}

const user = (name: string) => getJson<UserView>(s.platform.kubectl, ["-n", NS, "naraduser", name]);
const ready = (u: UserView | undefined) => u?.status?.conditions?.find((c) => c.type === "Ready");

async function secretValue(name: string, key: string): Promise<string | undefined> {
  const sec = await getJson<{ data?: Record<string, string> }>(s.platform.kubectl, [
    "-n",
    NS,
    "secret",
    name,
  ]);
  const v = sec?.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, "base64").toString("utf8");
}

function naradUser(name: string, spec: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradUser",
    metadata: { name, namespace: NS },
    spec: { cluster: NAME, ...spec },
  });
}

beforeAll(async () => {
  s = await startSuiteCluster({
    suite: "naraduser",
    log,
    namespace: NS,
    name: NAME,
    spec: { replicas: 1, security: { auth: { enabled: true } } },
    topic: { name: "orders", partitions: 1 },
  });
  const created = await call("POST", "/v1/topics", s.headers(), { name: "private", partitions: 1 });
  if (created.status !== 201) throw new Error(`creating topic private: ${created.status} ${created.text}`);
}, 600_000);

afterAll(async () => {
  await s?.stop();
});

describe("NaradUser", () => {
  it("generated Secret → login → grants enforced → a grants edit takes effect", async () => {
    const t0 = performance.now();
    await s.platform.applyYaml(naradUser("app", { grants: [{ action: "produce", topics: "orders" }] }));
    const password = await waitFor(() => secretValue("app", "password"), {
      timeoutMs: 60_000,
      what: "the generated Secret app",
    });
    expect(await secretValue("app", "username")).toBe("app");
    expect(password.length).toBeGreaterThanOrEqual(32);
    const u = await waitFor(
      async () => {
        const v = await user("app");
        return ready(v)?.status === "True" ? v : undefined;
      },
      { timeoutMs: 60_000, what: "NaradUser app Ready" },
    );
    expect(u.status?.secret).toBe("app");
    expect(u.metadata.finalizers).toContain("narad.dev/user");
    const auth = basicAuth("app", password);
    await until(202, "app may produce to orders", () => produce("orders", auth));
    console.log(`naraduser-e2e: apply → first accepted login ${Math.round(performance.now() - t0)} ms`);
    expect((await produce("private", auth)).status).toBe(403);
    expect((await produce("orders", basicAuth("app", `${password}x`))).status).toBe(401);

    await s.platform.kubectl([
      "-n",
      NS,
      "patch",
      "naraduser",
      "app",
      "--type=merge",
      "-p",
      JSON.stringify({
        spec: {
          grants: [
            { action: "produce", topics: "orders" },
            { action: "produce", topics: "private" },
          ],
        },
      }),
    ]);
    const ms = await until(202, "app may produce to private after the edit", () => produce("private", auth));
    console.log(`naraduser-e2e: grants edit → enforced in ${Math.round(ms)} ms`);
  });

  it("a user-provided passwordSecret, and a change of its value", async () => {
    await s.platform.applyYaml(
      JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "own-pw", namespace: NS },
        stringData: { pw: "first-password-of-own" },
      }),
    );
    await s.platform.applyYaml(
      naradUser("own", {
        passwordSecret: { name: "own-pw", key: "pw" },
        grants: [{ action: "produce", topics: "orders" }],
      }),
    );
    await until(202, "own logs in with its Secret's password", () =>
      produce("orders", basicAuth("own", "first-password-of-own")),
    );
    expect((await produce("orders", basicAuth("own", "another"))).status).toBe(401);
    expect((await user("own"))?.status?.secret).toBe("own-pw");
    await s.platform.kubectl([
      "-n",
      NS,
      "patch",
      "secret",
      "own-pw",
      "--type=merge",
      "-p",
      JSON.stringify({ stringData: { pw: "second-password-of-own" } }),
    ]);
    // The operator does not watch Secrets: a touch of the CR (or the resync) picks the change up.
    await s.platform.kubectl(["-n", NS, "annotate", "naraduser", "own", "--overwrite", "touched=1"]);
    await until(202, "the new password logs in", () =>
      produce("orders", basicAuth("own", "second-password-of-own")),
    );
    await until(401, "the old password is refused", () =>
      produce("orders", basicAuth("own", "first-password-of-own")),
    );
  });

  it("a user created through the API is mirrored, and grants sync both ways", async () => {
    const created = await call("POST", "/v1/users", s.headers(), {
      username: "viaapi",
      password: "password-of-viaapi",
      grants: [{ action: "produce", patterns: ["orders"] }],
    });
    expect(created.status, created.text).toBe(201);
    const auth = basicAuth("viaapi", "password-of-viaapi");
    const t0 = performance.now();
    const mirror = await waitFor(() => user("viaapi"), {
      timeoutMs: 60_000,
      what: "the mirror NaradUser viaapi",
    });
    console.log(`naraduser-e2e: API create → mirror NaradUser in ${Math.round(performance.now() - t0)} ms`);
    expect(mirror.metadata.annotations?.["narad.dev/managed-by"]).toBe("api");
    expect(mirror.spec.grants).toEqual([{ action: "produce", topics: "orders" }]);
    expect(mirror.metadata.finalizers ?? []).not.toContain("narad.dev/user");
    await waitFor(async () => ready(await user("viaapi"))?.reason === "MirroredFromApi", {
      timeoutMs: 60_000,
      what: "the mirror's status",
    });

    // CR → API.
    await s.platform.kubectl([
      "-n",
      NS,
      "patch",
      "naraduser",
      "viaapi",
      "--type=merge",
      "-p",
      JSON.stringify({
        spec: {
          grants: [
            { action: "produce", topics: "orders" },
            { action: "produce", topics: "private" },
          ],
        },
      }),
    ]);
    await until(202, "viaapi may produce to private after the CR edit", () => produce("private", auth));
    const viaGet = await call("GET", "/v1/users/viaapi", s.headers());
    expect(viaGet.text).toContain("private");

    // API → CR.
    const put = await call("PUT", "/v1/users/viaapi/grants", s.headers(), {
      grants: [{ action: "consume", patterns: ["orders"] }],
    });
    expect(put.status, put.text).toBe(200);
    await waitFor(
      async () =>
        JSON.stringify((await user("viaapi"))?.spec.grants) ===
        JSON.stringify([{ action: "consume", topics: "orders" }]),
      { timeoutMs: 60_000, what: "the API's grants in the mirror" },
    );
    await until(403, "viaapi may no longer produce", () => produce("orders", auth));

    // DELETE through the API → the mirror goes.
    expect((await call("DELETE", "/v1/users/viaapi", s.headers())).status).toBe(204);
    await waitFor(async () => (await user("viaapi")) === undefined, {
      timeoutMs: 60_000,
      what: "the mirror deleted",
    });
  });

  it("a NaradUser naming a user the API created is a conflict; the API user is untouched", async () => {
    const created = await call("POST", "/v1/users", s.headers(), {
      username: "Taken",
      password: "password-of-taken",
      grants: [{ action: "produce", patterns: ["orders"] }],
    });
    expect(created.status, created.text).toBe(201);
    await s.platform.applyYaml(
      naradUser("taken-claim", { username: "Taken", grants: [{ action: "admin", topics: "*" }] }),
    );
    const u = await waitFor(
      async () => {
        const v = await user("taken-claim");
        return ready(v)?.reason === "UserExists" ? v : undefined;
      },
      { timeoutMs: 60_000, what: "the conflict reported" },
    );
    expect(ready(u)?.status).toBe("False");
    const auth = basicAuth("Taken", "password-of-taken");
    expect((await produce("orders", auth)).status).toBe(202);
    expect((await produce("private", auth)).status).toBe(403);
    // Deleting the losing NaradUser leaves the API user alone.
    await s.platform.kubectl([
      "-n",
      NS,
      "delete",
      "naraduser",
      "taken-claim",
      "--wait=true",
      "--timeout=60s",
    ]);
    expect((await produce("orders", auth)).status).toBe(202);
  });

  it("racing writers: NaradUsers applied while users are created through the API all survive, every password intact", async () => {
    const crNames = Array.from({ length: 4 }, (_, i) => `race-cr-${i}`);
    const apiNames = Array.from({ length: 8 }, (_, i) => `race-api-${i}`);
    const t0 = performance.now();
    const [, created] = await Promise.all([
      Promise.all(
        crNames.map((n) =>
          s.platform.applyYaml(naradUser(n, { grants: [{ action: "produce", topics: "orders" }] })),
        ),
      ),
      Promise.all(
        apiNames.map((n) =>
          call("POST", "/v1/users", s.headers(), {
            username: n,
            password: `password-of-${n}`,
            grants: [{ action: "produce", patterns: ["orders"] }],
          }),
        ),
      ),
    ]);
    expect(created.map((r) => r.status)).toEqual(apiNames.map(() => 201));
    for (const n of crNames) {
      const password = await waitFor(() => secretValue(n, "password"), {
        timeoutMs: 60_000,
        what: `Secret ${n}`,
      });
      await until(202, `${n} logs in`, () => produce("orders", basicAuth(n, password)));
    }
    for (const n of apiNames)
      expect((await produce("orders", basicAuth(n, `password-of-${n}`))).status).toBe(202);
    // Every API user mirrored, none of the NaradUsers' users duplicated as a mirror.
    await waitFor(
      async () => {
        const list = await getJson<{ items: UserView[] }>(s.platform.kubectl, ["-n", NS, "naradusers"]);
        const mirrors = (list?.items ?? []).filter(
          (u) => u.metadata.annotations?.["narad.dev/managed-by"] === "api",
        );
        return mirrors.length >= apiNames.length;
      },
      { timeoutMs: 60_000, what: "every API user mirrored" },
    );
    for (const n of crNames)
      expect((await user(n))?.metadata.annotations?.["narad.dev/managed-by"]).toBeUndefined();
    console.log(
      `naraduser-e2e: ${crNames.length} NaradUsers + ${apiNames.length} API creates racing → all usable in ${Math.round(performance.now() - t0)} ms`,
    );
  });

  it("deleting a CR-managed NaradUser deletes its user: login refused", async () => {
    const password = await secretValue("app", "password");
    if (password === undefined) throw new Error("no app password");
    const auth = basicAuth("app", password);
    expect((await produce("orders", auth)).status).toBe(202);
    await s.platform.kubectl(["-n", NS, "delete", "naraduser", "app", "--wait=true", "--timeout=60s"]);
    const ms = await until(401, "app refused after the delete", () => produce("orders", auth));
    console.log(`naraduser-e2e: CR delete → login refused in ${Math.round(ms)} ms`);
    expect((await call("GET", "/v1/users/app", s.headers())).status).toBe(404);
  });
});
