// Pure parts of the kubernetes metastore: object names for topic names, the
// NaradTopic <-> TopicConfig mapping, and the --metastore/--cluster-name/
// --namespace settings.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { topicName } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradTopic, PartitionMoveStatus } from "../../../../packages/api/src/v1alpha1/types.ts";
import { ConfigError, loadConfig } from "../../config.ts";
import { topicFixture } from "../contract.ts";
import {
  ATTACHMENT_ANNOTATION,
  assignmentIndex,
  assignmentsOf,
  attachmentOf,
  LINK_PROBLEM_ANNOTATION,
  memberOf,
  movesInFlight,
  naradTopicFor,
  replicaAssignmentOf,
  replicaAssignmentsOf,
  specMergePatch,
  topicConfigOf,
  topicMergePatch,
} from "./convert.ts";
import { isDns1123Subdomain, KUBE_NAME_MAX_CHARS, kubeNameForTopic } from "./names.ts";

describe("kubeNameForTopic", () => {
  it("keeps names that are already valid object names", () => {
    for (const n of ["orders", "a.b", "x-1", "0"]) expect(kubeNameForTopic(n)).toBe(n);
  });
  it("derives a valid, distinct name with a hash suffix otherwise", () => {
    const names = ["Orders", "orders_eu", "ORDERS_EU", "-lead", "trail.", "a..b", "__", "_", "x".repeat(255)];
    const derived = names.map(kubeNameForTopic);
    for (const d of derived) expect(isDns1123Subdomain(d), d).toBe(true);
    for (const d of derived) expect(d.length).toBeLessThanOrEqual(KUBE_NAME_MAX_CHARS);
    expect(new Set(derived).size).toBe(names.length);
    expect(kubeNameForTopic("Orders")).toMatch(/^orders-[0-9a-f]{8}$/);
    expect(kubeNameForTopic("orders_eu")).toMatch(/^orders-eu-[0-9a-f]{8}$/);
    expect(kubeNameForTopic("Orders")).not.toBe("orders");
    expect(kubeNameForTopic("Orders")).toBe(kubeNameForTopic("Orders"));
  });
});

