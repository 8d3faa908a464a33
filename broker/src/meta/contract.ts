// The Metastore contract as a reusable vitest suite: every backend runs the
// same tests through describeMetastoreContract(name, factory). The factory
// gives a backing store that can be opened more than once (to check that
// state survives a reopen) and cleaned up at the end.

import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NaradError } from "../errors.ts";
import type { Metastore, NewTopic, TopicConfig } from "./types.ts";

export interface MetastoreBacking {
  /** Opens a Metastore on the shared backing state (may be called several times). */
  open(): Promise<Metastore>;
  /** Removes the backing state; every opened store is already closed. */
  cleanup(): Promise<void>;
}

export interface ContractOptions {
  /** How long to wait for asynchronous effects (watch events) before failing. */
  settleMs?: number;
}

const POLL_MS = 20;

async function eventually(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(POLL_MS);
  }
}

async function expectNaradError(p: Promise<unknown>, code: NaradError["code"]): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, `expected NaradError ${code}`).toBeInstanceOf(NaradError);
  expect((err as NaradError).code).toBe(code);
}

export function topicFixture(name: string, overrides: Partial<NewTopic> = {}): NewTopic {
  return {
    name,
    partitions: 3,
    retention_ms: 3_600_000,
    retention_bytes: 1_048_576,
    visibility_timeout_ms: 30_000,
    max_in_flight_per_partition: 512,
    max_acked_ahead_per_partition: 256,
    created_at: new Date().toISOString(),
    ...overrides,
  };
}

function configFields(t: NewTopic | TopicConfig): Omit<NewTopic, "created_at"> {
  const { created_at: _ignored, ...rest } = t as TopicConfig;
  const { uid: _uid, ...fields } = rest;
  return fields;
}

