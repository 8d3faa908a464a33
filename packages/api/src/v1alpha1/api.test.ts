import { readFileSync } from "node:fs";
import { join } from "node:path";
import { load, loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import { allCrds } from "./crds.ts";
import {
  brokerConfigFromSpec,
  clusterDefaults,
  topicDefaults,
  topicName,
  withClusterDefaults,
  withTopicDefaults,
} from "./defaults.ts";
import { type JSONSchemaProps, naradClusterSchema, naradTopicSchema, naradUserSchema } from "./schema.ts";
import type {
  BrokerConfigFile,
  BrokerSpec,
  MemberStatus,
  NaradClusterSpec,
  NaradClusterStatus,
  NaradTopicSpec,
  NaradTopicStatus,
  PodSpecOverrides,
  RolloutSpec,
  StorageSpec,
} from "./types.ts";
import { applyDefaults, validate, valuePaths, walk } from "./validate.ts";

const root = join(import.meta.dirname, "../../../..");
const readYaml = (p: string) => load(readFileSync(join(root, p), "utf8")) as Record<string, unknown>;
const prop = (s: JSONSchemaProps, k: string) => s.properties![k]!;

// Fixtures with every field of the TS types present: `Required<...>` at each
// level makes the compiler list every field of the type, and the tests below
// check each against the schema both ways (nothing extra, nothing missing).
const storage: Required<StorageSpec> = {
  size: "100Gi",
  storageClassName: "fast-ssd",
  reclaimPolicy: { whenScaled: "Retain", whenDeleted: "Retain" },
};
const broker: Required<BrokerSpec> = {
  logLevel: "info",
  wal: { segmentBytes: 67108864, syncBackstopMs: 10 },
  dispatch: { idlePollMs: 10, commitTimeoutMs: 30000 },
  topicDefaults: { partitions: 3 },
  maxBodyBytes: 1048576,
  retentionCheckIntervalMs: 60000,
  replication: "on",
};
const pod: Required<PodSpecOverrides> = {
  labels: { team: "payments" },
  annotations: { "example.com/owner": "payments" },
  affinity: {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 100,
          podAffinityTerm: {
            topologyKey: "kubernetes.io/hostname",
            labelSelector: { matchLabels: { "narad.dev/cluster": "prod" } },
          },
        },
      ],
    },
  },
  tolerations: [{ key: "dedicated", operator: "Equal", value: "narad", effect: "NoSchedule" }],
  nodeSelector: { "kubernetes.io/os": "linux" },
  topologySpreadConstraints: [
    {
      maxSkew: 1,
      topologyKey: "topology.kubernetes.io/zone",
      whenUnsatisfiable: "ScheduleAnyway",
      labelSelector: { matchLabels: { "narad.dev/cluster": "prod" } },
    },
  ],
  priorityClassName: "narad-critical",
  serviceAccountName: "narad-prod",
};
const rollout: Required<RolloutSpec> = {
  drainTimeoutSeconds: 60,
  paused: false,
  force: false,
  downGraceSeconds: 30,
  replacementTimeoutSeconds: 300,
  releaseStuckReplacement: true,
  gateTimeoutSeconds: 60,
};
const fullClusterSpec: Required<NaradClusterSpec> = {
  replicas: 5,
  image: "ghcr.io/narad/narad:0.1.0",
  imagePullPolicy: "IfNotPresent",
  imagePullSecrets: [{ name: "ghcr-pull" }],
  resources: {
    requests: { cpu: "1", memory: "2Gi" },
    limits: { memory: "4Gi" },
    claims: [{ name: "gpu", request: "fast" }],
  },
  storage,
  broker,
  pod,
  rollout,
  security: {
    auth: { enabled: true, usersSecret: "prod-users" },
    clusterSecret: "prod-cluster-secret",
    tls: { secretName: "prod-tls" },
    networkPolicy: {
      enabled: true,
      allowFrom: [
        { namespaceSelector: { matchLabels: { team: "shop" } } },
        { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "narad-system" } } },
      ],
    },
  },
  metrics: {
    serviceMonitor: { enabled: true, interval: "30s", labels: { release: "prometheus" } },
    podMonitor: { enabled: false, interval: "30s", labels: { release: "prometheus" } },
  },
  rebalance: false,
  moves: { stallTimeoutSeconds: 300, retryBackoffSeconds: 30 },
};