describe("NaradTopic mapping", () => {
  it("round-trips a TopicConfig through a NaradTopic", () => {
    const t = topicFixture("Orders_EU", { created_at: "2026-01-02T03:04:05.000Z" });
    const obj = naradTopicFor(t, "ns", "demo");
    expect(obj.metadata).toMatchObject({ namespace: "ns", labels: { "narad.dev/cluster": "demo" } });
    expect(obj.spec).toMatchObject({ cluster: "demo", name: "Orders_EU" });
    expect(topicName(obj)).toBe("Orders_EU");
    const back = topicConfigOf({
      ...obj,
      metadata: { ...obj.metadata, uid: "uid-1", creationTimestamp: t.created_at as unknown as Date },
    });
    expect(back).toEqual({ ...t, uid: "uid-1" });
  });
  it("keeps the owner in the narad.dev/owner annotation (no owner: no annotation)", () => {
    const obj = naradTopicFor(topicFixture("owned", { owner: "alice" }), "ns", "demo");
    expect(obj.metadata.annotations).toEqual({ "narad.dev/owner": "alice" });
    expect(topicConfigOf({ ...obj, metadata: { ...obj.metadata, uid: "u" } }).owner).toBe("alice");
    const none = naradTopicFor(topicFixture("unowned"), "ns", "demo");
    expect(none.metadata.annotations).toBeUndefined();
    expect("owner" in topicConfigOf({ ...none, metadata: { ...none.metadata, uid: "u" } })).toBe(false);
  });

  it("carries the schema and its version in spec.schema, and in a merge patch", () => {
    const schema = { version: 3, definition: '{"type":"object"}' };
    const obj = naradTopicFor(topicFixture("s", { schema }), "ns", "demo");
    expect(obj.spec.schema).toEqual(schema);
    expect(topicConfigOf({ ...obj, metadata: { ...obj.metadata, uid: "u" } }).schema).toEqual(schema);
    expect(specMergePatch({ schema }).spec.schema).toEqual(schema);
    expect(specMergePatch({ partitions: 4 }).spec).not.toHaveProperty("schema");
    expect(topicConfigOf(naradTopicFor(topicFixture("plain"), "ns", "demo"))).not.toHaveProperty("schema");
  });
  it("keeps a fan-out link in spec.parent/delayMs plus the attachment annotation, in effect only while they match", () => {
    const attachment = {
      parent: "orders",
      parentUid: "pu",
      delayMs: 60_000,
      epoch: "0123456789abcdef",
      attachedAtMs: 42,
    };
    const obj = naradTopicFor(topicFixture("late"), "ns", "demo", attachment);
    expect(obj.spec).toMatchObject({ parent: "orders", delayMs: 60_000 });
    expect(attachmentOf(obj)).toEqual(attachment);
    const withUid = (o: NaradTopic): NaradTopic => ({ ...o, metadata: { ...o.metadata, uid: "u" } });
    expect(topicConfigOf(withUid(obj))).toMatchObject({
      parent: "orders",
      fanout_delay_ms: 60_000,
      attach_epoch: "0123456789abcdef",
      attached_at_ms: 42,
    });
    // kubectl changed the declaration: the admission no longer holds, no link.
    for (const spec of [
      { ...obj.spec, parent: "other" },
      { ...obj.spec, delayMs: 1 },
      { ...obj.spec, parent: undefined, delayMs: undefined },
    ]) {
      const c = topicConfigOf(withUid({ ...obj, spec }));
      expect(c.parent).toBeUndefined();
      expect(c.attach_epoch).toBeUndefined();
    }
    // Declared by hand without an admission, or a hand-forged annotation: not in effect.
    const declared = naradTopicFor(topicFixture("kid"), "ns", "demo");
    declared.spec.parent = "orders";
    expect(topicConfigOf(withUid(declared)).parent).toBeUndefined();
    declared.metadata.annotations = { [ATTACHMENT_ANNOTATION]: '{"parent":"orders","epoch":"x"}' };
    expect(attachmentOf(declared)).toBeUndefined();
    expect(topicConfigOf(withUid(declared)).parent).toBeUndefined();
    // No delay: no spec.delayMs, no fanout_delay_ms.
    const plain = naradTopicFor(topicFixture("p"), "ns", "demo", { ...attachment, delayMs: 0 });
    expect(plain.spec).not.toHaveProperty("delayMs");
    expect(topicConfigOf(withUid(plain))).not.toHaveProperty("fanout_delay_ms");
  });

  it("makes or breaks a link in one merge patch, clearing a reported problem", () => {
    const a = { parent: "orders", parentUid: "pu", delayMs: 0, epoch: "0123456789abcdef", attachedAtMs: 7 };
    const attach = topicMergePatch({ schema: { version: 1, definition: "{}" } }, a);
    expect(attach.spec).toMatchObject({ parent: "orders", delayMs: null, schema: { version: 1 } });
    expect(JSON.parse(attach.metadata?.annotations[ATTACHMENT_ANNOTATION] ?? "")).toEqual(a);
    expect(attach.metadata?.annotations[LINK_PROBLEM_ANNOTATION]).toBeNull();
    const detach = topicMergePatch({}, null);
    expect(detach.spec).toEqual({ parent: null, delayMs: null });
    expect(detach.metadata?.annotations).toEqual({
      [ATTACHMENT_ANNOTATION]: null,
      [LINK_PROBLEM_ANNOTATION]: null,
    });
    expect(topicMergePatch({ partitions: 4 }, undefined)).toEqual({ spec: { partitions: 4 } });
  });

  it("defaults what a hand-written NaradTopic leaves out and leaves 0 retention to the default", () => {
    const obj: NaradTopic = {
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradTopic",
      metadata: { name: "plain" },
      spec: { cluster: "demo" },
    };
    expect(topicConfigOf(obj)).toMatchObject({
      name: "plain",
      partitions: 3,
      retention_ms: 604_800_000,
      retention_bytes: 0,
    });
    expect(
      naradTopicFor(topicFixture("t", { retention_ms: 0 }), "ns", "demo").spec.retentionMs,
    ).toBeUndefined();
  });
  it("reads owners from status.assignments, skipping empty owners", () => {
    const obj: NaradTopic = {
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradTopic",
      metadata: { name: "t" },
      spec: { cluster: "demo", partitions: 3 },
      status: {
        assignments: [
          { partition: 0, owner: "demo-0" },
          { partition: 2, owner: "" },
        ],
      },
    };
    expect([...assignmentsOf(obj)]).toEqual([[0, "demo-0"]]);
  });
  it("writes the replication settings into spec at create and reads them back; patches only the minimum", () => {
    const t = topicFixture("r", {
      created_at: "2026-01-02T03:04:05.000Z",
      replication_factor: 3,
      min_insync_replicas: 2,
    });
    const obj = naradTopicFor(t, "ns", "demo");
    expect(obj.spec).toMatchObject({ replicationFactor: 3, minInsyncReplicas: 2 });
    const back = topicConfigOf({
      ...obj,
      metadata: { ...obj.metadata, uid: "uid-1", creationTimestamp: t.created_at as unknown as Date },
    });
    expect(back).toEqual({ ...t, uid: "uid-1" });
    expect(naradTopicFor(topicFixture("plain"), "ns", "demo").spec).not.toHaveProperty("replicationFactor");
    expect(specMergePatch({ min_insync_replicas: 3 })).toEqual({ spec: { minInsyncReplicas: 3 } });
  });
  it("takes the settings from spec, else from what the operator recorded in status, else none (one copy)", () => {
    const base = naradTopicFor(topicFixture("applied"), "ns", "demo");
    const withStatus = (spec: object, status: object) =>
      topicConfigOf({
        ...base,
        spec: { ...base.spec, ...spec },
        status,
        metadata: { ...base.metadata, uid: "u" },
      });
    expect(withStatus({}, {})).not.toHaveProperty("replication_factor");
    expect(withStatus({}, {})).not.toHaveProperty("min_insync_replicas");
    expect(withStatus({}, { replicationFactor: 3, minInsyncReplicas: 2 })).toMatchObject({
      replication_factor: 3,
      min_insync_replicas: 2,
    });
    expect(
      withStatus(
        { replicationFactor: 5, minInsyncReplicas: 3 },
        { replicationFactor: 3, minInsyncReplicas: 2 },
      ),
    ).toMatchObject({ replication_factor: 5, min_insync_replicas: 3 });
    expect(withStatus({ replicationFactor: 3 }, { minInsyncReplicas: 1 })).toMatchObject({
      replication_factor: 3,
      min_insync_replicas: 1,
    });
  });
  it("reads replicated records from status.assignments: the leader is the owner, offline has none", () => {
    const isr = [
      { member: "demo-1", volumeId: "v1" },
      { member: "demo-2", volumeId: "v2" },
    ];
    const obj: NaradTopic = {
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradTopic",
      metadata: { name: "t" },
      spec: { cluster: "demo", partitions: 5 },
      status: {
        assignments: [
          { partition: 0, owner: "demo-0" },
          {
            partition: 1,
            owner: "demo-1",
            leader: "demo-1",
            replicas: ["demo-1", "demo-2", "demo-0"],
            isr,
            leaderEpoch: 4,
          },
          // Offline: leader null (or dropped by a merge patch) with the other three set.
          { partition: 2, owner: "", leader: null, replicas: ["demo-2", "demo-0"], isr, leaderEpoch: 9 },
          { partition: 3, owner: "", replicas: ["demo-2", "demo-0"], isr, leaderEpoch: 9 },
          // Not all of the record: a single-copy entry.
          { partition: 4, owner: "demo-1", leader: "demo-1", replicas: ["demo-1"] },
        ],
      },
    };
    expect([...assignmentsOf(obj)]).toEqual([
      [0, "demo-0"],
      [1, "demo-1"],
      [4, "demo-1"],
    ]);
    const records = replicaAssignmentsOf(obj);
    expect([...records.keys()]).toEqual([1, 2, 3]);
    expect(records.get(1)).toEqual({
      partition: 1,
      leader: "demo-1",
      replicas: ["demo-1", "demo-2", "demo-0"],
      isr,
      leaderEpoch: 4,
    });
    expect(records.get(2)?.leader).toBeNull();
    expect(records.get(3)?.leader).toBeNull();
    // Malformed replicated fields are no record.
    const bad = { partition: 0, owner: "x", leader: "x", replicas: ["x"], leaderEpoch: 1 };
    expect(replicaAssignmentOf({ ...bad, isr: [{ member: "x" }] } as never)).toBeUndefined();
    expect(replicaAssignmentOf({ ...bad, isr: [], leaderEpoch: -1 })).toBeUndefined();
    expect(replicaAssignmentOf({ ...bad, isr: [], replicas: [1] } as never)).toBeUndefined();
    expect(replicaAssignmentOf({ ...bad, isr: [] })).toStrictEqual({
      partition: 0,
      leader: "x",
      replicas: ["x"],
      isr: [],
      leaderEpoch: 1,
    });
    expect(assignmentIndex(obj, 3)).toBe(3);
    expect(assignmentIndex(obj, 7)).toBe(-1);
  });
  it("carries a member's volume id", () => {
    const m = {
      id: "demo-0",
      pod: "demo-0",
      ordinal: 0,
      state: "Active" as const,
      since: "",
      address: "a:1",
    };
    expect(memberOf({ ...m, volumeId: "vol-1" })).toEqual({
      id: "demo-0",
      address: "a:1",
      state: "Active",
      volumeId: "vol-1",
    });
    expect(memberOf(m)).toEqual({ id: "demo-0", address: "a:1", state: "Active" });
  });
  it("maps subscriptions both ways, omitting unset settings", () => {
    const t = topicFixture("subs", {
      created_at: "2026-01-02T03:04:05.000Z",
      subscriptions: [{ name: "billing", visibility_timeout_ms: 200 }, { name: "search" }],
    });
    const obj = naradTopicFor(t, "ns", "demo");
    expect(obj.spec.subscriptions).toEqual([
      { name: "billing", visibilityTimeoutMs: 200 },
      { name: "search" },
    ]);
    const back = topicConfigOf({
      ...obj,
      metadata: { ...obj.metadata, uid: "uid-1", creationTimestamp: t.created_at as unknown as Date },
    });
    expect(back).toEqual({ ...t, uid: "uid-1" });
    expect(
      naradTopicFor(topicFixture("t", { subscriptions: [] }), "ns", "demo").spec.subscriptions,
    ).toBeUndefined();
    expect(specMergePatch({ subscriptions: [{ name: "a", max_in_flight_per_partition: 3 }] })).toEqual({
      spec: { subscriptions: [{ name: "a", maxInFlightPerPartition: 3 }] },
    });
    expect(specMergePatch({ subscriptions: [] })).toEqual({ spec: { subscriptions: null } });
  });
  it("builds a merge patch with only the fields given", () => {
    expect(specMergePatch({ partitions: 6 })).toEqual({ spec: { partitions: 6 } });
    expect(specMergePatch({ retention_ms: 5, max_acked_ahead_per_partition: 2 })).toEqual({
      spec: { retentionMs: 5, maxAckedAheadPerPartition: 2 },
    });
  });
});

