import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { withClusterDefaults } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradCluster, NaradClusterSpec } from "../../../../packages/api/src/v1alpha1/types.ts";
import { FakeBrokerClient } from "../../broker-client/fake.ts";
import { SECRET_RECHECK_MS } from "../../constants.ts";
import { guardedApi } from "../../kube/api.ts";
import { MemoryRecorder } from "../../kube/events.ts";
import { ManualClock } from "../../kube/manual-clock.ts";
import { ControllerMemory, type ReconcileDeps } from "../deps.ts";
import { FakeKube } from "../fake-kube.ts";
import type { ClusterContext } from "./context.ts";
import { ensureSecurityObjects } from "./step-secrets.ts";

const NS = "ns1";

function setup(spec: NaradClusterSpec) {
  const clock = new ManualClock(Date.parse("2026-11-29T12:00:00Z"));
  const kube = new FakeKube(() => clock.now());
  const recorder = new MemoryRecorder();
  const deps = {
    caches: kube.caches,
    api: guardedApi(kube, new AbortController().signal),
    recorder,
    brokers: new FakeBrokerClient(),
    clock,
    log: pino({ level: "silent" }),
    memory: new ControllerMemory(),
    defaultBrokerImage: undefined,
  } as unknown as ReconcileDeps;
  const cluster = kube.create(kube.clusters, {
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradCluster",
    metadata: { name: "demo", namespace: NS },
    spec,
  } as NaradCluster);
  const ctx = (): ClusterContext => ({
    cluster,
    spec: withClusterDefaults(cluster.spec),
    namespace: NS,
    name: "demo",
    deps,
    log: deps.log,
    refused: [],
    configHash: undefined,
    roll: undefined,
    requeueAfterMs: undefined,
  });
  // Secret writes only (a disabled NetworkPolicy costs one idempotent delete per operator lifetime).
  const secretWrites = () => kube.writes.filter((w) => w.includes("Secret"));
  return { clock, kube, recorder, ctx, secretWrites };
}

describe("security step", () => {
  it("creates the cluster secret and the users Secret once, with random contents, and never overwrites them", async () => {
    const t = setup({ security: { auth: { enabled: true } } });
    await ensureSecurityObjects(t.ctx());
    expect(t.secretWrites()).toEqual([
      "create Secret demo-cluster-secret",
      "create Secret demo-users",
      "create Secret demo-api-users",
    ]);
    // The Users API's store: no users yet, owned by the cluster (garbage-collected with it).
    const apiUsers = await t.kube.getSecret(NS, "demo-api-users");
    expect(JSON.parse(Buffer.from(apiUsers?.data?.["users.json"] ?? "", "base64").toString())).toEqual({
      version: 1,
      users: [],
    });
    expect(apiUsers?.metadata?.ownerReferences?.map((r) => r.kind)).toEqual(["NaradCluster"]);
    const rpc = await t.kube.getSecret(NS, "demo-cluster-secret");
    const secret = Buffer.from(rpc?.data?.["secret"] ?? "", "base64").toString();
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    const users = await t.kube.getSecret(NS, "demo-users");
    const password = Buffer.from(users?.data?.["password"] ?? "", "base64").toString();
    expect(password).toMatch(/^[0-9a-f]{48}$/);
    const file = JSON.parse(Buffer.from(users?.data?.["users.json"] ?? "", "base64").toString());
    expect(file.users[0]).toMatchObject({ name: "admin", password });

    // A second cluster gets different material.
    const other = setup({ security: { auth: { enabled: true } } });
    await ensureSecurityObjects(other.ctx());
    const rpc2 = await other.kube.getSecret(NS, "demo-cluster-secret");
    expect(rpc2?.data?.["secret"]).not.toBe(rpc?.data?.["secret"]);

    // Present: no write, even after the recheck interval.
    t.kube.writes.length = 0;
    await ensureSecurityObjects(t.ctx());
    await t.clock.advance(SECRET_RECHECK_MS + 1);
    await ensureSecurityObjects(t.ctx());
    expect(t.secretWrites()).toEqual([]);
    expect((await t.kube.getSecret(NS, "demo-cluster-secret"))?.data).toEqual(rpc?.data);

    // Deleted by someone: recreated at the next check.
    t.kube.other.delete("Secret/ns1/demo-cluster-secret");
    await t.clock.advance(SECRET_RECHECK_MS + 1);
    await ensureSecurityObjects(t.ctx());
    expect(t.secretWrites()).toEqual(["create Secret demo-cluster-secret"]);
  });

  it("does not create a users Secret when auth is off", async () => {
    const t = setup({ security: { auth: { enabled: false } } });
    await ensureSecurityObjects(t.ctx());
    expect(t.secretWrites()).toEqual(["create Secret demo-cluster-secret"]);
  });

  it("reports a Secret the spec names but nobody created, instead of inventing it", async () => {
    const t = setup({ security: { auth: { enabled: true, usersSecret: "mine" }, clusterSecret: "rpc" } });
    const ctx = t.ctx();
    await ensureSecurityObjects(ctx);
    // The API users Secret always has the cluster's name, so it is always created.
    expect(t.secretWrites()).toEqual(["create Secret demo-api-users"]);
    expect(t.recorder.events.filter((e) => e.reason === "SecretMissing").map((e) => e.type)).toEqual([
      "Warning",
      "Warning",
    ]);
    expect(ctx.refused).toHaveLength(2);
  });

  it("applies the NetworkPolicy when enabled and deletes it when disabled", async () => {
    const t = setup({ security: { networkPolicy: { enabled: true } } });
    await ensureSecurityObjects(t.ctx());
    expect(t.kube.other.has("NetworkPolicy/ns1/demo-brokers")).toBe(true);
    t.kube.writes.length = 0;
    await ensureSecurityObjects(t.ctx());
    expect(t.kube.writes.filter((w) => w.includes("NetworkPolicy"))).toEqual([]);
    t.kube.updateSpec(t.kube.clusters, NS, "demo", (s) => {
      s.security = { networkPolicy: { enabled: false } };
    });
    const ctx = t.ctx();
    ctx.cluster = t.kube.clusters.get(NS, "demo") as NaradCluster;
    ctx.spec = withClusterDefaults(ctx.cluster.spec);
    await ensureSecurityObjects(ctx);
    expect(t.kube.other.has("NetworkPolicy/ns1/demo-brokers")).toBe(false);
  });
});