const member: Required<MemberStatus> = {
  id: "demo-0",
  pod: "demo-0",
  ordinal: 0,
  address: "10.0.0.5:7942",
  state: "Active",
  since: "2026-01-01T00:00:00Z",
  walPendingRecords: 0,
  revision: "demo-5d8f",
  volumeId: "7c1d0a52-6f3e-4c55-9a1b-0d2e7f3a9b10",
  failedSince: "2026-01-01T00:01:00Z",
};
const fullClusterStatus: Required<NaradClusterStatus> = {
  observedGeneration: 2,
  phase: "Running",
  replicas: 3,
  readyReplicas: 3,
  conditions: [
    {
      type: "Ready",
      status: "True",
      observedGeneration: 2,
      lastTransitionTime: "2026-01-01T00:00:00Z",
      reason: "AllMembersActive",
      message: "3/3 members Active",
    },
  ],
  members: [member],
  membershipEpoch: 4,
  currentRevision: "demo-5d8f",
  updateRevision: "demo-5d8f",
  roll: {
    podInFlight: "demo-1",
    startedAt: "2026-01-01T00:00:00Z",
    reason: "image changed",
    podReadyAtStart: true,
    podUid: "1c1c1c1c-0000-4000-8000-000000000002",
    gateBlockedSince: "2026-01-01T00:00:05Z",
    handoffDoneAt: "2026-01-01T00:00:01Z",
    leadersKept: ["orders/3"],
  },
  selector: "app.kubernetes.io/instance=demo",
  scale: {
    decommissioning: "demo-3",
    moves: [
      {
        topic: "orders",
        partition: 2,
        from: "demo-3",
        to: "demo-0",
        startedAt: "2026-01-01T00:00:00Z",
        state: "copying",
        progressAt: "2026-01-01T00:00:01Z",
        progressMark: "copying:1048576:0",
        aborting: {
          reason: "no progress for 300s",
          stalled: true,
          since: "2026-01-01T00:05:01Z",
          attempts: 2,
          lastError: "timeout",
        },
        stuckSince: "2026-01-01T00:05:01Z",
      },
    ],
    movesDone: 1,
    refusingProduceSince: "2026-01-01T00:00:00Z",
    rebalanceHandled: "2026-01-01T00:00:00Z",
    moveRetries: [
      {
        topic: "orders",
        partition: 1,
        attempts: 1,
        notBefore: "2026-01-01T00:06:00Z",
        avoid: "demo-1",
        reason: "no progress for 300s",
      },
    ],
  },
  drainCancel: { pod: "demo-2", since: "2026-01-01T00:00:00Z", attempts: 1, lastError: "timeout" },
};
const fullTopicSpec: Required<NaradTopicSpec> = {
  cluster: "demo",
  name: "Orders.EU",
  partitions: 6,
  retentionMs: 604800000,
  retentionBytes: 0,
  visibilityTimeoutMs: 30000,
  maxInFlightPerPartition: 1024,
  maxAckedAheadPerPartition: 1024,
  subscriptions: [
    {
      name: "billing",
      visibilityTimeoutMs: 60000,
      maxInFlightPerPartition: 16,
      maxAckedAheadPerPartition: 256,
    },
  ],
  schema: { version: 2, definition: '{"type":"object","properties":{"id":{"type":"integer"}}}' },
  parent: "orders",
  delayMs: 60000,
  replicationFactor: 3,
  minInsyncReplicas: 2,
};
const fullTopicStatus: Required<NaradTopicStatus> = {
  observedGeneration: 1,
  conditions: [
    {
      type: "Ready",
      status: "True",
      observedGeneration: 1,
      lastTransitionTime: "2026-01-01T00:00:00Z",
      reason: "Assigned",
      message: "",
    },
  ],
  phase: "Ready",
  assignments: [
    { partition: 0, owner: "demo-0" },
    {
      partition: 1,
      owner: "demo-1",
      leader: "demo-1",
      replicas: ["demo-1", "demo-2", "demo-0"],
      isr: [
        { member: "demo-1", volumeId: "v1" },
        { member: "demo-2", volumeId: "v2" },
      ],
      leaderEpoch: 4,
    },
  ],
  assignmentEpoch: 1,
  replicationFactor: 3,
  minInsyncReplicas: 2,
  underReplicatedPartitions: 1,
  offlinePartitions: 0,
};