describe("metastore settings", () => {
  it("defaults to the file metastore", () => {
    const c = loadConfig([], {}, "h", "/nonexistent");
    expect(c).toMatchObject({ metastore: "file", clusterName: "", namespace: "default" });
  });
  it("takes kubernetes with a cluster name from flags or environment", () => {
    expect(
      loadConfig(
        ["--metastore", "kubernetes", "--cluster-name", "demo", "--namespace", "ns", "--auth", "off"],
        {},
        "h",
      ),
    ).toMatchObject({
      metastore: "kubernetes",
      clusterName: "demo",
      namespace: "ns",
    });
    const env = {
      NARAD_METASTORE: "kubernetes",
      NARAD_CLUSTER_NAME: "demo",
      POD_NAMESPACE: "from-pod",
      NARAD_AUTH_FILE: "/users.json",
    };
    expect(loadConfig([], env, "h", "/nonexistent")).toMatchObject({
      clusterName: "demo",
      namespace: "from-pod",
    });
  });
  it("reads the namespace from the service-account file when POD_NAMESPACE is unset", async () => {
    const file = join(await mkdtemp(join(tmpdir(), "narad-ns-")), "namespace");
    await writeFile(file, "sa-ns\n");
    expect(loadConfig([], {}, "h", file).namespace).toBe("sa-ns");
    expect(loadConfig([], { NARAD_NAMESPACE: "explicit" }, "h", file).namespace).toBe("explicit");
  });
  it("refuses kubernetes without a cluster name and unknown metastores", () => {
    expect(() => loadConfig(["--metastore", "kubernetes"], {}, "h")).toThrow(/cluster-name/);
    expect(() => loadConfig(["--metastore", "etcd"], {}, "h")).toThrow(ConfigError);
  });
});

describe("movesInFlight", () => {
  it("keeps the operator's moves that have not ended, named by topic", () => {
    const move = (topic: string, partition: number, state: PartitionMoveStatus["state"]) => ({
      topic,
      partition,
      from: "b-2",
      to: "b-0",
      startedAt: "2026-01-01T00:00:00Z",
      state,
    });
    const topics = new Map([["orders-eu-3f2a", "Orders_EU"]]);
    expect(
      movesInFlight(
        [
          move("orders-eu-3f2a", 0, "pending"),
          move("orders-eu-3f2a", 1, "copying"),
          move("orders-eu-3f2a", 2, "ready"),
          move("orders-eu-3f2a", 3, "done"),
          move("orders-eu-3f2a", 4, "failed"),
          move("orders-eu-3f2a", 5, "cancelled"),
          move("deleted-topic", 0, "copying"),
        ],
        (kubeName) => topics.get(kubeName),
      ),
    ).toEqual([0, 1, 2].map((partition) => ({ topic: "Orders_EU", partition, from: "b-2", to: "b-0" })));
  });
});
