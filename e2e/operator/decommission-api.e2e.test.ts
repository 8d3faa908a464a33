// The cluster API's decommission against a real API server with the real
// operator and brokers (the local platform): POST/DELETE
// /v1/cluster/members/{id}/decommission become conditional writes of the
// NaradCluster's scale subresource, made by a broker with its own service
// account (its Role grants patch on that one cluster's scale), and the
// operator carries them out.
//   1. hostile input (no credentials, a non-admin user, unknown, malformed
//      and huge ids) and refused members (not the highest ordinal): JSON 4xx,
//      spec.replicas and the generation unchanged; a write from a stale
//      resourceVersion is refused by the API server with nothing changed;
//   2. POST for the highest member under a producer: 204, spec.replicas 3 → 2,
//      the member Decommissioning in GET /v1/cluster/members and its moves in
//      GET /v1/cluster/moves, then gone; a repeat is idempotent; member 0 is
//      then refused; every acknowledged record readable;
//   3. DELETE during a decommission: 204, spec.replicas back up, the operator
//      cancels it (DecommissionCancelled), members all Active again;
//   4. Narad (Go)'s own CLI, unchanged: `cluster members`, `cluster moves`,
//      `cluster decommission` (refused for a lower ordinal and an unknown id,
//      taken for the highest) and `cluster decommission --cancel`. It runs the
//      binary `npm run compat:narad-cli` caches (~/.cache/narad-go-cli); when
//      there is none the step is skipped with that message (building it needs
//      Go and Narad's sources).
// Numbers go to console.log ("decommission-api-e2e:").
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubeClusterScale, observationOf } from "../../broker/src/node/decommission.ts";
import { cachedNaradGoCli, naradGoCliPath, runNaradGoCli } from "../../compat/narad-cli/binary.ts";
import type { NaradCluster } from "../../packages/api/src/v1alpha1/types.ts";
import { stderrLog } from "../platform/log.ts";
import { basicAuth } from "./credentials.ts";
import { expectEveryAckReadableOnce } from "./expect-ledger.ts";
import { waitFor } from "./harness.ts";
import { BROKER_PORT, checkLedger, type HeaderSource, LoadProducer, PodSampler } from "./load.ts";
import { type SuiteCluster, startSuiteCluster } from "./suite.ts";

const log = stderrLog("decommission-api-e2e");
const NS = "decom";
const NAME = "dc";
const TOPIC = "events";
const PARTITIONS = 6;
const ADMIN = { user: "admin", password: "admin-secret-for-the-decommission-suite" };
const READER = { user: "reader", password: "reader-secret-for-the-decommission-suite" };

let s: SuiteCluster;
const admin: HeaderSource = () => basicAuth(ADMIN.user, ADMIN.password);
const reader: HeaderSource = () => basicAuth(READER.user, READER.password);

const cluster = (): Promise<NaradCluster> => s.resource();
const state = (c: NaradCluster, id: string) => c.status?.members?.find((m) => m.id === id)?.state;

/** One call to a broker (the first Ready pod unless `ip`): status and parsed JSON body (undefined when empty). */
async function call(
  method: string,
  path: string,
  headers: Record<string, string>,
  ip?: string,
): Promise<{ status: number; body: { error?: string; code?: string } | undefined; type: string }> {
  const target = ip ?? (await s.pods()).find((p) => p.ready && p.ip)?.ip;
  const r = await fetch(`http://${target}:${BROKER_PORT}${path}`, {
    method,
    headers,
    signal: AbortSignal.timeout(20_000),
  });
  const text = await r.text();
  return {
    status: r.status,
    type: r.headers.get("content-type") ?? "",
    body: text === "" ? undefined : (JSON.parse(text) as { error?: string; code?: string }),
  };
}
const decommission = (id: string, method: "POST" | "DELETE", headers = admin(), ip?: string) =>
  call(method, `/v1/cluster/members/${id}/decommission`, headers, ip);

/** Narad (Go)'s CLI, when `npm run compat:narad-cli` has built and cached it. */
const goCli = cachedNaradGoCli();
if (goCli === undefined)
  console.log(
    `decommission-api-e2e: skipping the Narad Go CLI step: no binary at ${naradGoCliPath()} (run \`npm run compat:narad-cli\` once to build it; needs Go and Narad's sources)`,
  );

/** `narad <args>` of Narad's CLI as the admin against a Ready broker (`ip`: that pod). */
async function narad(args: string[], ip?: string): Promise<{ status: number | null; output: string }> {
  const target = ip ?? (await s.pods()).find((p) => p.ready && p.ip)?.ip;
  return runNaradGoCli(goCli as string, args, {
    url: `http://${target}:${BROKER_PORT}`,
    user: ADMIN.user,
    password: ADMIN.password,
  });
}