/** Schema property paths (not map values, not inside opaque core objects). */
function schemaPaths(s: JSONSchemaProps): string[] {
  const opaque: string[] = [];
  const out: string[] = [];
  for (const [p, node] of walk(s)) {
    if (p === "" || p.includes("{}") || opaque.some((o) => p.startsWith(o))) continue;
    if (node["x-kubernetes-preserve-unknown-fields"]) opaque.push(`${p}.`, `${p}[]`);
    out.push(p);
  }
  return out;
}

describe.each([
  ["NaradCluster spec", prop(naradClusterSchema, "spec"), fullClusterSpec],
  ["NaradCluster status", prop(naradClusterSchema, "status"), fullClusterStatus],
  ["NaradTopic spec", prop(naradTopicSchema, "spec"), fullTopicSpec],
  ["NaradTopic status", prop(naradTopicSchema, "status"), fullTopicStatus],
])("types.ts ↔ schema.ts: %s", (_name, schema, fixture) => {
  it("a fixture with every TS field validates (no field missing from the schema)", () => {
    expect(validate(fixture, schema)).toEqual([]);
  });
  it("every schema property appears in the fixture (no field missing from the types)", () => {
    const have = valuePaths(fixture);
    expect(schemaPaths(schema).filter((p) => !have.has(p))).toEqual([]);
  });
});

