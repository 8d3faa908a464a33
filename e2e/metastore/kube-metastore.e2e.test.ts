// The kubernetes Metastore against a real control plane (etcd +
// kube-apiserver): the shared contract, then what only this backend has —
// membership from NaradCluster.status, owners from NaradTopic.status, the
// stale-replica defense, and behaviour while the API server is unreachable.
//
// A tiny fake operator (a poll loop in this file) writes status.assignments
// for new NaradTopics of cluster "demo". The broker's metastore reaches the
// API server through a TCP proxy the tests can freeze (connections stay open,
// nothing flows: a stale watch) or cut (every connection reset: API down).
import { setTimeout as sleep } from "node:timers/promises";
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NaradError } from "../../broker/src/errors.ts";
import { describeMetastoreContract, topicFixture } from "../../broker/src/meta/contract.ts";
import {
  type KubeMetastore,
  type KubeMetastoreTiming,
  openKubeMetastore,
} from "../../broker/src/meta/kube-metastore.ts";
import type { IsrMember } from "../../packages/api/src/v1alpha1/replication.ts";
import type { MemberStatus, NaradTopic } from "../../packages/api/src/v1alpha1/types.ts";
import { type ApiProxy, GROUP, startProxy, VERSION, writeMembers } from "../cluster/fake-operator.ts";
import { waitFor } from "../platform/helpers.ts";
import { stderrLog } from "../platform/log.ts";
import { type KubePlatform, startFakeCluster, startKubePlatform } from "./suite.ts";

const log = stderrLog("kube-metastore-test");
const CLUSTER = "demo";
const MEMBER_IDS = ["demo-0", "demo-1", "demo-2"];
const FAKE_OPERATOR_POLL_MS = 100;
const TEST_TIMING: Partial<KubeMetastoreTiming> = {
  requestTimeoutMs: 2_000,
  restartBaseMs: 100,
  restartMaxMs: 1_000,
  initialSyncTimeoutMs: 20_000,
};
/** The contract keeps the default request deadline: a fresh API server can be slow to answer the first writes. */
const { requestTimeoutMs: _short, ...CONTRACT_TIMING } = TEST_TIMING;
/** Writes must fail well under a client's patience when the API server is gone. */
const FAST_FAIL_MS = 1_000;

const quietLogger = {
  debug: () => {},
  info: () => {},
  warn: (obj: object, msg: string) => log(`warn ${msg} ${JSON.stringify(obj)}`),
  error: (obj: object, msg: string) => log(`error ${msg} ${JSON.stringify(obj)}`),
};

// ------------------------------------------------------------------ platform

let platform: KubePlatform | undefined;
let starting: Promise<KubePlatform> | undefined;

/** One control plane for the file, shared by the contract and the kube-specific suite. */
function controlPlane(): Promise<KubePlatform> {
  starting ??= startKubePlatform({ prefix: "kube-meta", log }).then((p) => {
    platform = p;
    return p;
  });
  return starting;
}

afterAll(async () => {
  await platform?.stop();
});

/** The same identity, reaching the API server at another address (the proxy). */
function configVia(c: KubePlatform, port: number): KubeConfig {
  const kc = c.adminConfig();
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error("kubeconfig has no current cluster");
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: [{ ...cluster, server: `https://127.0.0.1:${port}` }],
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return out;
}

function member(id: string, state: MemberStatus["state"] = "Active", ordinal = 0): MemberStatus {
  return {
    id,
    pod: id,
    ordinal,
    address: `10.0.0.${ordinal + 1}:7942`,
    state,
    since: new Date().toISOString(),
  };
}

// ------------------------------------------------------------------ helpers

async function timed<T>(p: Promise<T>): Promise<{ ms: number; error: unknown }> {
  const started = Date.now();
  try {
    await p;
    return { ms: Date.now() - started, error: undefined };
  } catch (error) {
    return { ms: Date.now() - started, error };
  }
}

function expectUnavailable(error: unknown): void {
  expect(error).toBeInstanceOf(NaradError);
  const e = error as NaradError;
  expect(e.code).toBe("UNAVAILABLE");
  expect(e.status).toBe(503);
  expect(e.retryAfterSeconds).toBeGreaterThan(0);
}

// ------------------------------------------------------------------ the contract

describeMetastoreContract(
  "kubernetes",
  async () => {
    const c = await controlPlane();
    const kc = c.adminConfig();
    const { namespace, stop: stopOperator } = await startFakeCluster(kc, {
      prefix: "contract",
      cluster: CLUSTER,
      members: MEMBER_IDS.map((id, i) => member(id, "Active", i)),
      epoch: 1,
      pollMs: FAKE_OPERATOR_POLL_MS,
    });
    return {
      open: () =>
        openKubeMetastore({
          kubeConfig: c.adminConfig(),
          namespace,
          clusterName: CLUSTER,
          logger: quietLogger,
          timing: CONTRACT_TIMING,
        }),
      cleanup: async () => {
        await stopOperator();
        await kc.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace });
      },
    };
  },
  { settleMs: 10_000 },
);

// ------------------------------------------------------------------ kubernetes-only behaviour

