// Walks the error paths of the HTTP API against real in-process brokers
// (WAL, logs, dispatcher, file metastore; fastify inject): each request below
// must answer its code's status with {"error": <message>, "code": <code>}.
// Every code of api-errors.ts is either produced here or named in
// `notReachedHere` with the test that produces it.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import Fastify, { type InjectOptions } from "fastify";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiErrorCode, apiErrors } from "../api-errors.ts";
import { loadConfig } from "../config.ts";
import { type RunningBroker, startBroker } from "../node.ts";
import { createFaultyIo, type FaultyIo } from "../testing/faulty-io.ts";
import { answerClientError, registerErrorHandling } from "./plugins/errors.ts";

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: { error?: unknown; code?: unknown };
}

type Inject = InjectOptions & { method: string; url: string };

async function ask(broker: RunningBroker, opts: Inject): Promise<Answer> {
  const res = await broker.app.inject(opts);
  return { status: res.statusCode, headers: res.headers, body: res.body === "" ? {} : JSON.parse(res.body) };
}

const json = (body: unknown) => ({
  payload: JSON.stringify(body),
  headers: { "content-type": "application/json" },
});

const produced = new Set<ApiErrorCode>();

function expectCode(a: Answer, code: ApiErrorCode): void {
  expect({ status: a.status, code: a.body.code }).toEqual({ status: apiErrors[code].status, code });
  expect(typeof a.body.error).toBe("string");
  expect(String(a.body.error).length).toBeGreaterThan(0);
  produced.add(code);
}

/** Codes whose path needs a cluster, a race or state startBroker does not build: where they are covered. */
const notReachedHere: Partial<Record<ApiErrorCode, string>> = {
  topic_deleted: "acks=all racing a topic delete: broker/test/acks-all-topic-deleted.test.ts",
  offset_expired:
    "needs retention to remove a segment; the log's refusal: log/partition-log.test.ts, mapped by errors.ts defaultApiCode",
  commit_timeout:
    "an owner that never commits; the decision: topic-deletion-watch.test.ts (acksAllAnswer 503)",
  acks_all_unavailable: "a node without commit waiters (startBroker always builds them)",
  not_enough_replicas:
    "acks=all on a replicated partition whose ISR is below its minimum: broker/test/replication-cluster.test.ts",
  replication_not_enabled:
    "a factor above 1 with --replication off (this walk runs with the default, on): http/routes/topics-replication.test.ts",
  registry_unavailable: "a node without a producer registry (startBroker always builds one)",
  not_implemented:
    "a decommission on a cluster without an operator (in-process test clusters only; core/decommission.test.ts)",
  producer_registry_stale:
    "a registry that cannot be read once the fence lease ran out (a shared store across brokers): broker/test/producer-fence.test.ts",
  users_unavailable:
    "the kubernetes metastore's API users Secret past its freshness bound: e2e/metastore/users-secret.e2e.test.ts",
  forward_in_doubt:
    "a draining cluster member's forward failing mid-call; the in-doubt outcome: http/produce-forward.test.ts",
};

let dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), "narad-codes-"));
  dirs.push(d);
  return d;
};

