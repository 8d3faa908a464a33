import { describe, expect, it } from "vitest";
import { withClusterDefaults } from "../../../packages/api/src/v1alpha1/defaults.ts";
import { networkPolicySpec } from "./network-policy.ts";
import {
  brokerScheme,
  clusterSecretName,
  clusterSecretSpec,
  securityEnv,
  securityVolumeMounts,
  securityVolumes,
  usersSecretName,
  usersSecretSpec,
} from "./secrets.ts";
import { statefulSetSpec } from "./statefulset.ts";
import { testCluster } from "./test-fixtures.ts";

const resolved = (security: object) => withClusterDefaults({ security });

describe("security Secrets", () => {
  it("defaults the names to <cluster>-users and <cluster>-cluster-secret; spec names win", () => {
    expect(usersSecretName("demo", resolved({}))).toBe("demo-users");
    expect(clusterSecretName("demo", resolved({}))).toBe("demo-cluster-secret");
    const named = resolved({ auth: { usersSecret: "u" }, clusterSecret: "c" });
    expect(usersSecretName("demo", named)).toBe("u");
    expect(clusterSecretName("demo", named)).toBe("c");
  });

  it("builds an owned users Secret with the broker's users file and human-readable keys", () => {
    const s = usersSecretSpec(testCluster(), "demo-users", "pw123");
    expect(s.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "NaradCluster",
      name: "demo",
      controller: true,
    });
    expect(s.stringData?.["username"]).toBe("admin");
    expect(s.stringData?.["password"]).toBe("pw123");
    const file = JSON.parse(s.stringData?.["users.json"] ?? "");
    expect(file).toEqual({
      users: [{ name: "admin", password: "pw123", grants: [{ action: "admin", topics: "*" }] }],
    });
  });

  it("builds the cluster secret under key 'secret'", () => {
    const s = clusterSecretSpec(testCluster(), "demo-cluster-secret", "ab".repeat(32));
    expect(s.stringData).toEqual({ secret: "ab".repeat(32) });
    expect(s.type).toBe("Opaque");
  });

  it("mounts read-only files and points the broker at them; auth is explicit either way", () => {
    const on = resolved({ auth: { enabled: true }, tls: { secretName: "t" } });
    expect(securityEnv(on)).toEqual([
      { name: "NARAD_AUTH", value: "on" },
      { name: "NARAD_CLUSTER_SECRET_FILE", value: "/var/run/secrets/narad/cluster/secret" },
      { name: "NARAD_AUTH_FILE", value: "/var/run/secrets/narad/users/users.json" },
      { name: "NARAD_METRICS_AUTH", value: "off" },
      { name: "NARAD_TLS_DIR", value: "/var/run/secrets/narad/tls" },
    ]);
    expect(securityVolumes("demo", on).map((v) => [v.name, v.secret?.secretName])).toEqual([
      ["cluster-secret", "demo-cluster-secret"],
      ["users", "demo-users"],
      ["tls", "t"],
    ]);
    expect(securityVolumeMounts(on).every((m) => m.readOnly === true)).toBe(true);
    expect(brokerScheme(on)).toBe("HTTPS");

    const off = resolved({ auth: { enabled: false } });
    expect(securityEnv(off)).toEqual([
      { name: "NARAD_AUTH", value: "off" },
      { name: "NARAD_CLUSTER_SECRET_FILE", value: "/var/run/secrets/narad/cluster/secret" },
    ]);
    expect(securityVolumes("demo", off).map((v) => v.name)).toEqual(["cluster-secret"]);
    expect(brokerScheme(off)).toBe("HTTP");
  });

  it("puts TLS on the probes of the StatefulSet", () => {
    const c = testCluster({ security: { tls: { secretName: "t" } } });
    const ctr = statefulSetSpec({ cluster: c, spec: withClusterDefaults(c.spec), configHash: "h" }).spec
      ?.template.spec?.containers[0];
    expect(ctr?.readinessProbe?.httpGet?.scheme).toBe("HTTPS");
    expect(ctr?.livenessProbe?.httpGet?.scheme).toBe("HTTPS");
    expect(ctr?.volumeMounts).toContainEqual({
      name: "tls",
      mountPath: "/var/run/secrets/narad/tls",
      readOnly: true,
    });
  });
});

describe("NetworkPolicy", () => {
  it("is absent unless enabled", () => {
    expect(networkPolicySpec(testCluster(), resolved({}))).toBeUndefined();
  });

  it("admits the cluster port only from the cluster's brokers, the API port from allowFrom", () => {
    const peer = { namespaceSelector: { matchLabels: { team: "shop" } } };
    const np = networkPolicySpec(
      testCluster(),
      resolved({ networkPolicy: { enabled: true, allowFrom: [peer] } }),
    );
    const brokers = {
      podSelector: {
        matchLabels: {
          "app.kubernetes.io/name": "narad",
          "app.kubernetes.io/instance": "demo",
          "narad.dev/cluster": "demo",
        },
      },
    };
    expect(np?.metadata?.name).toBe("demo-brokers");
    expect(np?.spec?.podSelector).toEqual(brokers.podSelector);
    expect(np?.spec?.policyTypes).toEqual(["Ingress"]);
    expect(np?.spec?.ingress).toEqual([
      { ports: [{ protocol: "TCP", port: 7942 }], _from: [brokers, peer] },
      { ports: [{ protocol: "TCP", port: 7943 }], _from: [brokers] },
    ]);
  });

  it("leaves the API port open to all when allowFrom is empty", () => {
    const np = networkPolicySpec(testCluster(), resolved({ networkPolicy: { enabled: true } }));
    expect(np?.spec?.ingress?.[0]).toEqual({ ports: [{ protocol: "TCP", port: 7942 }] });
  });
});
