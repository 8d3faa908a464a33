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
//     attach (new epoch), deleting the parent object unlinks its children.
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
});
