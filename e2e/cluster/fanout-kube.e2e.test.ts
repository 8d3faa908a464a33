// Fan-out children on the kubernetes metastore, end to end: two `narad
// serve` processes with --metastore kubernetes against a real API server
// (the fake operator in fake-operator.ts assigns partitions round-robin, so
// each node owns one partition of every 2-partition topic and runs the
// cursors of that one).
//
//   - attach through the API, produce to the parent on both nodes: the child
//     receives every acknowledged record; create-as-child (`parent` on create);
//   - a child declared with kubectl (NaradTopic spec.parent) is admitted and
//     receives records; a declaration the rules forbid is reported in the
//     narad.dev/link-problem annotation and ignored, the brokers unharmed;
//   - detach: the child receives nothing more;
//   - delete the parent: its children become standalone (spec.parent gone);
//   - kubectl: removing spec.parent detaches, setting it again is a fresh
//     attach (new epoch), deleting the parent object unlinks its children;
//   - attaches racing on both brokers: never a 109th child, never one child
//     linked twice, never two levels (each decided by a write conditional on
//     the object's resourceVersion; the parent keeps the children's register);
//   - a NaradTopic applied with kubectl declaring a schema, a named
//     subscription and a delay child: both brokers enforce all three, and a
//     schema version added through the API reaches the other broker and the child.
import { setTimeout as sleep } from "node:timers/promises";
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NaradTopic } from "../../packages/api/src/v1alpha1/types.ts";
import {
  type KubeBroker,
  type KubeBrokerSet,
  type KubePlatform,
  startKubeBrokers,
  startKubePlatform,
} from "../metastore/suite.ts";
import { waitFor } from "../platform/helpers.ts";
import { stderrLog } from "../platform/log.ts";
import { GROUP, VERSION } from "./fake-operator.ts";

const log = stderrLog("fanout-kube-test");
const CLUSTER = "demo";
const IDS = ["demo-0", "demo-1"] as const;

type Broker = KubeBroker;

let platform: KubePlatform | undefined;
let objects: CustomObjectsApi;
let namespace: string;
let set: KubeBrokerSet | undefined;
const brokers: Broker[] = [];

beforeAll(async () => {
  const started = Date.now();
  platform = await startKubePlatform({ prefix: "fanout-kube", log });
  objects = platform.kc.makeApiClient(CustomObjectsApi);
  set = await startKubeBrokers(platform, {
    prefix: "fanout",
    cluster: CLUSTER,
    ids: IDS,
    logLevel: "warn",
    args: ["--auth", "off", "--drain-timeout-ms", "3000"],
    log,
  });
  brokers.push(...set.brokers);
  namespace = set.namespace;
  log(`control plane, CRDs and 2 brokers ready in ${Date.now() - started} ms`);
});

afterAll(async () => {
  await set?.stop();
  await platform?.stop();
});

// ------------------------------------------------------------------ helpers