describe("schema invariants", () => {
  it.each(allCrds().map((c) => [c.spec.names.kind, c] as const))(
    "%s: every property has a description",
    (_k, crd) => {
      const missing = [...walk(crd.spec.versions[0]!.schema.openAPIV3Schema)]
        // metadata may hold nothing but `type`: the API server rejects even a description there.
        .filter(([p, s]) => !/(\[\]|\{\})$/.test(p) && p !== ".metadata" && !s.description)
        .map(([p]) => p);
      expect(missing).toEqual([]);
    },
  );

  it.each(allCrds().map((c) => [c.spec.names.kind, c] as const))(
    "%s: structural (typed nodes, keyed lists)",
    (_k, crd) => {
      const problems: string[] = [];
      for (const [p, s] of walk(crd.spec.versions[0]!.schema.openAPIV3Schema)) {
        if (s.type === undefined && !s["x-kubernetes-int-or-string"]) problems.push(`${p}: no type`);
        if (
          s["x-kubernetes-int-or-string"] &&
          JSON.stringify(s.anyOf) !== '[{"type":"integer"},{"type":"string"}]'
        ) {
          problems.push(`${p}: int-or-string needs anyOf integer|string`);
        }
        for (const key of s["x-kubernetes-list-map-keys"] ?? []) {
          if (!s.items?.required?.includes(key)) problems.push(`${p}: list-map key ${key} must be required`);
        }
        if (p === ".metadata" && JSON.stringify(s) !== '{"type":"object"}')
          problems.push(".metadata: only type allowed");
      }
      expect(problems).toEqual([]);
    },
  );

  it.each(allCrds().map((c) => [c.spec.names.kind, c] as const))(
    "%s: every default is valid per its schema",
    (_k, crd) => {
      const bad = [...walk(crd.spec.versions[0]!.schema.openAPIV3Schema)]
        .filter(([, s]) => s.default !== undefined)
        .flatMap(([p, s]) => validate(applyDefaults(s.default, s), s, p));
      expect(bad).toEqual([]);
    },
  );

  it.each(allCrds().map((c) => [c.spec.names.kind, c] as const))(
    "%s: printer column paths exist",
    (_k, crd) => {
      const v = crd.spec.versions[0]!;
      for (const col of v.additionalPrinterColumns) {
        let node: JSONSchemaProps | undefined = v.schema.openAPIV3Schema;
        // ".status.conditions[?(@.type==\"Ready\")].status" → status, conditions, [], status
        const steps = col.jsonPath
          .replace(/\[\?\(.*?\)\]/g, ".[]")
          .split(".")
          .filter(Boolean);
        for (const step of steps) {
          if (node === undefined) break;
          if (step === "[]") node = node.items;
          else if (node.properties === undefined && node.type === "object")
            break; // metadata: opaque here
          else node = node.properties?.[step];
        }
        expect(node, `${col.name}: ${col.jsonPath}`).toBeDefined();
      }
    },
  );

  it("subresources: status on both, scale on NaradCluster", () => {
    const [c, t] = allCrds();
    expect(c!.spec.versions[0]!.subresources.scale).toEqual({
      specReplicasPath: ".spec.replicas",
      statusReplicasPath: ".status.replicas",
      labelSelectorPath: ".status.selector",
    });
    expect(t!.spec.versions[0]!.subresources).toEqual({ status: {} });
  });
});

describe("examples", () => {
  it.each([
    ["examples/naradcluster.yaml", naradClusterSchema],
    ["examples/naradcluster-full.yaml", naradClusterSchema],
    ["examples/naradtopic.yaml", naradTopicSchema],
  ])("%s validates", (file, schema) => {
    expect(validate(applyDefaults(readYaml(file), schema), schema)).toEqual([]);
  });

  it("examples/naraduser.yaml: every NaradUser validates, with grants, a generated and a given password", () => {
    const docs = loadAll(readFileSync(join(root, "examples/naraduser.yaml"), "utf8")) as Array<
      Record<string, unknown> & { kind: string; spec?: Record<string, unknown> }
    >;
    const users = docs.filter((d) => d.kind === "NaradUser");
    expect(users).toHaveLength(2);
    for (const u of users) expect(validate(applyDefaults(u, naradUserSchema), naradUserSchema)).toEqual([]);
    expect(users.some((u) => u.spec?.["passwordSecret"] !== undefined)).toBe(true);
    expect(users.some((u) => u.spec?.["passwordSecret"] === undefined)).toBe(true);
  });

  it("a NaradUser grant with an unknown action or a bad pattern is refused", () => {
    const bad = (grant: object) =>
      validate({ spec: { cluster: "c", grants: [grant] } }, naradUserSchema).length > 0;
    expect(bad({ action: "fly", topics: "x" })).toBe(true);
    expect(bad({ action: "produce", topics: "a*b" })).toBe(true);
    expect(bad({ action: "produce" })).toBe(true);
    expect(bad({ action: "produce", topics: "orders-*", groups: "g" })).toBe(false);
  });

  it("the full example shows every knob (equals the all-fields fixture)", () => {
    expect(readYaml("examples/naradcluster-full.yaml")["spec"]).toEqual(fullClusterSpec);
  });

  it("the six-line example is just replicas", () => {
    expect(readFileSync(join(root, "examples/naradcluster.yaml"), "utf8").trim().split("\n")).toHaveLength(6);
  });
});

