import { describe, expect, it } from "vitest";
import { withClusterDefaults } from "../../../packages/api/src/v1alpha1/defaults.ts";
import { needsApply, withAppliedHash } from "./applied-hash.ts";
import { brokerConfigJson, configHash, configMapSpec } from "./configmap.ts";
import { commonLabels, resourceNames, selectorLabels, selectorString } from "./labels.ts";
import { ownerReference } from "./owner.ts";
import { podDisruptionBudgetSpec } from "./pdb.ts";
import { brokerServiceAccountName, roleBindingSpec, roleSpec, serviceAccountSpec } from "./rbac.ts";
import { podMonitorSpec, serviceMonitorSpec } from "./service-monitor.ts";
import { clientServiceSpec, headlessServiceSpec } from "./services.ts";
import { statefulSetSpec } from "./statefulset.ts";
import { testCluster } from "./test-fixtures.ts";

const cluster = testCluster({ replicas: 3, image: "ghcr.io/narad/narad:1.0" });
const spec = withClusterDefaults(cluster.spec);

function sts(overrides = {}, hash = "abc") {
  const c = testCluster({ replicas: 3, image: "ghcr.io/narad/narad:1.0", ...overrides });
  return statefulSetSpec({ cluster: c, spec: withClusterDefaults(c.spec), configHash: hash });
}

describe("labels", () => {
  it("selects by name, instance and cluster; common labels add managed-by", () => {
    expect(selectorLabels("demo")).toEqual({
      "app.kubernetes.io/name": "narad",
      "app.kubernetes.io/instance": "demo",
      "narad.dev/cluster": "demo",
    });
    expect(commonLabels("demo")["app.kubernetes.io/managed-by"]).toBe("narad-operator");
    expect(selectorString("demo")).toBe(
      "app.kubernetes.io/name=narad,app.kubernetes.io/instance=demo,narad.dev/cluster=demo",
    );
  });
});

describe("ownerReference", () => {
  it("is a blocking controller reference", () => {
    expect(ownerReference(cluster)).toEqual({
      apiVersion: "narad.dev/v1alpha1",
      kind: "NaradCluster",
      name: "demo",
      uid: "uid-demo",
      controller: true,
      blockOwnerDeletion: true,
    });
  });
  it("refuses a cluster without uid", () => {
    const c = testCluster();
    delete c.metadata.uid;
    expect(() => ownerReference(c)).toThrow(/uid/);
  });
});

describe("every owned object", () => {
  const objects = [
    serviceAccountSpec(cluster),
    roleSpec(cluster),
    roleBindingSpec(cluster),
    configMapSpec(cluster, spec),
    headlessServiceSpec(cluster),
    clientServiceSpec(cluster),
    statefulSetSpec({ cluster, spec, configHash: "h" }),
    podDisruptionBudgetSpec(cluster, 3),
    serviceMonitorSpec(cluster, withClusterDefaults({ metrics: { serviceMonitor: { enabled: true } } }))!,
  ];
  it("lives in the cluster namespace, is owned by it and labelled", () => {
    for (const o of objects) {
      expect(o.metadata?.namespace).toBe("ns1");
      expect(o.metadata?.ownerReferences).toEqual([ownerReference(cluster)]);
      expect(o.metadata?.labels).toMatchObject(commonLabels("demo"));
    }
    expect(new Set(objects.map((o) => `${o.kind}/${o.metadata?.name}`)).size).toBe(objects.length);
  });
});