describe("every error answer carries a stable code (auth off)", () => {
  let broker: RunningBroker;
  let faults: FaultyIo | undefined;

  beforeAll(async () => {
    const dir = tempDir();
    const config = loadConfig(
      [
        "--data-dir",
        dir,
        "--addr",
        "127.0.0.1:0",
        "--max-body-bytes",
        "4096",
        "--body-min-rate",
        "100000",
        "--body-grace-ms",
        "100",
      ],
      {},
      "node-a",
    );
    broker = await startBroker(config, pino({ level: "silent" }), {
      listen: false,
      walIo: (io) => {
        faults = createFaultyIo(io);
        return faults;
      },
    });
    for (const name of ["t", "fenced", "seq"])
      expect((await ask(broker, { method: "POST", url: "/v1/topics", ...json({ name }) })).status).toBe(201);
    const schema = { type: "object", properties: { id: { type: "integer" } } };
    const created = await ask(broker, {
      method: "POST",
      url: "/v1/topics",
      ...json({ name: "typed", schema }),
    });
    expect(created.status).toBe(201);
  });

  afterAll(async () => {
    await broker?.shutdown();
  });

  const cases: Array<[ApiErrorCode, Inject]> = [
    ["bad_request", { method: "POST", url: "/v1/topics", payload: "{not json" }],
    ["invalid_query_parameter", { method: "GET", url: "/v1/topics?limit=many" }],
    ["invalid_query_parameter", { method: "GET", url: "/v1/topics/t/consume?wait=forever" }],
    ["invalid_query_parameter", { method: "POST", url: "/v1/topics/t/ack" }],
    ["unknown_query_parameter", { method: "POST", url: "/v1/topics/t/produce?kye=a", payload: "m" }],
    ["unknown_query_parameter", { method: "GET", url: "/v1/topics/t/consume?partiton=0" }],
    ["invalid_acks", { method: "POST", url: "/v1/topics/t/produce?acks=2", payload: "m" }],
    [
      "acks_all_required",
      {
        method: "POST",
        url: "/v1/topics/t/produce?key=k",
        payload: "m",
        headers: { "narad-producer-id": "p-1", "narad-producer-epoch": "0", "narad-producer-seq": "0" },
      },
    ],
    [
      "unknown_producer_id",
      {
        method: "POST",
        url: "/v1/topics/t/produce?key=k&acks=all",
        payload: "m",
        headers: { "narad-producer-id": "p-999999", "narad-producer-epoch": "0", "narad-producer-seq": "0" },
      },
    ],
    ["route_not_found", { method: "GET", url: "/v1/nothing-here" }],
    ["topic_not_found", { method: "GET", url: "/v1/topics/missing" }],
    ["topic_not_found", { method: "POST", url: "/v1/topics/missing/produce", payload: "m" }],
    ["not_found", { method: "DELETE", url: "/v1/topics/t/groups/nobody" }],
    ["method_not_allowed", { method: "PUT", url: "/v1/topics" }],
    ["conflict", { method: "DELETE", url: "/admin/v1/topics/t/data" }],
    ["topic_exists", { method: "POST", url: "/v1/topics", ...json({ name: "t" }) }],
    ["payload_too_large", { method: "POST", url: "/v1/topics/t/produce", payload: "x".repeat(5000) }],
    ["uri_too_long", { method: "GET", url: `/v1/topics/${"a".repeat(600)}` }],
    [
      "unsupported_media_type",
      {
        method: "POST",
        url: "/v1/topics/t/produce-batch",
        payload: "m",
        headers: { "content-type": "text/plain" },
      },
    ],
    ["schema_violation", { method: "POST", url: "/v1/topics/typed/produce", payload: '{"id": "x"}' }],
    [
      "schema_incompatible",
      { method: "PATCH", url: "/v1/topics/typed", ...json({ schema: { type: "object", properties: {} } }) },
    ],
    [
      "schema_invalid",
      { method: "POST", url: "/v1/topics", ...json({ name: "bad-schema", schema: { type: 12 } }) },
    ],
    [
      "invalid_replication_factor",
      { method: "POST", url: "/v1/topics", ...json({ name: "rf0", replication_factor: 0 }) },
    ],
    [
      "invalid_min_insync_replicas",
      { method: "POST", url: "/v1/topics", ...json({ name: "min2", min_insync_replicas: 2 }) },
    ],
    // One broker (replication on, the default): three copies cannot be placed.
    [
      "replication_factor_above_brokers",
      { method: "POST", url: "/v1/topics", ...json({ name: "rf3", replication_factor: 3 }) },
    ],
    [
      "replication_factor_immutable",
      { method: "PATCH", url: "/v1/topics/t", ...json({ replication_factor: 3 }) },
    ],
    ["conflict", { method: "POST", url: "/v1/cluster/members/node-a/decommission" }],
    ["not_found", { method: "POST", url: "/v1/cluster/members/node-z/decommission" }],
    // Auth off: no users to manage.
    ["users_api_unavailable", { method: "GET", url: "/v1/users" }],
  ];

  for (const [code, request] of cases) {
    it(`${code}: ${request.method} ${request.url.slice(0, 60)}`, async () => {
      expectCode(await ask(broker, request), code);
    });
  }

  it("keeps Narad v1's message next to the code", async () => {
    const a = await ask(broker, { method: "GET", url: "/v1/topics/missing" });
    expect(a.body).toEqual({ error: 'topic "missing" not found', code: "topic_not_found" });
    const q = await ask(broker, { method: "POST", url: "/v1/topics/t/produce?kye=a", payload: "m" });
    expect(q.body.error).toBe(
      'unknown query parameter "kye": did you mean "key"? (this route takes: key, partition, acks)',
    );
    const m = await ask(broker, { method: "PUT", url: "/v1/topics" });
    expect(m.headers.allow).toBe("GET, HEAD, POST");
  });

  it("invalid_producer_epoch and producer_fenced: epochs the registry did not issue, or older ones", async () => {
    const init = async () =>
      (await ask(broker, { method: "POST", url: "/v1/producers", ...json({ name: "svc" }) })).body as {
        producer_id?: string;
      };
    const first = await init();
    await init(); // epoch 1 fences epoch 0
    const produce = (epoch: string) =>
      ask(broker, {
        method: "POST",
        url: "/v1/topics/fenced/produce?key=k&acks=all",
        payload: "m",
        headers: {
          "narad-producer-id": String(first.producer_id),
          "narad-producer-epoch": epoch,
          "narad-producer-seq": "0",
        },
      });
    expectCode(await produce("0"), "producer_fenced");
    expectCode(await produce("7"), "invalid_producer_epoch");
  });

  it("out_of_order_sequence: a gap in a producer's sequence", async () => {
    const id = (
      (await ask(broker, { method: "POST", url: "/v1/producers" })).body as unknown as { producer_id: string }
    ).producer_id;
    const produce = (seq: string) =>
      ask(broker, {
        method: "POST",
        url: "/v1/topics/seq/produce?key=k&acks=all",
        payload: "m",
        headers: { "narad-producer-id": id, "narad-producer-epoch": "0", "narad-producer-seq": seq },
      });
    expect((await produce("0")).status).toBe(200);
    expectCode(await produce("5"), "out_of_order_sequence");
  });

  it("stale_receipt: settling a lease twice", async () => {
    expect((await ask(broker, { method: "POST", url: "/v1/topics/t/produce", payload: "m" })).status).toBe(
      202,
    );
    let handle = "";
    for (let i = 0; i < 100 && handle === ""; i++) {
      const c = await broker.app.inject({ method: "GET", url: "/v1/topics/t/consume?wait=50ms" });
      if (c.statusCode === 200) handle = (JSON.parse(c.body) as { receipt_handle: string }).receipt_handle;
    }
    const ack = {
      method: "POST",
      url: `/v1/topics/t/ack?receipt_handle=${encodeURIComponent(handle)}`,
    } as const;
    expect((await ask(broker, ack)).status).toBe(204);
    expectCode(await ask(broker, ack), "stale_receipt");
  });

  it("request_timeout: a body slower than --body-min-rate", async () => {
    // One byte of the announced 1000, then nothing: cut off after the grace.
    const trickle = new Readable({ read() {} });
    trickle.push("x");
    const a = await ask(broker, {
      method: "POST",
      url: "/v1/topics/t/produce",
      payload: trickle,
      headers: { "content-length": "1000" },
    });
    trickle.destroy();
    expectCode(a, "request_timeout");
  });

  it("disk_full, then unavailable (a poisoned WAL), draining and not_ready", async () => {
    faults!.inject({ op: "write", code: "ENOSPC", times: 1 });
    const full = await ask(broker, { method: "POST", url: "/v1/topics/t/produce", payload: "m" });
    expectCode(full, "disk_full");
    expect(full.headers["retry-after"]).toBe("5");
    faults!.inject({ op: "datasync", code: "EIO" });
    const failed = await ask(broker, { method: "POST", url: "/v1/topics/t/produce", payload: "m" });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expectCode(
      await ask(broker, { method: "POST", url: "/v1/topics/t/produce", payload: "m" }),
      "unavailable",
    );
    expect((await ask(broker, { method: "POST", url: "/admin/v1/drain" })).status).toBe(200);
    expectCode(await ask(broker, { method: "POST", url: "/v1/topics/t/produce", payload: "m" }), "draining");
    expectCode(await ask(broker, { method: "GET", url: "/readyz" }), "not_ready");
  });
});