describe("kubernetes metastore", () => {
  let c: KubePlatform;
  let kc: KubeConfig;
  let objects: CustomObjectsApi;
  let namespace: string;
  let proxy: ApiProxy;
  let store: KubeMetastore;
  let stopOperator: () => Promise<void>;

  const topicObject = (name: string) =>
    objects.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: "naradtopics",
      name,
    }) as Promise<NaradTopic>;

  beforeAll(async () => {
    c = await controlPlane();
    kc = c.adminConfig();
    objects = kc.makeApiClient(CustomObjectsApi);
    ({ namespace, stop: stopOperator } = await startFakeCluster(kc, {
      prefix: "kube-meta",
      cluster: CLUSTER,
      members: [member("demo-0", "Active", 0), member("demo-1", "Joining", 1)],
      epoch: 4,
      assignTo: MEMBER_IDS,
      pollMs: FAKE_OPERATOR_POLL_MS,
    }));
    proxy = await startProxy(c.cp.ports.apiserver);
    store = await openKubeMetastore({
      kubeConfig: configVia(c, proxy.port),
      namespace,
      clusterName: CLUSTER,
      logger: quietLogger,
      timing: TEST_TIMING,
    });
  });

  afterAll(async () => {
    await store?.close();
    await stopOperator?.();
    await proxy?.close();
  });

  it("reads members and the membership epoch from NaradCluster.status, and follows changes", async () => {
    expect(store.kind).toBe("kubernetes");
    expect(store.caughtUp()).toBe(true);
    expect(store.members()).toEqual([
      { id: "demo-0", address: "10.0.0.1:7942", state: "Active" },
      { id: "demo-1", address: "10.0.0.2:7942", state: "Joining" },
    ]);
    expect(store.membershipEpoch()).toBe(4);
    let changes = 0;
    store.onChange(() => changes++);
    await writeMembers(
      kc,
      namespace,
      CLUSTER,
      [member("demo-0", "Maintenance", 0), member("demo-1", "Active", 1)],
      5,
    );
    await waitFor(() => store.membershipEpoch() === 5, { timeoutMs: 5_000, what: "epoch 5" });
    expect(store.members().map((m) => m.state)).toEqual(["Maintenance", "Active"]);
    expect(changes).toBeGreaterThan(0);
  });

  it("stores topics as DNS-safe NaradTopics with the real name in spec.name", async () => {
    const created = await store.createTopic(topicFixture("Orders_EU", { partitions: 2 }));
    expect(created.name).toBe("Orders_EU");
    const list = (await objects.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: "naradtopics",
    })) as {
      items: NaradTopic[];
    };
    const obj = list.items.find((t) => t.spec.name === "Orders_EU");
    expect(obj?.metadata.name).toMatch(/^orders-eu-[0-9a-f]{8}$/);
    expect(obj?.spec).toMatchObject({
      cluster: CLUSTER,
      partitions: 2,
      retentionMs: 3_600_000,
      maxInFlightPerPartition: 512,
    });
    expect(store.ownerOf("Orders_EU", 0)).toBe("demo-0");
    expect(store.ownerOf("Orders_EU", 1)).toBe("demo-1");
    expect(store.ownerOf("Orders_EU", 2)).toBe("");
    const plain = await store.createTopic(topicFixture("plain.topic", { partitions: 1 }));
    expect((await topicObject("plain.topic")).spec.name).toBe(plain.name);
  });

  it("sees kubectl-applied topics, applies defaults, and ignores other clusters' topics", async () => {
    const create = (body: NaradTopic) =>
      objects.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: "naradtopics",
        body,
      });
    await create({
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradTopic",
      metadata: { name: "applied" },
      spec: { cluster: CLUSTER, name: "Applied", partitions: 2 },
    });
    await create({
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradTopic",
      metadata: { name: "elsewhere" },
      spec: { cluster: "other", partitions: 1 },
    });
    await waitFor(() => store.getTopic("Applied") !== undefined && store.ownerOf("Applied", 1) !== "", {
      timeoutMs: 5_000,
      what: "applied topic with owners",
    });
    expect(store.getTopic("Applied")).toMatchObject({
      partitions: 2,
      retention_ms: 604_800_000,
      max_in_flight_per_partition: 1024,
    });
    expect(store.getTopic("applied")).toBeUndefined();
    expect(store.getTopic("elsewhere")).toBeUndefined();
    // An existing topic name is a conflict even under another object name.
    await expect(store.createTopic(topicFixture("Applied"))).rejects.toMatchObject({ code: "CONFLICT" });
  });

  it("returns a created topic with unknown owners when no operator assigns it in time", async () => {
    const lonely = await openKubeMetastore({
      kubeConfig: c.adminConfig(),
      namespace,
      clusterName: "no-operator",
      logger: quietLogger,
      timing: { ...TEST_TIMING, assignmentWaitMs: 500 },
    });
    try {
      const { ms, error } = await timed(lonely.createTopic(topicFixture("unassigned", { partitions: 2 })));
      expect(error).toBeUndefined();
      expect(ms).toBeGreaterThanOrEqual(450);
      expect(lonely.getTopic("unassigned")?.partitions).toBe(2);
      expect(lonely.ownerOf("unassigned", 0)).toBe("");
      expect(lonely.members()).toEqual([]);
      expect(store.getTopic("unassigned")).toBeUndefined();
    } finally {
      await lonely.close();
    }
  });

  it("confirmTopicDeleted stays false while the replica is stale, true once it caught up", async () => {
    await store.createTopic(topicFixture("stale-check", { partitions: 1 }));
    proxy.set("frozen");
    try {
      // Deleted behind the frozen watch: the replica still has it.
      await objects.deleteNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: "naradtopics",
        name: "stale-check",
      });
      await expect(
        objects.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: "naradtopics",
          name: "stale-check",
        }),
      ).rejects.toMatchObject({ code: 404 });
      expect(store.getTopic("stale-check")).toBeDefined();
      expect(await store.confirmTopicDeleted("stale-check")).toBe(false);
      // Cut: the watch is down, so even a topic absent locally is not confirmed.
      proxy.set("cut");
      await waitFor(() => !store.caughtUp(), { timeoutMs: 5_000, what: "caughtUp false after cut" });
      expect(await store.confirmTopicDeleted("never-existed")).toBe(false);
      expect(await store.confirmTopicDeleted("stale-check")).toBe(false);
    } finally {
      proxy.set("open");
    }
    await waitFor(() => store.caughtUp() && store.getTopic("stale-check") === undefined, {
      timeoutMs: 10_000,
      what: "replica caught up after reconnect",
    });
    expect(await store.confirmTopicDeleted("stale-check")).toBe(true);
    expect(await store.confirmTopicDeleted("never-existed")).toBe(true);
  });

  it("a recreated topic of the same name is not confirmed deleted", async () => {
    await store.createTopic(topicFixture("again", { partitions: 1 }));
    await store.deleteTopic("again");
    await store.createTopic(topicFixture("again", { partitions: 1 }));
    expect(await store.confirmTopicDeleted("again")).toBe(false);
    // Recreated behind a frozen watch: absent locally, but the quorum read sees it.
    await store.deleteTopic("again");
    expect(store.getTopic("again")).toBeUndefined();
    await objects.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: "naradtopics",
      body: {
        apiVersion: "narad.dev/v1alpha1",
        kind: "NaradTopic",
        metadata: { name: "again-by-hand" },
        spec: { cluster: CLUSTER, name: "again" },
      },
    });
    proxy.set("frozen");
    try {
      // (the quorum LIST goes through the frozen proxy and times out -> false; either way not confirmed)
      expect(await store.confirmTopicDeleted("again")).toBe(false);
    } finally {
      proxy.set("open");
    }
    await waitFor(() => store.getTopic("again") !== undefined, {
      timeoutMs: 10_000,
      what: "recreated topic visible",
    });
    expect(await store.confirmTopicDeleted("again")).toBe(false);
  });

  it("authoritativeOwner reads the owner from the API server, not the replica, and says unknown when it cannot", async () => {
    const created = await store.createTopic(topicFixture("authority", { partitions: 1 }));
    await waitFor(() => store.ownerOf("authority", 0) === "demo-0", { timeoutMs: 10_000, what: "owner" });
    expect(await store.authoritativeOwner("authority", 0, created.uid)).toEqual({
      kind: "owner",
      node: "demo-0",
    });
    const obj = (
      (await objects.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: "naradtopics",
      })) as {
        items: NaradTopic[];
      }
    ).items.find((t) => t.spec.name === "authority");
    // The owner swap lands while the broker's watch is frozen: its replica lags, the authority does not.
    proxy.set("frozen");
    try {
      await objects.patchNamespacedCustomObjectStatus(
        {
          group: GROUP,
          version: VERSION,
          namespace,
          plural: "naradtopics",
          name: obj?.metadata.name ?? "",
          body: { status: { assignments: [{ partition: 0, owner: "demo-1" }], assignmentEpoch: 99 } },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
      expect(store.ownerOf("authority", 0)).toBe("demo-0");
      // Through the frozen proxy the quorum read cannot finish: unknown, never the stale replica's answer.
      expect(await store.authoritativeOwner("authority", 0, created.uid)).toEqual({ kind: "unknown" });
    } finally {
      proxy.set("open");
    }
    expect(await store.authoritativeOwner("authority", 0, created.uid)).toEqual({
      kind: "owner",
      node: "demo-1",
    });
    // Another incarnation's uid, or no such topic: gone.
    expect(await store.authoritativeOwner("authority", 0, "some-other-uid")).toEqual({ kind: "gone" });
    expect(await store.authoritativeOwner("never-existed", 0)).toEqual({ kind: "gone" });
  });

  it("keeps serving reads and refuses writes quickly with 503 while the API server is unreachable", async () => {
    await store.createTopic(topicFixture("outage", { partitions: 2 }));
    const before = {
      topics: store.listTopics(),
      members: store.members(),
      owner: store.ownerOf("outage", 1),
    };
    proxy.set("cut");
    try {
      await waitFor(() => !store.caughtUp(), { timeoutMs: 5_000, what: "caughtUp false" });
      expect(store.listTopics()).toEqual(before.topics);
      expect(store.getTopic("outage")?.partitions).toBe(2);
      expect(store.ownerOf("outage", 1)).toBe(before.owner);
      expect(store.members()).toEqual(before.members);
      const writes: Array<() => Promise<unknown>> = [
        () => store.createTopic(topicFixture("during-outage")),
        () => store.updateTopic("outage", { partitions: 4 }),
        () => store.deleteTopic("outage"),
      ];
      for (const write of writes) {
        const { ms, error } = await timed(write());
        expectUnavailable(error);
        expect(ms).toBeLessThan(FAST_FAIL_MS);
      }
      // Still nothing concluded about peers; still the same replica after a while.
      await sleep(1_500);
      expect(store.members()).toEqual(before.members);
      expect(store.getTopic("outage")).toBeDefined();
    } finally {
      proxy.set("open");
    }
    await waitFor(() => store.caughtUp(), { timeoutMs: 10_000, what: "caught up after the outage" });
    const updated = await store.updateTopic("outage", { partitions: 4 });
    expect(updated.partitions).toBe(4);
    expect(store.getTopic("during-outage")).toBeUndefined();
  });

  it("fails a write with 503 when the API server accepts connections but never answers", async () => {
    // The watch looks open right after freezing; the request deadline bounds the write.
    proxy.set("frozen");
    try {
      const { ms, error } = await timed(store.updateTopic("outage", { retention_ms: 1_000_000 }));
      expectUnavailable(error);
      expect(ms).toBeLessThan((TEST_TIMING.requestTimeoutMs ?? 0) + 1_000);
    } finally {
      proxy.set("open");
    }
  });

  it("takes a link declared in spec.parent only once admitted, ends it when the declaration changes or its parent incarnation goes", async () => {
    const patchObject = (name: string, body: object) =>
      objects.patchNamespacedCustomObject(
        { group: GROUP, version: VERSION, namespace, plural: "naradtopics", name, body },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    const declared = (child: string) => store.declaredLinks().find((d) => d.child === child);
    const parent = await store.createTopic(topicFixture("fan-parent", { retention_ms: 0, partitions: 2 }));
    await store.createTopic(topicFixture("fan-child", { partitions: 2 }));
    // Declared by hand: visible as a declaration, not in effect.
    await patchObject("fan-child", { spec: { parent: "fan-parent" } });
    await waitFor(() => declared("fan-child")?.parent === "fan-parent", {
      timeoutMs: 5_000,
      what: "declared",
    });
    expect(declared("fan-child")).toMatchObject({ inEffect: false, ended: "none", reported: undefined });
    expect(store.getTopic("fan-child")?.parent).toBeUndefined();
    // A refusal is recorded on the object, for kubectl describe.
    await store.settleDeclaredLink("fan-child", "because", false);
    await waitFor(() => declared("fan-child")?.reported === "because", {
      timeoutMs: 5_000,
      what: "reported",
    });
    expect((await topicObject("fan-child")).metadata.annotations?.["narad.dev/link-problem"]).toBe("because");
    // Admitted (what the deciding broker does): in effect, the report cleared, in one write.
    const epoch = "00112233445566aa";
    const linked = await store.updateTopic("fan-child", {
      parent: "fan-parent",
      fanout_delay_ms: undefined,
      attach_epoch: epoch,
      attached_at_ms: 1234,
    });
    expect(linked).toMatchObject({ parent: "fan-parent", attach_epoch: epoch, attached_at_ms: 1234 });
    expect(store.getTopic("fan-child")).toMatchObject({ parent: "fan-parent", attach_epoch: epoch });
    const obj = await topicObject("fan-child");
    expect(obj.metadata.annotations?.["narad.dev/link-problem"]).toBeUndefined();
    expect(JSON.parse(obj.metadata.annotations?.["narad.dev/attachment"] ?? "{}")).toEqual({
      parent: "fan-parent",
      parentUid: parent.uid,
      delayMs: 0,
      epoch,
      attachedAtMs: 1234,
    });
    expect(declared("fan-child")).toMatchObject({ inEffect: true, ended: "none" });
    // kubectl changes the delay: the admission no longer holds.
    await patchObject("fan-child", { spec: { delayMs: 1000 } });
    await waitFor(() => store.getTopic("fan-child")?.parent === undefined, {
      timeoutMs: 5_000,
      what: "ended",
    });
    expect(declared("fan-child")).toMatchObject({ inEffect: false, ended: "spec-changed", delayMs: 1000 });
    // Settled with the record dropped: reverting the delay is a new declaration, not the old link back.
    await store.settleDeclaredLink("fan-child", undefined, true);
    await waitFor(() => declared("fan-child")?.ended === "none", {
      timeoutMs: 5_000,
      what: "record dropped",
    });
    await patchObject("fan-child", { spec: { delayMs: null } });
    await waitFor(() => declared("fan-child")?.delayMs === 0, { timeoutMs: 5_000, what: "delay reverted" });
    expect(store.getTopic("fan-child")?.parent).toBeUndefined();
    // Admitted again, then the parent deleted with kubectl (no unlink first) and re-created:
    // the namesake does not inherit the child.
    await store.updateTopic("fan-child", { parent: "fan-parent", attach_epoch: epoch, attached_at_ms: 1 });
    expect(store.getTopic("fan-child")?.parent).toBe("fan-parent");
    await objects.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: "naradtopics",
      name: "fan-parent",
    });
    await waitFor(() => store.getTopic("fan-child")?.parent === undefined, {
      timeoutMs: 5_000,
      what: "parent gone",
    });
    expect(declared("fan-child")).toMatchObject({ inEffect: false, ended: "parent-gone" });
    const namesake = await store.createTopic(topicFixture("fan-parent", { retention_ms: 0, partitions: 2 }));
    expect(namesake.uid).not.toBe(parent.uid);
    await waitFor(() => store.getTopic("fan-parent")?.uid === namesake.uid, {
      timeoutMs: 5_000,
      what: "namesake",
    });
    expect(store.getTopic("fan-child")?.parent).toBeUndefined();
    expect(declared("fan-child")).toMatchObject({ ended: "parent-gone" });
  });

  it("a link is in effect once the parent registers it: a parent from before registers is seeded, a half-made link is pending, dead entries are pruned", async () => {
    const patchObject = (name: string, body: object) =>
      objects.patchNamespacedCustomObject(
        { group: GROUP, version: VERSION, namespace, plural: "naradtopics", name, body },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    const register = async (name: string) =>
      JSON.parse((await topicObject(name)).metadata.annotations?.["narad.dev/children"] ?? "null");
    const declared = (child: string) => store.declaredLinks().find((d) => d.child === child);
    const parent = await store.createTopic(topicFixture("reg-parent", { retention_ms: 0, partitions: 1 }));
    for (const c of ["reg-a", "reg-b", "reg-c", "reg-d"])
      await store.createTopic(topicFixture(c, { partitions: 1 }));
    /** The child's side alone, as a broker from before registers (or a crash after step 2) leaves it. */
    const childSideOnly = (child: string, epoch: string) =>
      patchObject(child, {
        spec: { parent: "reg-parent" },
        metadata: {
          annotations: {
            "narad.dev/attachment": JSON.stringify({
              parent: "reg-parent",
              parentUid: parent.uid,
              delayMs: 0,
              epoch,
              attachedAtMs: 5,
            }),
          },
        },
      });
    // A parent without a register: the child's side decides (links made before registers keep working).
    await childSideOnly("reg-a", "aaaaaaaaaaaaaaaa");
    await waitFor(() => store.getTopic("reg-a")?.parent === "reg-parent", {
      timeoutMs: 5_000,
      what: "legacy link",
    });
    expect(await register("reg-parent")).toBeNull();
    // The first attach gives the parent its register, seeded with the child already in effect.
    await store.updateTopic("reg-b", {
      parent: "reg-parent",
      attach_epoch: "bbbbbbbbbbbbbbbb",
      attached_at_ms: 6,
    });
    expect(await register("reg-parent")).toEqual({
      "reg-a": "aaaaaaaaaaaaaaaa",
      "reg-b": "bbbbbbbbbbbbbbbb",
    });
    expect(store.getTopic("reg-a")?.parent).toBe("reg-parent");
    expect(store.getTopic("reg-b")?.parent).toBe("reg-parent");
    // The child's side alone, now that the parent has a register: pending, not in effect.
    await childSideOnly("reg-c", "cccccccccccccccc");
    await waitFor(() => declared("reg-c")?.pending !== undefined, { timeoutMs: 5_000, what: "pending" });
    expect(declared("reg-c")).toMatchObject({
      inEffect: false,
      ended: "none",
      pending: { epoch: "cccccccccccccccc", attachedAtMs: 5 },
    });
    expect(store.getTopic("reg-c")?.parent).toBeUndefined();
    // Completing another epoch than the child carries does nothing (a link taken back stays gone).
    await store.completeLink("reg-c", "0123456789abcdef");
    expect(store.getTopic("reg-c")?.parent).toBeUndefined();
    // Completed with its own epoch (what the deciding broker does), it is in effect.
    await store.completeLink("reg-c", "cccccccccccccccc");
    expect(store.getTopic("reg-c")).toMatchObject({ parent: "reg-parent", attach_epoch: "cccccccccccccccc" });
    // A child deleted with kubectl leaves a dead entry; the next write of the register prunes it.
    await objects.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: "naradtopics",
      name: "reg-a",
    });
    await waitFor(() => store.getTopic("reg-a") === undefined, { timeoutMs: 5_000, what: "reg-a gone" });
    await store.updateTopic("reg-d", {
      parent: "reg-parent",
      attach_epoch: "dddddddddddddddd",
      attached_at_ms: 7,
    });
    expect(await register("reg-parent")).toEqual({
      "reg-b": "bbbbbbbbbbbbbbbb",
      "reg-c": "cccccccccccccccc",
      "reg-d": "dddddddddddddddd",
    });
    // A detach drops its entry.
    await store.updateTopic("reg-b", {
      parent: undefined,
      fanout_delay_ms: undefined,
      attach_epoch: undefined,
      attached_at_ms: undefined,
    });
    expect(await register("reg-parent")).toEqual({
      "reg-c": "cccccccccccccccc",
      "reg-d": "dddddddddddddddd",
    });
    // A parent with children may not become a child, and a child may not take children (each side's own write).
    await store.createTopic(topicFixture("reg-top", { retention_ms: 0, partitions: 1 }));
    await expect(
      store.updateTopic("reg-parent", {
        parent: "reg-top",
        attach_epoch: "eeeeeeeeeeeeeeee",
        attached_at_ms: 8,
      }),
    ).rejects.toMatchObject({ code: "CONFLICT" });
    await expect(
      store.updateTopic("reg-top", { parent: "reg-d", attach_epoch: "ffffffffffffffff", attached_at_ms: 9 }),
    ).rejects.toMatchObject({ code: "CONFLICT" });
    expect(store.getTopic("reg-top")?.parent).toBeUndefined();
    expect((await topicObject("reg-top")).spec.parent).toBeUndefined();
  });

  it("relists on resync and keeps the same view", async () => {
    const names = store.listTopics().map((t) => t.name);
    store.resync();
    await waitFor(() => store.caughtUp(), { timeoutMs: 10_000, what: "caught up after resync" });
    expect(store.listTopics().map((t) => t.name)).toEqual(names);
  });

  it("stays caught up, and takes writes, across watch rotations (each watch ends on its server-side timeout)", async () => {
    // Regression: caughtUp() was false between one watch ending and the next
    // opening, so a topic write landing in that gap got a spurious 503.
    const rotating = await openKubeMetastore({
      kubeConfig: configVia(c, proxy.port),
      namespace,
      clusterName: CLUSTER,
      logger: quietLogger,
      timing: { ...TEST_TIMING, watchTimeoutSeconds: 1 },
    });
    try {
      await rotating.createTopic(topicFixture("rotations", { partitions: 1 }));
      let samples = 0;
      let behind = 0;
      const until = Date.now() + 4_500; // four or more rotations of both watches
      let k = 0;
      while (Date.now() < until) {
        samples++;
        if (!rotating.caughtUp()) behind++;
        if (samples % 200 === 0) {
          await rotating.updateTopic("rotations", { retention_ms: 2_000_000 + k++ }); // throws on a 503
        }
        await sleep(1);
      }
      log(`watch rotations: ${samples} samples, ${behind} not caught up, ${k} writes`);
      expect(k).toBeGreaterThan(5);
      expect(behind).toBe(0);
    } finally {
      await rotating.close();
    }
  });
});

