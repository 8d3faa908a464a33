import type { V1Pod, V1Secret } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import { actionMessage, actionPatch, choosePod } from "./actions.ts";
import { DEFAULT_LOCAL_PORT, parseArgs } from "./args.ts";
import { connectionInfo, renderCredentials, usersSecretToRead } from "./credentials.ts";
import { formatAge, table } from "./format.ts";
import { renderStatus, statusView } from "./status-view.ts";
import { usageOf } from "./usage.ts";

const NOW = Date.parse("2026-03-01T12:00:00Z");

function cluster(over: Partial<NaradCluster> = {}): NaradCluster {
  return {
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradCluster",
    metadata: { name: "demo", namespace: "shop", generation: 4 },
    spec: { replicas: 3, image: "ghcr.io/narad/narad:9.9.9" },
    ...over,
  };
}

function pod(name: string, ready: boolean, node?: string, terminating = false): V1Pod {
  return {
    metadata: { name, ...(terminating ? { deletionTimestamp: new Date(NOW) } : {}) },
    ...(node === undefined ? {} : { spec: { containers: [], nodeName: node } }),
    status: { conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  };
}

describe("parseArgs", () => {
  it("reads a command, its cluster and the connection flags anywhere on the line", () => {
    expect(
      parseArgs(["-n", "shop", "status", "demo", "--context=kind", "--kubeconfig", "/k", "-o", "yaml"]),
    ).toEqual({
      kind: "run",
      command: { name: "status", cluster: "demo", output: "yaml" },
      connection: { namespace: "shop", context: "kind", kubeconfig: "/k" },
    });
    expect(parseArgs(["status", "demo", "-ojson", "-nshop"])).toMatchObject({
      command: { output: "json" },
      connection: { namespace: "shop" },
    });
    expect(parseArgs(["status", "demo", "-o=yaml", "-n=x"])).toMatchObject({
      command: { output: "yaml" },
      connection: { namespace: "x" },
    });
    expect(parseArgs(["credentials", "demo", "--json", "--namespace=x"])).toEqual({
      kind: "run",
      command: { name: "credentials", cluster: "demo", json: true },
      connection: { namespace: "x" },
    });
  });

  it("port-forward: default and explicit local port, address, pod", () => {
    expect(parseArgs(["port-forward", "demo"])).toMatchObject({
      command: { name: "port-forward", cluster: "demo", localPort: DEFAULT_LOCAL_PORT, address: "127.0.0.1" },
    });
    expect(parseArgs(["port-forward", "demo", "0", "--address", "0.0.0.0", "--pod", "demo-2"])).toMatchObject(
      {
        command: { localPort: 0, address: "0.0.0.0", pod: "demo-2" },
      },
    );
    for (const bad of ["65536", "-1", "80x", "1.5"]) {
      const parsed = parseArgs(["port-forward", "demo", "--", bad]);
      expect(parsed).toMatchObject({ kind: "usage-error", command: "port-forward" });
    }
  });

  it("help and version win over everything else", () => {
    expect(parseArgs([])).toEqual({ kind: "usage-error", message: "no command given" });
    expect(parseArgs(["--help"])).toEqual({ kind: "help" });
    expect(parseArgs(["status", "--help"])).toEqual({ kind: "help", command: "status" });
    expect(parseArgs(["help", "restart"])).toEqual({ kind: "help", command: "restart" });
    expect(parseArgs(["--version"])).toEqual({ kind: "version" });
    expect(parseArgs(["version"])).toEqual({ kind: "version" });
  });

  it.each([
    [["nope", "demo"], 'unknown command "nope"'],
    [["status"], "status needs a cluster name"],
    [["status", "a", "b"], 'unexpected argument "b"'],
    [["status", "demo", "-o", "wide"], '--output must be json, yaml or table, not "wide"'],
    [["status", "demo", "--json"], "--json is not a flag of status"],
    [["restart", "demo", "-o", "json"], "--output is not a flag of restart"],
    [["restart", "demo", "--force"], "unknown flag --force"],
    [["status", "demo", "-n"], "-n needs a value"],
    [["status", "demo", "--context="], "--context needs a value"],
  ])("%j is a usage error: %s", (argv, message) => {
    expect(parseArgs(argv)).toMatchObject({ kind: "usage-error", message });
  });
});

describe("usage", () => {
  it("lists every command, and each command's help names its flags and the connection flags", () => {
    const all = usageOf(undefined);
    for (const c of ["status", "restart", "rebalance", "credentials", "port-forward"])
      expect(all).toContain(c);
    expect(usageOf("status")).toContain("-o, --output");
    expect(usageOf("credentials")).toContain("--json");
    expect(usageOf("restart")).toContain("narad.dev/restartedAt");
    expect(usageOf("rebalance")).toContain("narad.dev/rebalance");
    expect(usageOf("port-forward")).toMatch(/--kubeconfig[\s\S]*--context[\s\S]*--namespace/);
  });
});

describe("format", () => {
  it("aligns columns and trims the last one", () => {
    expect(table(["A", "BB"], [["xxx", "y"]])).toEqual(["A    BB", "xxx  y"]);
  });
  it("ages like kubectl, coarser", () => {
    const at = (s: number) => new Date(NOW - s * 1000).toISOString();
    expect([5, 119, 120, 7199, 7200, 172_799, 172_800].map((s) => formatAge(at(s), NOW))).toEqual([
      "5s",
      "119s",
      "2m",
      "119m",
      "2h",
      "47h",
      "2d",
    ]);
    expect(formatAge("not a time", NOW)).toBe("-");
    expect(formatAge(at(-30), NOW)).toBe("0s");
  });
});

describe("status", () => {
  const busy = cluster({
    status: {
      observedGeneration: 4,
      phase: "Rolling",
      replicas: 3,
      readyReplicas: 2,
      currentRevision: "demo-aaa",
      updateRevision: "demo-bbb",
      membershipEpoch: 12,
      conditions: [
        {
          type: "Ready",
          status: "False",
          reason: "RollingUpdate",
          message: "restarting demo-2",
          lastTransitionTime: "2026-03-01T11:59:00Z",
        },
      ],
      members: [
        {
          id: "demo-0",
          pod: "demo-0",
          ordinal: 0,
          state: "Active",
          since: "2026-03-01T10:00:00Z",
          walPendingRecords: 0,
          revision: "demo-bbb",
        },
        {
          id: "demo-1",
          pod: "demo-1",
          ordinal: 1,
          state: "Active",
          since: "2026-03-01T10:00:00Z",
          walPendingRecords: 17,
        },
        { id: "demo-2", pod: "demo-2", ordinal: 2, state: "Maintenance", since: "2026-03-01T11:59:30Z" },
        { id: "demo-3", pod: "demo-3", ordinal: 3, state: "Decommissioning", since: "2026-03-01T11:58:00Z" },
      ],
      roll: { podInFlight: "demo-2", startedAt: "2026-03-01T11:59:30Z", reason: "image" },
      scale: {
        decommissioning: "demo-3",
        movesDone: 1,
        moves: [
          {
            topic: "orders",
            partition: 5,
            from: "demo-3",
            to: "demo-0",
            startedAt: "2026-03-01T11:58:00Z",
            state: "copying",
            progressAt: "2026-03-01T11:59:50Z",
          },
          {
            topic: "orders",
            partition: 6,
            from: "demo-3",
            to: "demo-1",
            startedAt: "2026-03-01T11:50:00Z",
            state: "copying",
            aborting: {
              reason: "no progress for 300s",
              stalled: true,
              since: "2026-03-01T11:59:00Z",
              attempts: 2,
            },
          },
        ],
        moveRetries: [
          {
            topic: "audit",
            partition: 0,
            attempts: 1,
            notBefore: "2026-03-01T12:00:30Z",
            avoid: "demo-1",
            reason: "stalled",
          },
        ],
      },
    },
  });
  const pods = [
    pod("demo-0", true, "node-a"),
    pod("demo-1", true, "node-b"),
    pod("demo-2", false, "node-a", true),
  ];

  it("joins members with their pods and keeps absent fields absent", () => {
    const view = statusView(busy, pods);
    expect(view.replicas).toEqual({ spec: 3, pods: 3, ready: 2 });
    expect(view.image).toBe("ghcr.io/narad/narad:9.9.9");
    expect(view.members.map((m) => [m.id, m.ready, m.node, m.walPendingRecords])).toEqual([
      ["demo-0", true, "node-a", 0],
      ["demo-1", true, "node-b", 17],
      ["demo-2", false, "node-a", undefined], // terminating: not Ready whatever its condition says
      ["demo-3", undefined, undefined, undefined],
    ]);
    expect("walPendingRecords" in view.members[2]!).toBe(false);
    expect(view.scale?.moves).toHaveLength(2);
  });

  it("a cluster the operator has not seen yet: defaults from the spec, no status", () => {
    const view = statusView(cluster({ spec: {} }), []);
    expect(view.replicas).toEqual({ spec: 3 });
    expect(view.image).toMatch(/^ghcr\.io\/narad\/narad:/);
    expect(view.phase).toBeUndefined();
    const text = renderStatus(view, NOW);
    expect(text).toContain("Phase:       - (no status yet)");
    expect(text).toContain("Members:\n  (none)");
    expect(text).not.toContain("Rolling restart");
  });

  it("renders the summary, conditions, members, roll and moves", () => {
    const text = renderStatus(statusView(busy, pods), NOW);
    expect(text).toContain("NaradCluster shop/demo");
    expect(text).toContain("Phase:       Rolling   (observed generation 4 of 4)");
    expect(text).toContain("Replicas:    3 desired, 3 pods, 2 ready");
    expect(text).toContain("Revision:    demo-aaa -> demo-bbb (update pending)");
    expect(text).toContain("Epoch:       12");
    expect(text).toMatch(/Ready\s+False\s+RollingUpdate\s+60s\s+restarting demo-2/);
    expect(text).toMatch(/MEMBER\s+STATE\s+SINCE\s+POD\s+READY\s+NODE\s+WAL PENDING\s+REVISION/);
    expect(text).toMatch(/demo-1\s+Active\s+2h\s+demo-1\s+true\s+node-b\s+17\s+-/);
    expect(text).toMatch(/demo-3\s+Decommissioning\s+2m\s+demo-3\s+no pod\s+-\s+-\s+-/);
    expect(text).toContain("Rolling restart: demo-2 (image), started 30s ago");
    expect(text).toContain("decommissioning: demo-3");
    expect(text).toMatch(/orders\s+5\s+demo-3\s+demo-0\s+copying\s+2m\s+10s/);
    expect(text).toContain("aborting (no progress for 300s)");
    expect(text).toMatch(/audit\s+0\s+1\s+2026-03-01T12:00:30Z\s+demo-1\s+stalled/);
  });
});

describe("restart and rebalance", () => {
  it("patch one action annotation with the time, milliseconds included", () => {
    const now = new Date("2026-03-01T12:00:00.123Z");
    expect(actionPatch("restart", now)).toEqual({
      metadata: { annotations: { "narad.dev/restartedAt": "2026-03-01T12:00:00.123Z" } },
    });
    expect(actionPatch("rebalance", now)).toEqual({
      metadata: { annotations: { "narad.dev/rebalance": "2026-03-01T12:00:00.123Z" } },
    });
    const annotated = cluster({
      metadata: { name: "demo", namespace: "shop", annotations: { "narad.dev/restartedAt": "t" } },
    });
    expect(actionMessage("restart", annotated)).toBe(
      "naradcluster shop/demo annotated narad.dev/restartedAt=t: the operator restarts the brokers one at a time, each drained first\n",
    );
    const paused = { ...annotated, spec: { rollout: { paused: true } } };
    expect(actionMessage("restart", paused)).toMatch(
      /\nnote: spec.rollout.paused is true: no pod restarts until the rollout is unpaused\n$/,
    );
    expect(actionMessage("rebalance", paused)).not.toContain("paused");
  });
});

describe("port-forward's pod", () => {
  const withMembers = cluster({
    status: {
      members: [
        { id: "demo-0", pod: "demo-0", ordinal: 0, state: "Decommissioning", since: "" },
        { id: "demo-1", pod: "demo-1", ordinal: 1, state: "Active", since: "" },
        { id: "demo-10", pod: "demo-10", ordinal: 10, state: "Active", since: "" },
        { id: "demo-2", pod: "demo-2", ordinal: 2, state: "Active", since: "" },
      ],
    },
  });

  it("a Ready pod of an Active member, lowest ordinal (numerically) first", () => {
    const pods = [pod("demo-10", true), pod("demo-0", true), pod("demo-2", true), pod("demo-1", false)];
    expect(choosePod(withMembers, pods)).toEqual({ ok: true, pod: "demo-2" });
  });

  it("any Ready pod when no Active member has one; an error when none is Ready", () => {
    expect(choosePod(withMembers, [pod("demo-0", true), pod("demo-1", false)])).toEqual({
      ok: true,
      pod: "demo-0",
    });
    expect(choosePod(withMembers, [pod("demo-1", false), pod("demo-2", true, undefined, true)])).toEqual({
      ok: false,
      error: "no Ready broker pod in shop/demo",
    });
  });

  it("--pod: that pod, if it is one of the cluster's and Ready", () => {
    const pods = [pod("demo-0", true), pod("demo-1", false)];
    expect(choosePod(withMembers, pods, "demo-0")).toEqual({ ok: true, pod: "demo-0" });
    expect(choosePod(withMembers, pods, "demo-1")).toEqual({
      ok: false,
      error: "pod shop/demo-1 is not Ready",
    });
    expect(choosePod(withMembers, pods, "other-0")).toEqual({
      ok: false,
      error: "pod other-0 is not a broker of shop/demo",
    });
  });
});

describe("credentials", () => {
  const generated: V1Secret = {
    data: {
      username: Buffer.from("admin").toString("base64"),
      password: Buffer.from("s3cret").toString("base64"),
      "users.json": Buffer.from("{}").toString("base64"),
    },
  };

  it("the client Service URL and the generated Secret's login", () => {
    const c = cluster();
    expect(usersSecretToRead(c)).toBe("demo-users");
    const info = connectionInfo(c, generated);
    expect(info).toEqual({
      cluster: "demo",
      namespace: "shop",
      url: "http://demo.shop.svc:7942",
      auth: true,
      usersSecret: "demo-users",
      username: "admin",
      password: "s3cret",
    });
    const text = renderCredentials(info);
    expect(text).toContain("URL:       http://demo.shop.svc:7942\nUsername:  admin\nPassword:  s3cret\n");
    expect(text).toContain("curl -u admin:s3cret http://demo.shop.svc:7942/v1/topics");
  });

  it("auth off: no Secret to read, no login", () => {
    const c = cluster({ spec: { security: { auth: { enabled: false } } } });
    expect(usersSecretToRead(c)).toBeUndefined();
    const info = connectionInfo(c, undefined);
    expect(info).toEqual({
      cluster: "demo",
      namespace: "shop",
      url: "http://demo.shop.svc:7942",
      auth: false,
    });
    expect(renderCredentials(info)).toContain("Auth:      off");
  });

  it("TLS, a named users Secret with users.json only, or none yet: https and a note", () => {
    const c = cluster({
      spec: { security: { auth: { usersSecret: "team-users" }, tls: { secretName: "demo-tls" } } },
    });
    expect(usersSecretToRead(c)).toBe("team-users");
    const own = connectionInfo(c, { stringData: { "users.json": "{}" } });
    expect(own.url).toBe("https://demo.shop.svc:7942");
    expect(own.tlsSecret).toBe("demo-tls");
    expect(own.username).toBeUndefined();
    expect(own.note).toBe(
      "Secret shop/team-users has no username/password keys: its users are in users.json",
    );
    expect(connectionInfo(c, undefined).note).toMatch(/^Secret shop\/team-users does not exist yet/);
    expect(renderCredentials(own)).toContain("curl https://demo.shop.svc:7942/v1/topics");
  });
});