describe("authentication, authorisation and rate limits carry codes too (auth on)", () => {
  let broker: RunningBroker;
  const basic = (user: string, pw: string) => `Basic ${Buffer.from(`${user}:${pw}`).toString("base64")}`;

  beforeAll(async () => {
    const dir = tempDir();
    const usersFile = join(dir, "users.json");
    writeFileSync(
      usersFile,
      JSON.stringify({
        users: [
          { name: "admin", password: "admin-pw" },
          { name: "alice", password: "alice-pw", grants: [{ action: "produce", topics: "mine" }] },
        ],
      }),
    );
    const config = loadConfig(
      [
        "--data-dir",
        join(dir, "data"),
        "--addr",
        "127.0.0.1:0",
        "--auth",
        "on",
        "--auth-file",
        usersFile,
        "--topic-rate-limit",
        "1",
      ],
      {},
      "node-a",
    );
    broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
    const created = await ask(broker, {
      method: "POST",
      url: "/v1/topics",
      payload: JSON.stringify({ name: "mine" }),
      headers: { "content-type": "application/json", authorization: basic("admin", "admin-pw") },
    });
    expect(created.status).toBe(201);
  });

  afterAll(async () => {
    await broker?.shutdown();
  });

  it("unauthenticated: no credentials, with WWW-Authenticate", async () => {
    const a = await ask(broker, { method: "GET", url: "/v1/topics" });
    expectCode(a, "unauthenticated");
    expect(a.headers["www-authenticate"]).toBeDefined();
  });

  it("forbidden: a grant for another topic", async () => {
    const a = await ask(broker, {
      method: "POST",
      url: "/v1/topics/other/produce",
      payload: "m",
      headers: { authorization: basic("alice", "alice-pw") },
    });
    expectCode(a, "forbidden");
  });

  it("the Users API and topic ownership: user_exists, user_read_only, user_not_found, privilege_escalation, not_topic_owner", async () => {
    const as = (auth: string, method: string, url: string, body?: object) =>
      ask(broker, {
        method,
        url,
        ...(body === undefined
          ? {}
          : {
              payload: JSON.stringify(body),
              headers: { "content-type": "application/json", authorization: auth },
            }),
        ...(body === undefined ? { headers: { authorization: auth } } : {}),
      });
    const root = basic("admin", "admin-pw");
    const ops = { username: "ops", password: "ops-pw", grants: [{ action: "admin" }] };
    expect((await as(root, "POST", "/v1/users", ops)).status).toBe(201);
    expectCode(await as(root, "POST", "/v1/users", ops), "user_exists");
    expectCode(await as(root, "DELETE", "/v1/users/alice"), "user_read_only");
    expectCode(await as(root, "GET", "/v1/users/ghost"), "user_not_found");
    const escalate = { username: "evil", password: "p", grants: [{ action: "admin" }] };
    expectCode(await as(basic("ops", "ops-pw"), "POST", "/v1/users", escalate), "privilege_escalation");
    expectCode(await as(basic("alice", "alice-pw"), "DELETE", "/v1/topics/mine"), "not_topic_owner");
  });

  it("rate_limited: past --topic-rate-limit, with Retry-After", async () => {
    const produce = () =>
      ask(broker, {
        method: "POST",
        url: "/v1/topics/mine/produce",
        payload: "m",
        headers: { authorization: basic("alice", "alice-pw") },
      });
    let last = await produce();
    for (let i = 0; i < 5 && last.status === 202; i++) last = await produce();
    expectCode(last, "rate_limited");
    expect(last.headers["retry-after"]).toBeDefined();
  });

  it("serves the OpenAPI document without credentials", async () => {
    const res = await broker.app.inject({ method: "GET", url: "/v1/openapi.json" });
    expect(res.statusCode).toBe(200);
    expect((JSON.parse(res.body) as { openapi: string }).openapi).toMatch(/^3\./);
  });
});