describe("rbac", () => {
  it("grants brokers topic create/patch/delete, read-only cluster status and patch of topic status (the ISR)", () => {
    const rules = roleSpec(cluster).rules ?? [];
    expect(rules).toContainEqual({
      apiGroups: ["narad.dev"],
      resources: ["naradtopics"],
      verbs: ["get", "list", "watch", "create", "patch", "delete"],
    });
    expect(rules).toContainEqual({
      apiGroups: ["narad.dev"],
      resources: ["naradtopics/status"],
      verbs: ["get", "patch"],
    });
    expect(rules).toContainEqual({
      apiGroups: ["narad.dev"],
      resources: ["naradclusters"],
      verbs: ["get", "list", "watch"],
    });
    expect(rules.flatMap((r) => r.verbs)).not.toContain("update");
    // ConfigMaps: create, and everything else only on the producer registry's.
    expect(rules.filter((r) => r.resources?.includes("configmaps"))).toEqual([
      { apiGroups: [""], resources: ["configmaps"], verbs: ["create"] },
      {
        apiGroups: [""],
        resources: ["configmaps"],
        verbs: ["get", "list", "watch", "patch"],
        resourceNames: [resourceNames("demo").producerRegistry],
      },
    ]);
    // The scale subresource: patch of this cluster's only (a decommission request), no get/update, no other cluster.
    expect(rules.filter((r) => r.resources?.some((x) => x.startsWith("naradclusters")))).toEqual([
      { apiGroups: ["narad.dev"], resources: ["naradclusters"], verbs: ["get", "list", "watch"] },
      { apiGroups: ["narad.dev"], resources: ["naradclusters/status"], verbs: ["get"] },
      {
        apiGroups: ["narad.dev"],
        resources: ["naradclusters/scale"],
        verbs: ["patch"],
        resourceNames: [cluster.metadata.name],
      },
    ]);
    // Secrets: get and patch of the API users Secret only.
    expect(rules.filter((r) => r.resources?.includes("secrets"))).toEqual([
      {
        apiGroups: [""],
        resources: ["secrets"],
        verbs: ["get", "patch"],
        resourceNames: [resourceNames("demo").apiUsers],
      },
    ]);
    // Status: patch of naradtopics/status only (a leader's ISR compare-and-swap), never update,
    // never NaradCluster status.
    expect(
      rules
        .filter((r) => r.resources?.some((x) => x.endsWith("/status")))
        .map((r) => [r.resources?.join(","), r.verbs.join(",")]),
    ).toEqual([
      ["naradtopics/status", "get,patch"],
      ["naradclusters/status", "get"],
    ]);
  });
  it("binds the role to the broker service account, or the user's override", () => {
    const rb = roleBindingSpec(cluster);
    expect(rb.roleRef.name).toBe(resourceNames("demo").role);
    expect(rb.subjects).toEqual([{ kind: "ServiceAccount", name: "demo-broker", namespace: "ns1" }]);
    expect(brokerServiceAccountName(testCluster({ pod: { serviceAccountName: "mine" } }))).toBe("mine");
  });
});

describe("configmap", () => {
  it("holds exactly the broker's config keys, camelCase", () => {
    const s = withClusterDefaults({
      broker: {
        logLevel: "debug",
        wal: { segmentBytes: 1048576, syncBackstopMs: 5 },
        topicDefaults: { partitions: 6 },
      },
      rollout: { drainTimeoutSeconds: 42 },
    });
    const parsed = JSON.parse(brokerConfigJson(s));
    expect(parsed).toEqual({
      logLevel: "debug",
      walSegmentBytes: 1048576,
      walSyncBackstopMs: 5,
      topicPartitions: 6,
      drainTimeoutMs: 42_000,
    });
    const allowed = new Set([
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
    ]);
    for (const k of Object.keys(parsed)) expect(allowed.has(k)).toBe(true);
    expect(configMapSpec(cluster, s).data?.["narad.json"]).toBe(brokerConfigJson(s));
  });
  it("hash changes with the data and not with key order", () => {
    expect(configHash({ a: "1", b: "2" })).toBe(configHash({ b: "2", a: "1" }));
    expect(configHash({ a: "1" })).not.toBe(configHash({ a: "2" }));
  });
});

describe("services", () => {
  it("headless publishes not-ready addresses on both ports", () => {
    const s = headlessServiceSpec(cluster);
    expect(s.metadata?.name).toBe("demo-headless");
    expect(s.spec?.clusterIP).toBe("None");
    expect(s.spec?.publishNotReadyAddresses).toBe(true);
    expect(s.spec?.ports?.map((p) => p.port)).toEqual([7942, 7943]);
    expect(s.spec?.selector).toEqual(selectorLabels("demo"));
  });
  it("client service exposes the HTTP API", () => {
    const s = clientServiceSpec(cluster);
    expect(s.metadata?.name).toBe("demo");
    expect(s.spec?.ports?.map((p) => p.port)).toEqual([7942]);
    expect(s.spec?.publishNotReadyAddresses).toBeUndefined();
  });
});