describe("defaults", () => {
  it("withClusterDefaults({}) agrees with every OpenAPI default the API server would apply", () => {
    const server = applyDefaults({ spec: {} }, naradClusterSchema) as { spec: unknown };
    const resolved = withClusterDefaults({});
    const check = (v: unknown, r: unknown, path: string): void => {
      if (v !== null && typeof v === "object" && !Array.isArray(v)) {
        for (const [k, sub] of Object.entries(v))
          check(sub, (r as Record<string, unknown>)[k], `${path}.${k}`);
      } else expect(r, path).toEqual(v);
    };
    check(server.spec, resolved, "spec");
  });

  it("resolves a six-line cluster", () => {
    const r = withClusterDefaults({ replicas: 3 });
    expect(r.replicas).toBe(3);
    expect(r.image).toBe("ghcr.io/narad/narad:0.1.0");
    expect(r.storage).toEqual({
      size: "10Gi",
      reclaimPolicy: { whenScaled: "Retain", whenDeleted: "Retain" },
    });
    expect(r.rollout).toEqual({
      drainTimeoutSeconds: 60,
      paused: false,
      force: false,
      downGraceSeconds: 30,
      replacementTimeoutSeconds: 300,
      releaseStuckReplacement: true,
      gateTimeoutSeconds: 60,
    });
    expect(r.metrics.serviceMonitor).toEqual({ enabled: false, labels: {} });
    expect(r.metrics.podMonitor).toEqual({ enabled: false, labels: {} });
    expect(r.rebalance).toBe(false);
    expect(r.broker.logLevel).toBe(clusterDefaults.brokerLogLevel);
  });

  it("keeps user values, normalises numeric quantities, does not mutate input", () => {
    const spec: NaradClusterSpec = { resources: { requests: { cpu: 2 } }, rollout: { paused: true } };
    const copy = structuredClone(spec);
    const r = withClusterDefaults(spec);
    expect(r.resources.requests).toEqual({ cpu: "2" });
    expect(r.rollout.paused).toBe(true);
    expect(r.rollout.drainTimeoutSeconds).toBe(60);
    expect(spec).toEqual(copy);
    expect(withClusterDefaults(fullClusterSpec).pod.serviceAccountName).toBe("narad-prod");
  });

  it("withTopicDefaults fills every field", () => {
    expect(withTopicDefaults({ cluster: "demo" })).toEqual({ cluster: "demo", ...topicDefaults });
    expect(withTopicDefaults(fullTopicSpec)).toEqual(fullTopicSpec);
  });

  it("topicName prefers spec.name", () => {
    expect(topicName({ metadata: { name: "orders" }, spec: { cluster: "c" } })).toBe("orders");
    expect(topicName({ metadata: { name: "orders-eu" }, spec: { cluster: "c", name: "Orders.EU" } })).toBe(
      "Orders.EU",
    );
  });

  it("brokerConfigFromSpec uses exactly the broker's config-file keys", () => {
    const allowed: (keyof BrokerConfigFile)[] = [
      "logLevel",
      "walSegmentBytes",
      "walSyncBackstopMs",
      "dispatchIdlePollMs",
      "dispatchCommitTimeoutMs",
      "topicPartitions",
      "maxBodyBytes",
      "retentionCheckIntervalMs",
      "drainTimeoutMs",
      "replication",
    ];
    const full = brokerConfigFromSpec(withClusterDefaults(fullClusterSpec));
    expect(Object.keys(full).sort()).toEqual([...allowed].sort());
    expect(full.drainTimeoutMs).toBe(60_000);
    expect(brokerConfigFromSpec(withClusterDefaults({}))).toEqual({
      logLevel: "info",
      drainTimeoutMs: 60_000,
    });
  });
});

describe("spec.image (issue #21 item 11)", () => {
  it("has no schema default, so the API server never writes one and the operator's brokerImage applies", () => {
    const image = naradClusterSchema.properties?.["spec"]?.properties?.["image"];
    expect(image).toBeDefined();
    expect(image?.default).toBeUndefined();
  });
});