export function describeMetastoreContract(
  name: string,
  factory: () => Promise<MetastoreBacking>,
  options: ContractOptions = {},
): void {
  const settleMs = options.settleMs ?? 5_000;
  // Unique per run so suites can share a backing store (a namespace) safely.
  const run = randomBytes(3).toString("hex");
  let n = 0;
  const unique = (stem: string): string => `${stem}-${run}-${++n}`;

  describe(`Metastore contract: ${name}`, () => {
    let backing: MetastoreBacking;
    let store: Metastore;

    beforeAll(async () => {
      backing = await factory();
      store = await backing.open();
    });

    afterAll(async () => {
      await store?.close();
      await backing?.cleanup();
    });

    it("creates a topic and reads it back with every field", async () => {
      const t = topicFixture(unique("create"));
      const created = await store.createTopic(t);
      expect(configFields(created)).toEqual(configFields(t));
      expect(Number.isNaN(Date.parse(created.created_at))).toBe(false);
      expect(store.getTopic(t.name)).toEqual(created);
      expect(store.listTopics().some((x) => x.name === t.name)).toBe(true);
    });

    it("keeps names that are not valid Kubernetes object names", async () => {
      const names = [unique("Upper_Case"), unique("dots.and_under"), unique("-lead")];
      for (const nm of names) await store.createTopic(topicFixture(nm, { partitions: 1 }));
      for (const nm of names) expect(store.getTopic(nm)?.name).toBe(nm);
    });

    it("lists topics sorted by name", async () => {
      const names = [unique("zeta"), unique("Alpha"), unique("alpha"), unique("m_id")];
      for (const nm of names) await store.createTopic(topicFixture(nm, { partitions: 1 }));
      const listed = store.listTopics().map((t) => t.name);
      expect([...listed].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(listed);
      for (const nm of names) expect(listed).toContain(nm);
    });

    it("refuses a second topic of the same name with CONFLICT", async () => {
      const t = topicFixture(unique("dup"));
      await store.createTopic(t);
      await expectNaradError(store.createTopic({ ...t, partitions: 5 }), "CONFLICT");
      expect(store.getTopic(t.name)?.partitions).toBe(3);
    });

    it("assigns an owner to every partition of a new topic", async () => {
      const t = await store.createTopic(topicFixture(unique("owners"), { partitions: 4 }));
      for (let p = 0; p < t.partitions; p++) expect(store.ownerOf(t.name, p)).not.toBe("");
    });

    it("updates a topic and keeps what the patch does not mention", async () => {
      const t = await store.createTopic(topicFixture(unique("update"), { partitions: 2 }));
      const updated = await store.updateTopic(t.name, { partitions: 6, retention_ms: 7_200_000 });
      expect(updated).toMatchObject({ name: t.name, partitions: 6, retention_ms: 7_200_000 });
      expect(updated.retention_bytes).toBe(t.retention_bytes);
      expect(updated.max_in_flight_per_partition).toBe(t.max_in_flight_per_partition);
      expect(store.getTopic(t.name)).toMatchObject({ partitions: 6, retention_ms: 7_200_000 });
      await store.updateTopic(t.name, { max_acked_ahead_per_partition: 64 });
      expect(store.getTopic(t.name)).toMatchObject({ partitions: 6, max_acked_ahead_per_partition: 64 });
    });

    it("keeps declared subscriptions through create, update (whole-list replace) and reopen", async () => {
      const subs = [
        { name: "billing", visibility_timeout_ms: 200, max_in_flight_per_partition: 4 },
        { name: "search" },
      ];
      const t = await store.createTopic(topicFixture(unique("subs"), { subscriptions: subs }));
      expect(t.subscriptions).toEqual(subs);
      expect(store.getTopic(t.name)?.subscriptions).toEqual(subs);
      const next = [{ name: "audit", max_acked_ahead_per_partition: 8 }];
      const updated = await store.updateTopic(t.name, { subscriptions: next });
      expect(updated.subscriptions).toEqual(next);
      expect(updated.partitions).toBe(t.partitions);
      expect(store.getTopic(t.name)?.subscriptions).toEqual(next);
      const reopened = await backing.open();
      try {
        await eventually(
          "subscriptions after a reopen",
          () => JSON.stringify(reopened.getTopic(t.name)?.subscriptions) === JSON.stringify(next),
          settleMs,
        );
      } finally {
        await reopened.close();
      }
      // An empty list clears the declaration (a backend may store [] or drop the field).
      await store.updateTopic(t.name, { subscriptions: [] });
      expect(store.getTopic(t.name)?.subscriptions ?? []).toEqual([]);
    });

    it("keeps a topic's schema and its version through create, update and reopen", async () => {
      const v1 = { version: 1, definition: '{"type":"object","properties":{"id":{"type":"integer"}}}' };
      const t = await store.createTopic(topicFixture(unique("schema"), { schema: v1 }));
      expect(t.schema).toEqual(v1);
      expect(store.getTopic(t.name)?.schema).toEqual(v1);
      const v2 = {
        version: 2,
        definition: '{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}}}',
      };
      const updated = await store.updateTopic(t.name, { schema: v2 });
      expect(updated.schema).toEqual(v2);
      expect(updated.partitions).toBe(t.partitions);
      // A patch that does not name the schema keeps it.
      await store.updateTopic(t.name, { retention_ms: 7_200_000 });
      expect(store.getTopic(t.name)?.schema).toEqual(v2);
      const reopened = await backing.open();
      try {
        await eventually(
          "the schema after a reopen",
          () => JSON.stringify(reopened.getTopic(t.name)?.schema) === JSON.stringify(v2),
          settleMs,
        );
      } finally {
        await reopened.close();
      }
      // A topic created without one has none.
      const plain = await store.createTopic(topicFixture(unique("no-schema")));
      expect(plain.schema).toBeUndefined();
    });

    it("keeps fan-out links (parent, delay, attach epoch and time) through create, update, unlink and reopen", async () => {
      const parent = await store.createTopic(topicFixture(unique("parent"), { retention_ms: 0 }));
      const link = {
        parent: parent.name,
        fanout_delay_ms: 60_000,
        attach_epoch: "0123456789abcdef",
        attached_at_ms: 1_700_000_000_123,
      };
      // Created as a child: linked in the same write.
      const child = await store.createTopic(topicFixture(unique("child"), link));
      expect(child).toMatchObject(link);
      expect(store.getTopic(child.name)).toMatchObject(link);
      // Attached later, then a patch that does not name the link keeps it.
      const other = await store.createTopic(topicFixture(unique("other")));
      expect(other.parent).toBeUndefined();
      const attach = { parent: parent.name, attach_epoch: "fedcba9876543210", attached_at_ms: 5 };
      const attached = await store.updateTopic(other.name, { ...attach, fanout_delay_ms: undefined });
      expect(attached).toMatchObject(attach);
      expect(attached.fanout_delay_ms).toBeUndefined();
      await store.updateTopic(other.name, { retention_ms: 7_200_000 });
      expect(store.getTopic(other.name)).toMatchObject({ ...attach, retention_ms: 7_200_000 });
      const reopened = await backing.open();
      try {
        await eventually(
          "links after a reopen",
          () =>
            reopened.getTopic(child.name)?.attach_epoch === link.attach_epoch &&
            reopened.getTopic(other.name)?.attach_epoch === attach.attach_epoch,
          settleMs,
        );
        expect(reopened.getTopic(child.name)).toMatchObject(link);
        expect(reopened.getTopic(parent.name)?.parent).toBeUndefined();
      } finally {
        await reopened.close();
      }
      // Unlinked: every link field goes.
      await store.updateTopic(child.name, {
        parent: undefined,
        fanout_delay_ms: undefined,
        attach_epoch: undefined,
        attached_at_ms: undefined,
      });
      const unlinked = store.getTopic(child.name);
      expect(unlinked?.parent).toBeUndefined();
      expect(unlinked?.fanout_delay_ms).toBeUndefined();
      expect(unlinked?.attach_epoch).toBeUndefined();
      expect(unlinked?.attached_at_ms).toBeUndefined();
      expect(unlinked?.partitions).toBe(child.partitions);
    });

    it("answers NOT_FOUND for updates and deletes of unknown topics", async () => {
      await expectNaradError(store.updateTopic(unique("missing"), { partitions: 4 }), "NOT_FOUND");
      await expectNaradError(store.deleteTopic(unique("missing")), "NOT_FOUND");
      expect(store.getTopic(unique("missing"))).toBeUndefined();
    });

    it("deletes a topic", async () => {
      const t = await store.createTopic(topicFixture(unique("delete")));
      await store.deleteTopic(t.name);
      expect(store.getTopic(t.name)).toBeUndefined();
      expect(store.listTopics().some((x) => x.name === t.name)).toBe(false);
      await expectNaradError(store.deleteTopic(t.name), "NOT_FOUND");
    });

    it("calls onChange listeners after the change is applied", async () => {
      const seen: string[] = [];
      const name = unique("listen");
      store.onChange(() => {
        if (store.getTopic(name) !== undefined && !seen.includes("created")) seen.push("created");
        if (seen.includes("created") && store.getTopic(name) === undefined && !seen.includes("deleted"))
          seen.push("deleted");
      });
      await store.createTopic(topicFixture(name));
      await eventually("onChange after create", () => seen.includes("created"), settleMs);
      await store.deleteTopic(name);
      await eventually("onChange after delete", () => seen.includes("deleted"), settleMs);
    });

    it("confirms deletion only for topics that are gone", async () => {
      const t = await store.createTopic(topicFixture(unique("confirm")));
      expect(await store.confirmTopicDeleted(t.name)).toBe(false);
      await store.deleteTopic(t.name);
      await eventually(
        "confirmTopicDeleted true after delete",
        () => store.confirmTopicDeleted(t.name),
        settleMs,
      );
      expect(await store.confirmTopicDeleted(unique("never-existed"))).toBe(true);
    });

    it("gives every incarnation its own uid, and confirms an incarnation gone once a namesake replaced it", async () => {
      const name = unique("incarnation");
      const first = await store.createTopic(topicFixture(name, { partitions: 2 }));
      expect(first.uid).not.toBe("");
      expect(await store.confirmTopicDeleted(name, first.uid)).toBe(false);
      await store.deleteTopic(name);
      await eventually("deletion reached the replica", () => store.getTopic(name) === undefined, settleMs);
      const second = await store.createTopic(topicFixture(name, { partitions: 1 }));
      expect(second.uid).not.toBe(first.uid);
      await eventually(
        "recreation reached the replica",
        () => store.getTopic(name)?.uid === second.uid,
        settleMs,
      );
      // The old incarnation is gone although its name lives on; the new one is not.
      await eventually(
        "old incarnation confirmed gone",
        () => store.confirmTopicDeleted(name, first.uid),
        settleMs,
      );
      expect(await store.confirmTopicDeleted(name, second.uid)).toBe(false);
      // A record without a uid belongs to whatever topic has the name.
      expect(await store.confirmTopicDeleted(name)).toBe(false);
      await store.deleteTopic(name);
    });

    it("keeps replication_factor and min_insync_replicas through create, a change of the minimum, and reopen", async () => {
      // As many copies as the backend has brokers for, up to 3 (the file backend: one).
      const brokers = store
        .members()
        .filter((m) => m.state !== "Removed" && m.state !== "Decommissioning").length;
      const rf = brokers >= 3 ? 3 : 1;
      const t = await store.createTopic(
        topicFixture(unique("replicated"), { replication_factor: rf, min_insync_replicas: rf }),
      );
      expect(t).toMatchObject({ replication_factor: rf, min_insync_replicas: rf });
      expect(store.getTopic(t.name)).toMatchObject({ replication_factor: rf, min_insync_replicas: rf });
      const updated = await store.updateTopic(t.name, { min_insync_replicas: 1 });
      expect(updated).toMatchObject({ replication_factor: rf, min_insync_replicas: 1 });
      // A patch that does not name them keeps both.
      await store.updateTopic(t.name, { retention_ms: 7_200_000 });
      expect(store.getTopic(t.name)).toMatchObject({ replication_factor: rf, min_insync_replicas: 1 });
      const reopened = await backing.open();
      try {
        await eventually(
          "replication settings after a reopen",
          () =>
            reopened.getTopic(t.name)?.min_insync_replicas === 1 &&
            reopened.getTopic(t.name)?.replication_factor === rf,
          settleMs,
        );
      } finally {
        await reopened.close();
      }
      // A topic created without them has none (one copy).
      const plain = await store.createTopic(topicFixture(unique("single-copy"), { partitions: 1 }));
      expect(plain.replication_factor).toBeUndefined();
      expect(plain.min_insync_replicas).toBeUndefined();
    });

    it("has no replicated record for a single-copy partition, and an ISR write for one is stale", async () => {
      const t = await store.createTopic(topicFixture(unique("no-record"), { partitions: 2 }));
      await eventually("owners", () => store.ownerOf(t.name, 1) !== "", settleMs);
      expect(store.replicaAssignment?.(t.name, 0)).toBeUndefined();
      expect(store.replicaAssignment?.(unique("missing"), 0)).toBeUndefined();
      if (store.recordIsr === undefined) return;
      const owner = store.ownerOf(t.name, 0);
      const isr = [{ member: owner, volumeId: "v" }];
      expect(await store.recordIsr(t.name, 0, { leader: owner, leaderEpoch: 0 }, isr)).toMatchObject({
        kind: "stale",
      });
      expect(
        await store.recordIsr(unique("missing"), 0, { leader: owner, leaderEpoch: 0 }, isr),
      ).toMatchObject({ kind: "stale" });
    });

    it("reports at least one member", () => {
      const members = store.members();
      expect(members.length).toBeGreaterThan(0);
      for (const m of members) expect(m.id).not.toBe("");
    });

    it("shows the same topics after a reopen", async () => {
      const t = await store.createTopic(topicFixture(unique("reopen"), { partitions: 2 }));
      const other = await backing.open();
      try {
        expect(other.getTopic(t.name)).toEqual(store.getTopic(t.name));
        const mine = store.listTopics().map((x) => x.name);
        expect(other.listTopics().map((x) => x.name)).toEqual(mine);
      } finally {
        await other.close();
      }
    });
  });
}