describe("pdb and service monitor", () => {
  it("allows one voluntary disruption", () => {
    const p = podDisruptionBudgetSpec(cluster, 3);
    expect(p.spec?.maxUnavailable).toBe(1);
    expect(p.spec?.selector?.matchLabels).toEqual(selectorLabels("demo"));
    // Two or more brokers: a draining (not Ready) broker is still guarded by the budget.
    expect(p.spec?.unhealthyPodEvictionPolicy).toBeUndefined();
    expect(podDisruptionBudgetSpec(cluster, 2).spec?.unhealthyPodEvictionPolicy).toBeUndefined();
  });
  it("lets a single broker that is not Ready be evicted (its drained restart, a node drain)", () => {
    for (const n of [0, 1]) {
      const p = podDisruptionBudgetSpec(cluster, n);
      expect(p.spec?.maxUnavailable).toBe(1);
      expect(p.spec?.unhealthyPodEvictionPolicy).toBe("AlwaysAllow");
    }
  });
  it("service monitor only when enabled, selecting the client service", () => {
    expect(serviceMonitorSpec(cluster, spec)).toBeUndefined();
    const sm = serviceMonitorSpec(
      cluster,
      withClusterDefaults({
        metrics: { serviceMonitor: { enabled: true, interval: "15s", labels: { team: "x" } } },
      }),
    );
    expect(sm?.spec.endpoints).toEqual([{ port: "http", path: "/metrics", interval: "15s" }]);
    expect(sm?.spec.selector.matchLabels["narad.dev/service"]).toBe("client");
    expect(sm?.metadata?.labels?.["team"]).toBe("x");
    expect(clientServiceSpec(cluster).metadata?.labels).toMatchObject(sm?.spec.selector.matchLabels ?? {});
    expect(headlessServiceSpec(cluster).metadata?.labels?.["narad.dev/service"]).toBe("headless");
  });
  it("pod monitor only when enabled, selecting the broker pods, over https when TLS is on", () => {
    expect(podMonitorSpec(cluster, spec)).toBeUndefined();
    const pm = podMonitorSpec(
      cluster,
      withClusterDefaults({
        metrics: { podMonitor: { enabled: true, interval: "20s", labels: { release: "prom" } } },
        security: { tls: { secretName: "demo-tls" } },
      }),
    );
    expect(pm?.kind).toBe("PodMonitor");
    expect(pm?.spec.selector.matchLabels).toEqual(selectorLabels("demo"));
    expect(pm?.metadata?.labels?.["release"]).toBe("prom");
    expect(pm?.spec.podMetricsEndpoints).toEqual([
      {
        port: "http",
        path: "/metrics",
        interval: "20s",
        scheme: "https",
        tlsConfig: {
          ca: { secret: { name: "demo-tls", key: "ca.crt" } },
          serverName: `demo.${cluster.metadata.namespace}.svc`,
        },
      },
    ]);
    // The pods carry what it selects.
    expect(sts().spec?.template.metadata?.labels).toMatchObject(pm?.spec.selector.matchLabels ?? {});
  });
  it("service monitor scrapes over https, trusting the TLS Secret's CA, when TLS is on", () => {
    const sm = serviceMonitorSpec(
      cluster,
      withClusterDefaults({
        metrics: { serviceMonitor: { enabled: true } },
        security: { tls: { secretName: "demo-tls" } },
      }),
    );
    expect(sm?.spec.endpoints).toEqual([
      {
        port: "http",
        path: "/metrics",
        scheme: "https",
        tlsConfig: {
          ca: { secret: { name: "demo-tls", key: "ca.crt" } },
          serverName: `demo.${cluster.metadata.namespace}.svc`,
        },
      },
    ]);
  });
});