describe("--unknown-query-params ignore: Narad v1's leniency", () => {
  it("drops a parameter the route does not know and serves the request; malformed known ones still 400", async () => {
    const config = loadConfig(
      ["--data-dir", tempDir(), "--addr", "127.0.0.1:0", "--unknown-query-params", "ignore"],
      {},
      "node-a",
    );
    const broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
    try {
      expect((await ask(broker, { method: "POST", url: "/v1/topics", ...json({ name: "t" }) })).status).toBe(
        201,
      );
      const a = await ask(broker, { method: "POST", url: "/v1/topics/t/produce?garbage=true", payload: "m" });
      expect(a.status).toBe(202);
      expectCode(
        await ask(broker, { method: "GET", url: "/v1/topics?limit=many&x=1" }),
        "invalid_query_parameter",
      );
    } finally {
      await broker.shutdown();
    }
  });

  it("is refused when not typos, refuse or ignore", () => {
    expect(() => loadConfig(["--unknown-query-params", "warn"], {}, "h")).toThrow(
      /--unknown-query-params must be typos, refuse or ignore/,
    );
  });
});

describe("--unknown-query-params typos (the default) and refuse", () => {
  it("typos: a stray parameter is ignored as Narad v1 does; a near miss is refused naming what it meant", async () => {
    const config = loadConfig(["--data-dir", tempDir(), "--addr", "127.0.0.1:0"], {}, "node-a");
    expect(config.unknownQueryParams).toBe("typos");
    const broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
    try {
      expect((await ask(broker, { method: "POST", url: "/v1/topics", ...json({ name: "t" }) })).status).toBe(
        201,
      );
      const stray = await ask(broker, {
        method: "POST",
        url: "/v1/topics/t/produce?garbage=true",
        payload: "m",
      });
      expect(stray.status).toBe(202);
      const typo = await ask(broker, { method: "POST", url: "/v1/topics/t/produce?kye=a", payload: "m" });
      expectCode(typo, "unknown_query_parameter");
      expect(String(typo.body.error)).toContain('did you mean "key"');
      const status = await ask(broker, { method: "GET", url: "/admin/v1/status?verbose=1" });
      expect(status.status).toBe(200);
    } finally {
      await broker.shutdown();
    }
  });

  it("refuse: every parameter the route does not know is 400", async () => {
    const config = loadConfig(
      ["--data-dir", tempDir(), "--addr", "127.0.0.1:0", "--unknown-query-params", "refuse"],
      {},
      "node-a",
    );
    const broker = await startBroker(config, pino({ level: "silent" }), { listen: false });
    try {
      expect((await ask(broker, { method: "POST", url: "/v1/topics", ...json({ name: "t" }) })).status).toBe(
        201,
      );
      expectCode(
        await ask(broker, { method: "POST", url: "/v1/topics/t/produce?garbage=true", payload: "m" }),
        "unknown_query_parameter",
      );
      expectCode(
        await ask(broker, { method: "GET", url: "/admin/v1/status?verbose=1" }),
        "unknown_query_parameter",
      );
    } finally {
      await broker.shutdown();
    }
  });
});