async function http(b: Broker, method: string, path: string, body?: object) {
  const res = await fetch(`${b.url}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) };
}

const [b0, b1] = [() => brokers[0] as Broker, () => brokers[1] as Broker];

/** Waits until every broker sees `name` with every partition owned. */
async function assigned(name: string): Promise<void> {
  for (const b of brokers) {
    await waitFor(
      async () => {
        const t = await http(b, "GET", `/v1/topics/${name}`);
        return (
          t.status === 200 &&
          (t.json().partition_stats as Array<{ owner_node: string }>).every((p) => p.owner_node !== "")
        );
      },
      { timeoutMs: 15_000, what: `${name} assigned at ${b.id}` },
    );
  }
}

async function createTopic(name: string, body: object = {}): Promise<void> {
  const r = await http(b0(), "POST", "/v1/topics", { name, partitions: 2, ...body });
  expect(r.status, r.text).toBe(201);
  await assigned(name);
}

/** Role as every broker answers it. */
async function roles(name: string): Promise<string[]> {
  return Promise.all(brokers.map(async (b) => (await http(b, "GET", `/v1/topics/${name}`)).json().role));
}

async function waitRole(name: string, role: string): Promise<void> {
  await waitFor(async () => (await roles(name)).every((r) => r === role), {
    timeoutMs: 15_000,
    what: `${name} is ${role} on every broker`,
  });
}

/** Produces ids [from, to) alternately through both brokers; returns the acknowledged ids. */
async function produce(topic: string, from: number, to: number): Promise<number[]> {
  const acked: number[] = [];
  for (let id = from; id < to; id++) {
    const b = id % 2 === 0 ? b0() : b1();
    const r = await http(b, "POST", `/v1/topics/${topic}/produce?key=k${id}`, { id });
    if (r.status === 202) acked.push(id);
    else log(`produce ${id} via ${b.id}: ${r.status} ${r.text}`);
  }
  return acked;
}

/** Every record of a topic (its payload ids), read through one broker (owner-routed). */
async function idsIn(topic: string): Promise<number[]> {
  const info = await http(b1(), "GET", `/v1/topics/${topic}`);
  expect(info.status, info.text).toBe(200);
  const out: number[] = [];
  for (let p = 0; p < info.json().partitions; p++) {
    let offset = 0;
    for (;;) {
      const r = await http(b1(), "GET", `/v1/topics/${topic}/records?partition=${p}&offset=${offset}`);
      if (r.status !== 200) throw new Error(`read ${topic}/${p}: ${r.status} ${r.text}`);
      const page = r.json() as { records: Array<{ payload: { id: number } }>; next_offset: number };
      for (const m of page.records) out.push(m.payload.id);
      if (page.records.length === 0) break;
      offset = page.next_offset;
    }
  }
  return out;
}

async function waitReceived(topic: string, ids: readonly number[]): Promise<void> {
  await waitFor(
    async () => {
      const have = new Set(await idsIn(topic));
      return ids.every((id) => have.has(id));
    },
    { timeoutMs: 30_000, what: `${topic} received ${ids.length} records` },
  );
}

const topicObject = async (name: string): Promise<NaradTopic> =>
  (await objects.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: "naradtopics",
    name,
  })) as NaradTopic;

async function applyTopic(name: string, spec: Partial<NaradTopic["spec"]>): Promise<void> {
  await objects.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: "naradtopics",
    body: {
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradTopic",
      metadata: { name },
      spec: { cluster: CLUSTER, partitions: 2, ...spec },
    },
  });
  await assigned(name);
}

// ------------------------------------------------------------------ the suite

describe("fan-out on the kubernetes metastore", () => {
  const acked: number[] = [];

  it("attach through the API: every record acknowledged on the parent reaches the child", async () => {
    await createTopic("orders", { retention_ms: 0 });
    await createTopic("audit");
    const r = await http(b1(), "POST", "/v1/topics/orders/children", { child: "audit" });
    expect(r.status, r.text).toBe(200);
    expect(r.json()).toMatchObject({ role: "parent", children: ["audit"] });
    await waitRole("audit", "child");
    // Both parent partitions' cursors (one per node) anchored before producing: the attach starts at the tail.
    await sleep(1_500);
    acked.push(...(await produce("orders", 0, 40)));
    expect(acked).toHaveLength(40);
    await waitReceived("audit", acked);
    const received = await idsIn("audit");
    log(`audit: ${acked.length} acknowledged on the parent, ${received.length} in the child`);
    const listed = await http(b0(), "GET", "/v1/topics/orders/children");
    expect(listed.json().children).toEqual([expect.objectContaining({ name: "audit", delay_ms: 0 })]);
    // The link lives on the NaradTopic: spec for users, the attachment for the broker.
    const obj = await topicObject("audit");
    expect(obj.spec.parent).toBe("orders");
    expect(JSON.parse(obj.metadata.annotations?.["narad.dev/attachment"] ?? "{}")).toMatchObject({
      parent: "orders",
      parentUid: (await topicObject("orders")).metadata.uid,
    });
  });

  it("create-as-child (`parent` on create) inherits the partition count and receives records", async () => {
    const r = await http(b0(), "POST", "/v1/topics", { name: "mirror", parent: "orders" });
    expect(r.status, r.text).toBe(201);
    expect(r.json()).toMatchObject({ role: "child", parent: "orders", partitions: 2 });
    await assigned("mirror");
    await sleep(1_500);
    const more = await produce("orders", 40, 60);
    acked.push(...more);
    await waitReceived("mirror", more);
    await waitReceived("audit", acked);
  });

  it("a child declared with kubectl is admitted; a forbidden declaration is reported and ignored", async () => {
    await applyTopic("declared", { parent: "orders" });
    await waitRole("declared", "child");
    const obj = await topicObject("declared");
    expect(obj.metadata.annotations?.["narad.dev/attachment"]).toBeDefined();
    expect(obj.metadata.annotations?.["narad.dev/link-problem"]).toBeUndefined();
    // Two levels deep: audit is a child already.
    await applyTopic("chain", { parent: "audit" });
    await waitFor(
      async () =>
        /one level deep/.test(
          (await topicObject("chain")).metadata.annotations?.["narad.dev/link-problem"] ?? "",
        ),
      { timeoutMs: 15_000, what: "the refusal reported on chain" },
    );
    expect(await roles("chain")).toEqual(["standalone", "standalone"]);
    expect(await roles("audit")).toEqual(["child", "child"]);
    await sleep(1_500);
    const more = await produce("orders", 60, 80);
    expect(more).toHaveLength(20);
    acked.push(...more);
    await waitReceived("declared", more);
    await waitReceived("audit", acked);
    expect(await idsIn("chain")).toEqual([]);
  });

  it("detach: the child keeps what it has and receives nothing more", async () => {
    const r = await http(b0(), "DELETE", "/v1/topics/orders/children/audit");
    expect(r.status, r.text).toBe(204);
    await waitRole("audit", "standalone");
    expect((await topicObject("audit")).spec.parent).toBeUndefined();
    const before = (await idsIn("audit")).length;
    const more = await produce("orders", 80, 100);
    // The still-attached children got them: the detached one had every chance to.
    await waitReceived("mirror", more);
    await waitReceived("declared", more);
    await sleep(1_000);
    const after = await idsIn("audit");
    expect(after.length).toBe(before);
    expect(after.some((id) => id >= 80)).toBe(false);
  });

  it("deleting the parent unlinks its children first: standalone, spec.parent gone", async () => {
    const r = await http(b1(), "DELETE", "/v1/topics/orders");
    expect(r.status, r.text).toBe(204);
    for (const name of ["mirror", "declared"]) {
      await waitRole(name, "standalone");
      const obj = await topicObject(name);
      expect(obj.spec.parent).toBeUndefined();
      expect(obj.metadata.annotations?.["narad.dev/attachment"]).toBeUndefined();
    }
    // The children are ordinary topics now, and the brokers still take writes.
    expect(await produce("mirror", 1000, 1004)).toHaveLength(4);
  });

  it("kubectl: removing spec.parent detaches, re-declaring is a fresh attach, deleting the parent object unlinks", async () => {
    const patch = (name: string, body: object) =>
      objects.patchNamespacedCustomObject(
        { group: GROUP, version: VERSION, namespace, plural: "naradtopics", name, body },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    const epochOf = async (name: string): Promise<string | undefined> =>
      (await http(b0(), "GET", `/v1/topics/${name}`)).json().attach_epoch;
    await createTopic("events", { retention_ms: 0 });
    await applyTopic("tap", { parent: "events" });
    await waitRole("tap", "child");
    const first = await epochOf("tap");
    expect(first).toMatch(/^[0-9a-f]{16}$/);
    await patch("tap", { spec: { parent: null } });
    await waitRole("tap", "standalone");
    await waitFor(
      async () => (await topicObject("tap")).metadata.annotations?.["narad.dev/attachment"] === undefined,
      { timeoutMs: 15_000, what: "the ended admission dropped" },
    );
    await patch("tap", { spec: { parent: "events" } });
    await waitRole("tap", "child");
    const second = await epochOf("tap");
    expect(second).toMatch(/^[0-9a-f]{16}$/);
    expect(second).not.toBe(first);
    await sleep(1_500);
    const ids = await produce("events", 0, 10);
    await waitReceived("tap", ids);
    await objects.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: "naradtopics",
      name: "events",
    });
    await waitRole("tap", "standalone");
    await waitFor(async () => (await topicObject("tap")).spec.parent === undefined, {
      timeoutMs: 15_000,
      what: "spec.parent cleared after the parent object was deleted",
    });
  });

  it("attaches racing on both brokers: at most 108 children, one parent per child, one level deep", async () => {
    const plural = "naradtopics";
    /** A standalone 1-partition NaradTopic, applied directly (many at once, no waiting for owners). */
    const bare = (name: string) =>
      objects.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural,
        body: {
          apiVersion: "narad.dev/v1alpha1",
          kind: "NaradTopic",
          metadata: { name },
          spec: { cluster: CLUSTER, partitions: 1 },
        },
      });
    const seen = async (names: string[]) =>
      waitFor(
        async () => {
          for (const b of brokers) {
            const list = (await http(b, "GET", "/v1/topics?limit=1000")).json() as {
              topics: Array<{ name: string }>;
            };
            const have = new Set(list.topics.map((t) => t.name));
            if (!names.every((n) => have.has(n))) return false;
          }
          return true;
        },
        { timeoutMs: 30_000, what: `${names.length} topics on every broker` },
      );
    const attach = (b: Broker, parent: string, child: string) =>
      http(b, "POST", `/v1/topics/${parent}/children`, { child });

    // 112 candidates for one parent, half through each broker, all at once.
    const kids = Array.from({ length: 112 }, (_, i) => `race-k${String(i).padStart(3, "0")}`);
    for (let i = 0; i < kids.length; i += 28) await Promise.all(kids.slice(i, i + 28).map(bare));
    await bare("race-p");
    await seen([...kids, "race-p"]);
    const t0 = Date.now();
    const answers = await Promise.all(kids.map((k, i) => attach(i % 2 === 0 ? b0() : b1(), "race-p", k)));
    const ok = answers.filter((a) => a.status === 200).length;
    const full = answers.filter((a) => a.status === 409 && /already has 108 children/.test(a.text)).length;
    const other = answers.filter(
      (a) => a.status !== 200 && !(a.status === 409 && /108 children/.test(a.text)),
    );
    log(`race: 112 attaches over 2 brokers in ${Date.now() - t0} ms: ${ok} 200, ${full} 409 (108 children)`);
    expect(other.map((a) => `${a.status} ${a.text}`)).toEqual([]);
    expect(ok).toBe(108);
    expect(full).toBe(4);
    for (const b of brokers) {
      await waitFor(
        async () =>
          ((await http(b, "GET", "/v1/topics/race-p/children")).json().children as unknown[]).length === 108,
        { timeoutMs: 15_000, what: `108 children of race-p at ${b.id}` },
      );
    }
    const register = JSON.parse(
      (await topicObject("race-p")).metadata.annotations?.["narad.dev/children"] ?? "{}",
    );
    expect(Object.keys(register)).toHaveLength(108);
    // A detach frees one slot, for exactly one of two racing attaches.
    const left = kids.filter((_, i) => answers[i]?.status !== 200);
    expect((await http(b0(), "DELETE", `/v1/topics/race-p/children/${kids[0]}`)).status).toBe(204);
    // Let both brokers see the slot free, so both race for it.
    for (const b of brokers)
      await waitFor(
        async () =>
          ((await http(b, "GET", "/v1/topics/race-p/children")).json().children as unknown[]).length === 107,
        { timeoutMs: 15_000, what: `107 children of race-p at ${b.id}` },
      );
    const slot = await Promise.all([
      attach(b0(), "race-p", left[0] as string),
      attach(b1(), "race-p", left[1] as string),
    ]);
    expect(slot.map((a) => a.status).sort()).toEqual([200, 409]);

    // One child, two parents, one attach through each broker: one wins.
    // One topic becoming a parent (b0) while it becomes a child (b1): one wins.
    for (let round = 0; round < 4; round++) {
      const [a, b, x, p, c, q] = ["a", "b", "x", "p", "c", "q"].map((n) => `race${round}-${n}`) as [
        string,
        string,
        string,
        string,
        string,
        string,
      ];
      await Promise.all([a, b, x, p, c, q].map(bare));
      await seen([a, b, x, p, c, q]);
      const twice = await Promise.all([attach(b0(), a, x), attach(b1(), b, x)]);
      expect(twice.map((r) => r.status).sort(), twice.map((r) => r.text).join(" | ")).toEqual([200, 409]);
      const winner = twice[0]?.status === 200 ? a : b;
      await waitFor(
        async () =>
          (
            await Promise.all(
              brokers.map(async (br) => (await http(br, "GET", `/v1/topics/${x}`)).json().parent),
            )
          ).every((parent) => parent === winner),
        { timeoutMs: 15_000, what: `${x} a child of ${winner} on every broker` },
      );
      const deep = await Promise.all([attach(b0(), p, c), attach(b1(), q, p)]);
      expect(deep.map((r) => r.status).sort(), deep.map((r) => r.text).join(" | ")).toEqual([200, 409]);
      await sleep(500);
      for (const br of brokers) {
        const roleOf = async (n: string) => (await http(br, "GET", `/v1/topics/${n}`)).json().role as string;
        const rp = await roleOf(p);
        // p is a parent (of c) or a child (of q), never both.
        expect(["parent", "child"]).toContain(rp);
        if (rp === "parent") expect(await roleOf(q)).toBe("standalone");
        else expect(await roleOf(c)).toBe("standalone");
      }
    }
  });

  it("a NaradTopic applied with kubectl: its schema, named subscription and delay child hold on both brokers", async () => {
    const schema = {
      type: "object",
      properties: { id: { type: "integer" } },
      required: ["id"],
    };
    await applyTopic("decl-p", {
      schema: { version: 1, definition: JSON.stringify(schema) },
      subscriptions: [{ name: "billing", visibilityTimeoutMs: 1_000 }],
    });
    await applyTopic("decl-late", { parent: "decl-p", delayMs: 3_000 });
    await waitRole("decl-late", "child");
    for (const b of brokers) {
      const late = (await http(b, "GET", "/v1/topics/decl-late")).json();
      expect(late).toMatchObject({ parent: "decl-p", fanout_delay_ms: 3_000, schema_version: 1 });
      // Schema before the WAL, on whichever broker takes the produce.
      const bad = await http(b, "POST", "/v1/topics/decl-p/produce?key=x", { id: "x" });
      expect(bad.status, bad.text).toBe(400);
      expect(bad.json().code).toBe("schema_violation");
      // A delay child's records come only from its parent.
      expect((await http(b, "POST", "/v1/topics/decl-late/produce", { id: 1 })).status).toBe(409);
      const groups = (await http(b, "GET", "/v1/topics/decl-p/groups")).json() as {
        groups: Array<{ name: string; declared: boolean; visibility_timeout_ms: number }>;
      };
      expect(groups.groups).toContainEqual(
        expect.objectContaining({ name: "billing", declared: true, visibility_timeout_ms: 1_000 }),
      );
    }
    // The anchors of the child's cursors (one per node) before producing.
    await sleep(1_500);
    const t0 = Date.now();
    const ids = await produce("decl-p", 0, 6);
    expect(ids).toHaveLength(6);
    // Not before parent commit + 3 s.
    await sleep(1_000);
    expect(await idsIn("decl-late")).toEqual([]);
    await waitReceived("decl-late", ids);
    const waited = Date.now() - t0;
    log(`delay child: 6 records arrived ${waited} ms after the first produce (delay 3000 ms)`);
    expect(waited).toBeGreaterThanOrEqual(3_000);

    // The subscription's 1 s visibility, not the topic's 30 s: a lease the
    // group lets lapse is leased again a second later.
    const lease = async () => {
      for (const b of brokers) {
        const r = await http(b, "GET", "/v1/topics/decl-p/consume?group=billing&wait=0");
        if (r.status === 200) return r.json() as { partition: number; offset: number };
      }
      return undefined;
    };
    const first = await lease();
    expect(first).toBeDefined();
    await sleep(1_500);
    const seenAgain: Array<{ partition: number; offset: number }> = [];
    for (let i = 0; i < 12; i++) {
      const m = await lease();
      if (m === undefined) break;
      seenAgain.push(m);
    }
    expect(seenAgain).toContainEqual(
      expect.objectContaining({ partition: first?.partition, offset: first?.offset }),
    );

    // A schema version added through one broker: enforced by the other, adopted by the child.
    const v2 = { ...schema, properties: { ...schema.properties, note: { type: "string" } } };
    const patched = await http(b0(), "PATCH", "/v1/topics/decl-p", { schema: v2 });
    expect(patched.status, patched.text).toBe(200);
    await waitFor(
      async () =>
        (await http(b1(), "POST", "/v1/topics/decl-p/produce?key=n", { id: 1, note: 5 })).status === 400,
      { timeoutMs: 15_000, what: "schema version 2 enforced on the other broker" },
    );
    await waitFor(
      async () =>
        (
          await Promise.all(
            brokers.map(async (b) => (await http(b, "GET", "/v1/topics/decl-late")).json().schema_version),
          )
        ).every((v) => v === 2),
      { timeoutMs: 15_000, what: "the delay child adopted schema version 2" },
    );
    expect((await topicObject("decl-late")).spec.schema?.version).toBe(2);
  });
});