describe("statefulset", () => {
  const s = sts();
  const pod = s.spec?.template.spec;
  const c = pod?.containers[0];

  it("is OnDelete, Parallel, headless-served, sized from spec", () => {
    expect(s.metadata?.name).toBe("demo");
    expect(s.spec?.replicas).toBe(3);
    expect(s.spec?.updateStrategy).toEqual({ type: "OnDelete" });
    expect(s.spec?.podManagementPolicy).toBe("Parallel");
    expect(s.spec?.serviceName).toBe("demo-headless");
    expect(s.spec?.selector.matchLabels).toEqual(selectorLabels("demo"));
    expect(s.spec?.template.metadata?.labels).toMatchObject(selectorLabels("demo"));
  });

  it("runs the broker per the contract", () => {
    expect(c?.name).toBe("narad");
    expect(c?.image).toBe("ghcr.io/narad/narad:1.0");
    expect(c?.command).toBeUndefined();
    expect(c?.args).toEqual([
      "serve",
      "--addr=$(POD_IP):7942",
      "--cluster-addr=$(POD_IP):7943",
      "--node-id=$(POD_NAME)",
      "--metastore=kubernetes",
      "--data-dir=/var/lib/narad/data",
      "--config=/etc/narad/narad.json",
    ]);
    expect(c?.env?.map((e) => e.name)).toEqual([
      "POD_NAME",
      "POD_IP",
      "POD_NAMESPACE",
      "NARAD_CLUSTER_NAME",
      "NARAD_CLUSTER_UID",
      "NARAD_LOOPBACK_FORWARD",
      "NARAD_AUTH",
      "NARAD_CLUSTER_SECRET_FILE",
      ...(spec.security.auth.enabled ? ["NARAD_AUTH_FILE", "NARAD_METRICS_AUTH"] : []),
    ]);
    expect(c?.env?.find((e) => e.name === "POD_IP")?.valueFrom?.fieldRef?.fieldPath).toBe("status.podIP");
    expect(c?.env?.find((e) => e.name === "NARAD_CLUSTER_NAME")?.value).toBe("demo");
    expect(c?.env?.find((e) => e.name === "NARAD_CLUSTER_UID")?.value).toBe(cluster.metadata.uid);
    expect(c?.ports?.map((p) => p.containerPort)).toEqual([7942, 7943]);
  });

  it("probes, preStop and grace period", () => {
    expect(c?.startupProbe).toMatchObject({
      httpGet: { path: "/healthz", port: 7942 },
      failureThreshold: 30,
      periodSeconds: 2,
    });
    expect(c?.livenessProbe).toMatchObject({ httpGet: { path: "/healthz", port: 7942 }, periodSeconds: 10 });
    expect(c?.readinessProbe).toMatchObject({ httpGet: { path: "/readyz", port: 7942 }, periodSeconds: 2 });
    expect(c?.lifecycle?.preStop?.httpGet).toEqual({ path: "/admin/v1/prestop", port: 7942, scheme: "HTTP" });
    expect(pod?.terminationGracePeriodSeconds).toBe(60 + 15);
    expect(
      sts({ rollout: { drainTimeoutSeconds: 5 } }).spec?.template.spec?.terminationGracePeriodSeconds,
    ).toBe(20);
  });

  it("locks the pod down", () => {
    // Pinned exactly: a loosened field must fail here.
    expect(pod?.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 10001,
      runAsGroup: 10001,
      fsGroup: 10001,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(c?.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    // Writable only where needed: the data PVC; everything else is read-only.
    const writable = (c?.volumeMounts ?? []).filter((m) => m.readOnly !== true).map((m) => m.name);
    expect(writable).toEqual(["data"]);
    expect(pod?.hostNetwork).toBeUndefined();
    expect(pod?.hostPID).toBeUndefined();
  });

  it("mounts config and a data PVC from the spec", () => {
    expect(c?.volumeMounts).toContainEqual({ name: "data", mountPath: "/var/lib/narad" });
    expect(c?.volumeMounts).toContainEqual({ name: "config", mountPath: "/etc/narad", readOnly: true });
    expect(pod?.volumes).toContainEqual({ name: "config", configMap: { name: "demo-config" } });
    const vct = sts({ storage: { size: "5Gi", storageClassName: "fast" } }).spec?.volumeClaimTemplates?.[0];
    expect(vct?.metadata?.name).toBe("data");
    expect(vct?.spec).toEqual({
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage: "5Gi" } },
      storageClassName: "fast",
    });
    expect(s.spec?.volumeClaimTemplates?.[0]?.spec?.storageClassName).toBeUndefined();
  });

  it("passes pod knobs through without letting them override selector labels", () => {
    const t = sts({
      pod: {
        labels: { team: "a", "app.kubernetes.io/instance": "evil" },
        annotations: { note: "x" },
        nodeSelector: { disk: "ssd" },
        tolerations: [{ key: "k", operator: "Exists" }],
        priorityClassName: "high",
      },
      resources: { requests: { cpu: 1, memory: "1Gi" } },
      imagePullSecrets: [{ name: "reg" }],
    }).spec?.template;
    expect(t?.metadata?.labels?.["team"]).toBe("a");
    expect(t?.metadata?.labels?.["app.kubernetes.io/instance"]).toBe("demo");
    expect(t?.metadata?.annotations?.["note"]).toBe("x");
    expect(t?.spec?.nodeSelector).toEqual({ disk: "ssd" });
    expect(t?.spec?.tolerations).toEqual([{ key: "k", operator: "Exists" }]);
    expect(t?.spec?.priorityClassName).toBe("high");
    expect(t?.spec?.imagePullSecrets).toEqual([{ name: "reg" }]);
    expect(t?.spec?.containers[0]?.resources).toEqual({ requests: { cpu: "1", memory: "1Gi" } });
  });

  it("the config hash is on the template; the replica count is not", () => {
    expect(sts({}, "h1").spec?.template.metadata?.annotations?.["narad.dev/config-hash"]).toBe("h1");
    expect(sts({ replicas: 5 }).spec?.template).toEqual(sts({ replicas: 3 }).spec?.template);
    expect(sts({}, "h1").spec?.template).not.toEqual(sts({}, "h2").spec?.template);
    // Secrets enter the template by name only: the same names, the same
    // template, whatever the Secrets hold (rotation never rolls pods).
    const secured = sts({
      security: { auth: { enabled: true, usersSecret: "my-users" }, clusterSecret: "my-rpc" },
    });
    const text = JSON.stringify(secured.spec?.template);
    expect(text).toContain("my-users");
    expect(text).not.toContain("password");
  });

  it("copies the restart annotation onto the template (a new value is a new revision)", () => {
    const at = (v: string | undefined) => {
      const c = testCluster({ replicas: 3, image: "ghcr.io/narad/narad:1.0" });
      if (v !== undefined) c.metadata.annotations = { "narad.dev/restartedAt": v, other: "x" };
      return statefulSetSpec({ cluster: c, spec: withClusterDefaults(c.spec), configHash: "h" }).spec
        ?.template;
    };
    expect(at("2026-11-29T12:00:00Z")?.metadata?.annotations?.["narad.dev/restartedAt"]).toBe(
      "2026-11-29T12:00:00Z",
    );
    expect(at("2026-11-29T12:00:00Z")?.metadata?.annotations?.["other"]).toBeUndefined();
    expect(at(undefined)?.metadata?.annotations).not.toHaveProperty("narad.dev/restartedAt");
    expect(at("a")).not.toEqual(at("b"));
  });
});

describe("applied hash", () => {
  it("skips an unchanged object and applies a changed or drifted one", () => {
    const desired = withAppliedHash(sts());
    expect(needsApply(undefined, desired)).toEqual({ apply: true, reason: "missing" });
    // live = desired plus server defaults, read from a list (no apiVersion/kind)
    const live = structuredClone(desired);
    delete live.apiVersion;
    delete live.kind;
    live.spec!.revisionHistoryLimit = 10;
    live.spec!.template.spec!.dnsPolicy = "ClusterFirst";
    expect(needsApply(live, desired)).toEqual({ apply: false });
    const changed = withAppliedHash(sts({ image: "ghcr.io/narad/narad:2.0" }));
    const d = needsApply(live, changed);
    expect(d.apply && d.reason).toBe("hash");
    expect(d.apply && d.diff?.path).toBe("spec.template.spec.containers[narad].image");
    live.spec!.template.spec!.containers[0]!.image = "tampered";
    const drift = needsApply(live, desired);
    expect(drift.apply && drift.reason).toBe("drift");
  });
});