describe("decommission through the cluster API", () => {
  beforeAll(async () => {
    // Our own users Secret: the operator's generated one has only the admin.
    const users = {
      users: [
        { name: ADMIN.user, password: ADMIN.password },
        { name: READER.user, password: READER.password, grants: [{ action: "consume", topics: TOPIC }] },
      ],
    };
    s = await startSuiteCluster({
      suite: "decommission-api",
      log,
      namespace: NS,
      name: NAME,
      applyFirst: [
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: `${NAME}-own-users`, namespace: NS },
          stringData: { "users.json": JSON.stringify(users) },
        },
      ],
      operatorIdentity: "decom-a",
      // Generous: on a loaded 2-core machine the operator's start alone can pass a minute.
      leadershipTimeoutMs: 240_000,
      spec: {
        replicas: 3,
        image: "ghcr.io/narad/narad:0.1.0",
        rebalance: true,
        storage: { reclaimPolicy: { whenScaled: "Delete" } },
        rollout: { downGraceSeconds: 120 },
        security: { auth: { enabled: true, usersSecret: `${NAME}-own-users` } },
      },
      ready: { settled: 3, timeoutMs: 240_000 },
      headers: admin,
      // One copy: partition moves are for single-copy partitions (a 3-broker cluster defaults to 3).
      topic: { name: TOPIC, partitions: PARTITIONS, assigned: true, replicationFactor: 1 },
    });
    // The binaries' build lock may be held by another suite's build: the wait counts here.
  }, 2_400_000);

  afterAll(async () => {
    await s?.stop();
  });

  it("hostile and refused requests: JSON 4xx, nothing changed", async () => {
    const before = await cluster();
    // want 0: any 4xx (the router or the route may refuse a malformed id first).
    const cases: Array<[string, "POST" | "DELETE", Record<string, string>, number]> = [
      [`${NAME}-2`, "POST", {}, 401],
      [`${NAME}-2`, "POST", reader(), 403],
      [`${NAME}-2`, "DELETE", reader(), 403],
      [`${NAME}-9`, "POST", admin(), 404],
      [`${NAME}-9`, "DELETE", admin(), 404],
      ["no-such-node", "POST", admin(), 404],
      [encodeURIComponent("dc-2/../dc-0"), "POST", admin(), 0],
      [encodeURIComponent("dc-2\u0000"), "POST", admin(), 0],
      [encodeURIComponent("'; drop"), "DELETE", admin(), 0],
      ["%E0%A4%A", "POST", admin(), 0],
      ["9".repeat(400), "POST", admin(), 0],
      [`${NAME}-0`, "POST", admin(), 409],
      [`${NAME}-1`, "POST", admin(), 409],
    ];
    for (const [id, method, headers, want] of cases) {
      const r = await decommission(id, method, headers);
      const got = want === 0 && r.status >= 400 && r.status < 500 ? 0 : r.status;
      expect({ id: id.slice(0, 40), method, status: got }).toEqual({
        id: id.slice(0, 40),
        method,
        status: want,
      });
      expect(r.type).toContain("application/json");
      expect(typeof r.body?.error).toBe("string");
    }
    // A huge id: the router refuses it before any route (414), still JSON.
    const huge = await decommission("x".repeat(20_000), "POST");
    expect(huge.status).toBeGreaterThanOrEqual(400);
    expect(huge.status).toBeLessThan(500);
    expect(huge.type).toContain("application/json");
    const lower = await decommission(`${NAME}-0`, "POST");
    console.log(`decommission-api-e2e: POST ${NAME}-0 → ${lower.status} ${lower.body?.error}`);
    expect(lower.body?.code).toBe("conflict");
    expect(lower.body?.error).toContain("removes pods from the top");
    expect(lower.body?.error).toContain(`only "${NAME}-2"`);
    // Nothing being decommissioned: a cancel changes nothing.
    expect((await decommission(`${NAME}-2`, "DELETE")).status).toBe(204);

    // The conditional write itself, against the API server: from a stale
    // resourceVersion it is refused and nothing changes.
    const scale = kubeClusterScale({
      kubeConfig: s.platform.kubeConfig,
      namespace: NS,
      clusterName: NAME,
      requestTimeoutMs: 5_000,
      retryAfterSeconds: 1,
    });
    const seen = await scale.read();
    expect(seen).toMatchObject({ replicas: 3 });
    await s.platform.kubectl([
      "-n",
      NS,
      "annotate",
      "naradcluster",
      NAME,
      "narad.dev/e2e-touch=1",
      "--overwrite",
    ]);
    expect(await scale.setReplicas(2, seen.resourceVersion)).toBe(false);

    const after = await cluster();
    expect(after.spec.replicas).toBe(3);
    expect(after.metadata.generation).toBe(before.metadata.generation);
    expect(observationOf(after).members.map((m) => m.state)).toEqual(["Active", "Active", "Active"]);
  });

  it("POST for the highest member scales down by one; its partitions move; every acknowledged record stays readable", async () => {
    const sampler = new PodSampler(() => 3, s.pods, log);
    const producer = new LoadProducer({
      tag: "d1",
      topic: TOPIC,
      ips: () => sampler.readyIps,
      headers: admin,
    });
    await sleep(3_000);
    const leaving = `${NAME}-2`;
    const ownedBefore = (await s.owners()).filter((o) => o === leaving).length;
    const t0 = Date.now();
    const r = await decommission(leaving, "POST");
    expect(r.status).toBe(204);
    expect((await cluster()).spec.replicas).toBe(2);
    // The same request again: idempotent, nothing more scaled down.
    expect((await decommission(leaving, "POST")).status).toBe(204);
    expect((await cluster()).spec.replicas).toBe(2);

    // Progress through the cluster API itself.
    let sawDecommissioning = false;
    let sawMoves = 0;
    let sawGone = false;
    while (Date.now() - t0 < 300_000) {
      const members = await call("GET", "/v1/cluster/members", admin());
      const list = (members.body as { members?: Array<{ id: string; state: string; draining: boolean }> })
        .members;
      const m = list?.find((x) => x.id === leaving);
      if (m?.state === "Decommissioning" && m.draining) sawDecommissioning = true;
      const moves = (await call("GET", "/v1/cluster/moves", admin())).body as {
        moves?: Array<{ from: string }>;
      };
      sawMoves = Math.max(sawMoves, (moves.moves ?? []).filter((x) => x.from === leaving).length);
      if (m === undefined && sawDecommissioning) {
        sawGone = true;
        break;
      }
      await sleep(200);
    }
    // At 2: member 0 is still not the highest.
    const zero = await decommission(`${NAME}-0`, "POST");
    expect(zero.status).toBe(409);
    await s.waitSettled(2, 300_000, "the cluster settled at 2");
    const tookMs = Date.now() - t0;
    await sleep(1_000);
    await producer.stop();
    await sampler.stop();
    console.log(
      `decommission-api-e2e: POST ${leaving} → settled at 2 in ${(tookMs / 1000).toFixed(1)} s; it owned ${ownedBefore} partition(s); ` +
        `seen Decommissioning ${sawDecommissioning}, at most ${sawMoves} move(s) from it in /v1/cluster/moves, gone ${sawGone}; produce: ${producer.summary()}`,
    );
    expect(sawDecommissioning).toBe(true);
    if (ownedBefore > 0) expect(sawMoves).toBeGreaterThan(0);
    expect(sawGone).toBe(true);
    expect(new Set(await s.owners())).toEqual(new Set([`${NAME}-0`, `${NAME}-1`]));
    // The removed member: unknown now.
    expect((await decommission(leaving, "DELETE")).status).toBe(404);

    const report = await expectEveryAckReadableOnce(producer, {
      pods: s.pods,
      topic: TOPIC,
      partitions: PARTITIONS,
      headers: admin,
      logPrefix: "decommission-api-e2e",
      timeoutMs: 90_000,
      throughOthers: "all",
    });
    expect(report.acked).toBeGreaterThan(0);
  });

  it("DELETE during a decommission scales back up and the operator cancels it", async () => {
    await s.platform.kubectl(["-n", NS, "scale", "naradcluster", NAME, "--replicas=3"]);
    await s.waitSettled(3, 240_000, "3 Active members again");
    const leaving = `${NAME}-2`;
    await s.waitOwnsPartitions(leaving, 180_000);
    const sampler = new PodSampler(() => 3, s.pods, log);
    const producer = new LoadProducer({
      tag: "d2",
      topic: TOPIC,
      ips: () => sampler.readyIps,
      headers: admin,
    });
    expect((await decommission(leaving, "POST")).status).toBe(204);
    await waitFor(
      async () => {
        const c = await cluster();
        return state(c, leaving) === "Decommissioning" && (c.status?.scale?.moves ?? []).length > 0;
      },
      { timeoutMs: 60_000, what: `${leaving} Decommissioning with moves in flight`, intervalMs: 100 },
    );
    // Ask another broker than the leaving one: any member carries it out.
    const other = (await s.pods()).find((p) => p.name === `${NAME}-1`)?.ip;
    const cancel = await decommission(leaving, "DELETE", admin(), other);
    expect(cancel.status).toBe(204);
    expect((await cluster()).spec.replicas).toBe(3);
    await waitFor(
      async () => {
        return (await s.eventText("DecommissionCancelled")).includes(`decommission of ${leaving} cancelled`);
      },
      { timeoutMs: 60_000, what: "DecommissionCancelled", intervalMs: 300 },
    );
    await s.waitSettled(3, 180_000, "back to 3 Active members");
    // Nothing to cancel any more: 204 with nothing changed.
    expect((await decommission(leaving, "DELETE")).status).toBe(204);
    expect((await cluster()).spec.replicas).toBe(3);
    await producer.stop();
    await sampler.stop();
    const ips = (await s.pods()).filter((p) => p.ready && p.ip).map((p) => p.ip as string);
    const report = await checkLedger(producer, {
      ip: ips[0]!,
      topic: TOPIC,
      partitions: PARTITIONS,
      headers: admin,
      timeoutMs: 90_000,
    });
    console.log(`decommission-api-e2e: cancel: ${report.line}; produce: ${producer.summary()}`);
    expect(sampler.deleted.size).toBe(0);
    expect(report.lost.slice(0, 10)).toEqual([]);
    expect(report.duplicated.slice(0, 10)).toEqual([]);
  });

  it.skipIf(goCli === undefined)(
    "Narad's Go CLI, unchanged: cluster members, moves, decommission and --cancel",
    async () => {
      await s.waitSettled(3, 240_000, "3 Active members before the CLI step");
      const t0 = Date.now();
      const members = await narad(["cluster", "members"]);
      expect(members.status, members.output).toBe(0);
      const listed = JSON.parse(members.output) as {
        members: Array<{ id: string; state: string; status: string; owned_partitions: number }>;
      };
      expect(listed.members.map((m) => [m.id, m.state, m.status])).toEqual([
        [`${NAME}-0`, "Active", "alive"],
        [`${NAME}-1`, "Active", "alive"],
        [`${NAME}-2`, "Active", "alive"],
      ]);
      const moves = await narad(["cluster", "moves"]);
      expect(moves.status, moves.output).toBe(0);
      expect(JSON.parse(moves.output)).toHaveProperty("moves");
      // Refused: a lower ordinal (409, naming the highest) and an unknown id (404), nothing changed.
      const lower = await narad(["cluster", "decommission", `${NAME}-0`]);
      expect(lower.status).toBe(1);
      expect(lower.output).toMatch(/409/);
      expect(lower.output).toContain(`only "${NAME}-2"`);
      const unknown = await narad(["cluster", "decommission", `${NAME}-9`]);
      expect(unknown.status).toBe(1);
      expect(unknown.output).toMatch(/404/);
      expect((await cluster()).spec.replicas).toBe(3);

      const leaving = `${NAME}-2`;
      const owned = listed.members.find((m) => m.id === leaving)?.owned_partitions ?? 0;
      const take = await narad(["cluster", "decommission", leaving]);
      expect(take.status, take.output).toBe(0);
      expect((await cluster()).spec.replicas).toBe(2);
      // Progress as the CLI prints it: the member draining, then its moves.
      let sawDraining = false;
      let sawMove = false;
      await waitFor(
        async () => {
          const m = JSON.parse((await narad(["cluster", "members"])).output) as {
            members: Array<{ id: string; state: string; draining: boolean }>;
          };
          const me = m.members.find((x) => x.id === leaving);
          if (me?.state === "Decommissioning" && me.draining) sawDraining = true;
          const mv = JSON.parse((await narad(["cluster", "moves"])).output) as {
            moves: Array<{ from: string }>;
          };
          if (mv.moves.some((x) => x.from === leaving)) sawMove = true;
          return sawDraining && (sawMove || owned === 0);
        },
        {
          timeoutMs: 60_000,
          what: `${leaving} draining with its moves, as the Go CLI prints them`,
          intervalMs: 200,
        },
      );
      // Cancel through another member's broker: spec.replicas back up, the operator cancels it.
      const other = (await s.pods()).find((p) => p.name === `${NAME}-1`)?.ip;
      const cancel = await narad(["cluster", "decommission", leaving, "--cancel"], other);
      expect(cancel.status, cancel.output).toBe(0);
      expect((await cluster()).spec.replicas).toBe(3);
      await s.waitSettled(3, 180_000, "back to 3 Active members after the CLI's cancel");
      const after = JSON.parse((await narad(["cluster", "members"])).output) as {
        members: Array<{ id: string; state: string }>;
      };
      expect(after.members.map((m) => m.state)).toEqual(["Active", "Active", "Active"]);
      console.log(
        `decommission-api-e2e: Narad Go CLI: members, moves, decommission (refused ${NAME}-0 and ${NAME}-9, took ${leaving}, owning ${owned}), --cancel; settled again in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      );
    },
  );
});