// ------------------------------------------------------------------ replication

describe("kubernetes metastore: replication settings, replicated records and the ISR compare-and-swap", () => {
  let c: KubePlatform;
  let kc: KubeConfig;
  let objects: CustomObjectsApi;
  let namespace: string;
  let proxy: ApiProxy;
  /** Through the proxy (outage tests); `other` talks to the API server directly. */
  let store: KubeMetastore;
  let other: KubeMetastore;
  let stopOperator: () => Promise<void>;
  /** Debug lines per store: the ISR conflicts show up there. */
  const lines = { store: [] as string[], other: [] as string[] };
  const ISR_TIMEOUT_MS = 1_500;
  const volumes = { "demo-0": "vol-0", "demo-1": "vol-1", "demo-2": "vol-2" } as const;
  const isrOf = (...ids: Array<keyof typeof volumes>) =>
    ids.map((member) => ({ member, volumeId: volumes[member] }));
  const recording = (out: string[]) => ({
    ...quietLogger,
    debug: (_obj: object, msg: string) => out.push(msg),
  });
  const base = () => ({ group: GROUP, version: VERSION, namespace, plural: "naradtopics" });
  const fresh = async (topic: string): Promise<NaradTopic> => {
    const list = (await objects.listNamespacedCustomObject(base())) as { items: NaradTopic[] };
    const t = list.items.find((o) => o.spec.name === topic);
    if (t === undefined) throw new Error(`no NaradTopic for ${topic}`);
    return t;
  };
  /**
   * The operator's placement, as a JSON Patch (a merge patch would drop
   * `leader: null` inside the list): partition 0 led by demo-0, 1 by demo-1
   * at epoch 4, 2 offline at epoch 9.
   */
  const place = async (topic: string): Promise<void> => {
    const t = await fresh(topic);
    const value = [
      {
        partition: 0,
        owner: "demo-0",
        leader: "demo-0",
        replicas: ["demo-0", "demo-1", "demo-2"],
        isr: isrOf("demo-0", "demo-1", "demo-2"),
        leaderEpoch: 0,
      },
      {
        partition: 1,
        owner: "demo-1",
        leader: "demo-1",
        replicas: ["demo-1", "demo-2", "demo-0"],
        isr: isrOf("demo-1", "demo-2", "demo-0"),
        leaderEpoch: 4,
      },
      {
        partition: 2,
        owner: "",
        leader: null,
        replicas: ["demo-2", "demo-0", "demo-1"],
        isr: isrOf("demo-2"),
        leaderEpoch: 9,
      },
    ];
    await objects.patchNamespacedCustomObjectStatus(
      {
        ...base(),
        name: t.metadata.name ?? "",
        body: [
          { op: "add", path: "/status", value: { ...t.status, assignments: value, replicationFactor: 3 } },
        ],
      },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    );
    for (const s of [store, other])
      await waitFor(() => s.replicaAssignment(topic, 1)?.leaderEpoch === 4, {
        timeoutMs: 10_000,
        what: `${topic} placed`,
      });
  };
  const newTopic = async (name: string): Promise<void> => {
    await store.createTopic(
      topicFixture(name, { partitions: 3, replication_factor: 3, min_insync_replicas: 2 }),
    );
    // The fake operator assigns single owners first; the placement replaces them.
    await waitFor(() => store.ownerOf(name, 2) !== "", { timeoutMs: 10_000, what: `${name} assigned` });
    await place(name);
  };
  /** Everything of the object but the resourceVersion-bearing metadata and one partition's isr. */
  const withoutIsr = (t: NaradTopic, partition: number) => ({
    spec: t.spec,
    annotations: t.metadata.annotations,
    status: {
      ...t.status,
      assignments: t.status?.assignments?.map((a) =>
        a.partition === partition ? { ...a, isr: "(ignored)" } : a,
      ),
    },
  });

  beforeAll(async () => {
    c = await controlPlane();
    kc = c.adminConfig();
    objects = kc.makeApiClient(CustomObjectsApi);
    ({ namespace, stop: stopOperator } = await startFakeCluster(kc, {
      prefix: "kube-repl",
      cluster: CLUSTER,
      members: MEMBER_IDS.map((id, i) => ({ ...member(id, "Active", i), volumeId: `vol-${i}` })),
      epoch: 1,
      pollMs: FAKE_OPERATOR_POLL_MS,
    }));
    proxy = await startProxy(c.cp.ports.apiserver);
    const timing = { ...TEST_TIMING, isrWriteTimeoutMs: ISR_TIMEOUT_MS };
    store = await openKubeMetastore({
      kubeConfig: configVia(c, proxy.port),
      namespace,
      clusterName: CLUSTER,
      logger: recording(lines.store),
      timing,
    });
    other = await openKubeMetastore({
      kubeConfig: c.adminConfig(),
      namespace,
      clusterName: CLUSTER,
      logger: recording(lines.other),
      timing,
    });
  });

  afterAll(async () => {
    await store?.close();
    await other?.close();
    await stopOperator?.();
    await proxy?.close();
  });

  it("writes the settings into spec, reads records and members' volume ids, and the owner is the leader", async () => {
    await newTopic("settings");
    const obj = await fresh("settings");
    expect(obj.spec).toMatchObject({ replicationFactor: 3, minInsyncReplicas: 2 });
    expect(store.getTopic("settings")).toMatchObject({ replication_factor: 3, min_insync_replicas: 2 });
    expect(store.members().map((m) => m.volumeId)).toEqual(["vol-0", "vol-1", "vol-2"]);
    expect(store.replicaAssignment("settings", 1)).toEqual({
      partition: 1,
      leader: "demo-1",
      replicas: ["demo-1", "demo-2", "demo-0"],
      isr: isrOf("demo-1", "demo-2", "demo-0"),
      leaderEpoch: 4,
    });
    expect(store.ownerOf("settings", 1)).toBe("demo-1");
    // Offline: no leader, so no owner.
    expect(store.replicaAssignment("settings", 2)?.leader).toBeNull();
    expect(store.ownerOf("settings", 2)).toBe("");
    expect(await store.authoritativeOwner("settings", 1)).toEqual({ kind: "owner", node: "demo-1" });
    // The minimum may change; the factor stays.
    await store.updateTopic("settings", { min_insync_replicas: 3 });
    expect((await fresh("settings")).spec).toMatchObject({ replicationFactor: 3, minInsyncReplicas: 3 });
  });

  it("records an ISR by changing only that partition's isr, once per change", async () => {
    await newTopic("cas");
    const before = await fresh("cas");
    const shrunk = isrOf("demo-1", "demo-2");
    const out = await store.recordIsr("cas", 1, { leader: "demo-1", leaderEpoch: 4 }, shrunk);
    expect(out).toEqual({
      kind: "recorded",
      record: {
        partition: 1,
        leader: "demo-1",
        replicas: ["demo-1", "demo-2", "demo-0"],
        isr: shrunk,
        leaderEpoch: 4,
      },
    });
    const after = await fresh("cas");
    expect(after.status?.assignments?.find((a) => a.partition === 1)?.isr).toEqual(shrunk);
    expect(withoutIsr(after, 1)).toEqual(withoutIsr(before, 1));
    // The offline partition keeps its null leader; the owner is untouched.
    expect(after.status?.assignments?.[2]).toMatchObject({ leader: null, owner: "" });
    expect(after.status?.assignments?.[1]?.owner).toBe("demo-1");
    expect(after.metadata.generation).toBe(before.metadata.generation);
    // The same change again is already recorded: no write.
    await waitFor(() => store.replicaAssignment("cas", 1)?.isr.length === 2, {
      timeoutMs: 5_000,
      what: "watch",
    });
    expect((await store.recordIsr("cas", 1, { leader: "demo-1", leaderEpoch: 4 }, shrunk)).kind).toBe(
      "recorded",
    );
    expect((await fresh("cas")).metadata.resourceVersion).toBe(after.metadata.resourceVersion);
  });

  it("two stores writing at once: one conflicts, re-reads and lands while leader and epoch hold", async () => {
    await newTopic("race");
    for (let round = 0; round < 4; round++) {
      // Two ISRs that both differ from the one recorded now (asking for the
      // ISR already recorded is answered without a write).
      const now = JSON.stringify(other.replicaAssignment("race", 1)?.isr);
      const [a, b] = [isrOf("demo-1", "demo-2"), isrOf("demo-1", "demo-0"), isrOf("demo-1")].filter(
        (x) => JSON.stringify(x) !== now,
      ) as [IsrMember[], IsrMember[]];
      // Both start from their replica's copy (read before either write is
      // sent), so whichever arrives second wrote on an old version: a 409.
      const from = { store: lines.store.length, other: lines.other.length };
      const [ra, rb] = await Promise.all([
        store.recordIsr("race", 1, { leader: "demo-1", leaderEpoch: 4 }, a),
        other.recordIsr("race", 1, { leader: "demo-1", leaderEpoch: 4 }, b),
      ]);
      expect(ra.kind).toBe("recorded");
      expect(rb.kind).toBe("recorded");
      const final = (await fresh("race")).status?.assignments?.find((x) => x.partition === 1)?.isr;
      const conflicts = (l: string[], i: number) => l.slice(i).filter((x) => x.includes("conflicted")).length;
      const lost = { store: conflicts(lines.store, from.store), other: conflicts(lines.other, from.other) };
      log(`race round ${round}: conflicts ${JSON.stringify(lost)}, final isr ${JSON.stringify(final)}`);
      // One conflicted, re-read, found leader and epoch unchanged and wrote
      // again: its ISR is the one recorded last.
      expect(lost.store + lost.other).toBe(1);
      expect(final).toEqual(lost.store === 1 ? a : b);
      // Wait for both watches to see the last write before the next round.
      for (const s of [store, other])
        await waitFor(() => JSON.stringify(s.replicaAssignment("race", 1)?.isr) === JSON.stringify(final), {
          timeoutMs: 5_000,
          what: "both replicas caught up",
        });
    }
  });

  it("a change decided on an ISR another writer changed is superseded, never written over it", async () => {
    await newTopic("superseded");
    const t = await fresh("superseded");
    await waitFor(() => store.replicaAssignment("superseded", 1)?.isr.length === 3, {
      timeoutMs: 5_000,
      what: "watch",
    });
    const decidedOn = isrOf("demo-1", "demo-2", "demo-0");
    // The operator drops demo-0 (replicas and ISR, same epoch) ...
    await objects.patchNamespacedCustomObjectStatus(
      {
        ...base(),
        name: t.metadata.name ?? "",
        body: [
          { op: "test", path: "/status/assignments/1/partition", value: 1 },
          { op: "replace", path: "/status/assignments/1/replicas", value: ["demo-1", "demo-2"] },
          { op: "replace", path: "/status/assignments/1/isr", value: isrOf("demo-1", "demo-2") },
        ],
      },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    );
    // ... while the leader asks, on the record before it, to shrink demo-2 away.
    const out = await store.recordIsr(
      "superseded",
      1,
      { leader: "demo-1", leaderEpoch: 4, isr: decidedOn },
      isrOf("demo-1", "demo-0"),
    );
    expect(out).toMatchObject({ kind: "superseded", record: { isr: isrOf("demo-1", "demo-2") } });
    expect((await fresh("superseded")).status?.assignments?.[1]?.isr).toEqual(isrOf("demo-1", "demo-2"));
    // Decided on the ISR as it is now: recorded.
    const again = await store.recordIsr(
      "superseded",
      1,
      { leader: "demo-1", leaderEpoch: 4, isr: isrOf("demo-2", "demo-1") },
      isrOf("demo-1"),
    );
    expect(again.kind).toBe("recorded");
    expect((await fresh("superseded")).status?.assignments?.[1]?.isr).toEqual(isrOf("demo-1"));
  });

  it("answers stale, and changes nothing, when the record moved on or the topic is gone", async () => {
    await newTopic("stale");
    const t = await fresh("stale");
    const isr = isrOf("demo-1");
    const unchanged = async (): Promise<void> =>
      expect((await fresh("stale")).metadata.resourceVersion).toBe(t.metadata.resourceVersion);
    for (const [p, expect_] of [
      [1, { leader: "demo-1", leaderEpoch: 3 }],
      [1, { leader: "demo-2", leaderEpoch: 4 }],
      [2, { leader: "demo-2", leaderEpoch: 9 }],
      [7, { leader: "demo-1", leaderEpoch: 4 }],
    ] as const) {
      const out = await store.recordIsr("stale", p, expect_, isr);
      expect(out.kind, JSON.stringify({ p, expect_ })).toBe("stale");
      await unchanged();
    }
    // An election, asked about at once (the replica may not show it yet: then
    // the write conflicts and the fresh read says stale).
    await objects.patchNamespacedCustomObjectStatus(
      {
        ...base(),
        name: t.metadata.name ?? "",
        body: [
          { op: "test", path: "/status/assignments/1/partition", value: 1 },
          { op: "replace", path: "/status/assignments/1/leader", value: "demo-2" },
          { op: "replace", path: "/status/assignments/1/owner", value: "demo-2" },
          { op: "replace", path: "/status/assignments/1/leaderEpoch", value: 5 },
        ],
      },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    );
    const elected = await other.recordIsr("stale", 1, { leader: "demo-1", leaderEpoch: 4 }, isr);
    expect(elected.kind).toBe("stale");
    const afterElection = await fresh("stale");
    expect(afterElection.status?.assignments?.[1]).toMatchObject({ leader: "demo-2", leaderEpoch: 5 });
    expect(afterElection.status?.assignments?.[1]?.isr).toEqual(isrOf("demo-1", "demo-2", "demo-0"));
    // Deleted: stale, whether the replica has seen the deletion or not.
    await objects.deleteNamespacedCustomObject({ ...base(), name: t.metadata.name ?? "" });
    expect((await other.recordIsr("stale", 0, { leader: "demo-0", leaderEpoch: 0 }, isr)).kind).toBe("stale");
    await waitFor(() => other.getTopic("stale") === undefined, { timeoutMs: 5_000, what: "deletion seen" });
    expect((await other.recordIsr("stale", 0, { leader: "demo-0", leaderEpoch: 0 }, isr)).kind).toBe("stale");
    // A namesake is a record of its own: its leader's write lands.
    await waitFor(() => store.getTopic("stale") === undefined, { timeoutMs: 5_000, what: "deletion seen" });
    await newTopic("stale");
    const namesake = await fresh("stale");
    await waitFor(() => store.getTopic("stale")?.uid === namesake.metadata.uid, {
      timeoutMs: 5_000,
      what: "namesake",
    });
    expect(
      (await store.recordIsr("stale", 0, { leader: "demo-0", leaderEpoch: 0 }, isrOf("demo-0"))).kind,
    ).toBe("recorded");
  });

  it("answers unknown within its bound when the API server cannot be reached, and converges once it can", async () => {
    await newTopic("outage-isr");
    const t = await fresh("outage-isr");
    const isr = isrOf("demo-0", "demo-1");
    const at = { leader: "demo-0", leaderEpoch: 0 };
    for (const mode of ["cut", "frozen"] as const) {
      await waitFor(() => store.caughtUp(), { timeoutMs: 10_000, what: "caught up" });
      proxy.set(mode);
      try {
        const started = Date.now();
        const out = await store.recordIsr("outage-isr", 0, at, isr);
        const ms = Date.now() - started;
        log(
          `recordIsr with the API ${mode}: ${out.kind} in ${ms} ms (${out.kind === "unknown" ? out.reason : ""})`,
        );
        expect(out.kind).toBe("unknown");
        expect(ms).toBeLessThan(ISR_TIMEOUT_MS + 500);
        // A frozen request is still held by the proxy: past its own deadline
        // the client aborts it, so nothing is forwarded once the proxy opens.
        if (mode === "frozen") await sleep((TEST_TIMING.requestTimeoutMs ?? 0) + 500);
      } finally {
        proxy.set("open");
      }
      // Nothing landed: reset connections carried nothing, the frozen request was aborted.
      expect((await fresh("outage-isr")).metadata.resourceVersion).toBe(t.metadata.resourceVersion);
    }
    await waitFor(() => store.caughtUp(), { timeoutMs: 10_000, what: "caught up" });
    // The leader asks again (ADR 0007: a change without an answer stays pending): it lands.
    expect((await store.recordIsr("outage-isr", 0, at, isr)).kind).toBe("recorded");
    expect((await fresh("outage-isr")).status?.assignments?.[0]?.isr).toEqual(isr);
  });
});