describe("answers outside the routes", () => {
  it("header_too_large: a request head over Node's limit, answered by the clientError handler", async () => {
    const app = Fastify({ logger: false, clientErrorHandler: answerClientError });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1", () =>
        socket.write(`GET / HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`),
      );
      let text = "";
      socket.on("data", (c) => {
        text += c.toString();
      });
      socket.on("close", () => resolve(text));
      socket.on("error", reject);
    });
    await app.close();
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as Answer["body"];
    expectCode({ status: 431, headers: {}, body }, "header_too_large");
  });

  it("is a 500 with code internal and no detail", async () => {
    const app = Fastify({ logger: false });
    registerErrorHandling(app);
    app.get("/boom", async () => {
      throw new Error("secret detail");
    });
    const res = await app.inject({ method: "GET", url: "/boom" });
    expect(res.statusCode).toBe(500);
    expect(JSON.parse(res.body)).toEqual({ error: "internal error", code: "internal" });
    produced.add("internal");
    await app.close();
  });
});

describe("the walk", () => {
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    dirs = [];
  });

  it("produced every code of the table, or names where it is produced", () => {
    const missing = (Object.keys(apiErrors) as ApiErrorCode[]).filter(
      (c) => !produced.has(c) && notReachedHere[c] === undefined,
    );
    expect(missing).toEqual([]);
    // A code listed as not reached that the walk did reach should leave the list.
    expect(Object.keys(notReachedHere).filter((c) => produced.has(c as ApiErrorCode))).toEqual([]);
  });
});
