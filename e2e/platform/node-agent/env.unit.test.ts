import type { V1Container, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { containerEnv, type EnvContext, expandVars, referencedObjects } from "./env.ts";

const pod: V1Pod = {
  metadata: { name: "web-0", namespace: "ns1", uid: "u-1", labels: { app: "web" } },
  spec: { nodeName: "n1", serviceAccountName: "sa1", containers: [] },
};

const ctx: EnvContext = {
  podIP: "127.5.0.2",
  hostIP: "127.5.0.1",
  apiHost: "127.0.0.1",
  apiPort: "6443",
  configMaps: new Map([["cm", { A: "1", B: "2" }]]),
  secrets: new Map([["sec", { PASSWORD: "hunter2" }]]),
};

describe("expandVars", () => {
  it("expands known names, keeps unknown ones and honours $$", () => {
    expect(expandVars("$(A)-$(NOPE)-$$(A)", { A: "x" })).toBe("x-$(NOPE)-$(A)");
  });
});

describe("containerEnv", () => {
  it("combines envFrom, env, valueFrom and the in-cluster variables", () => {
    const c: V1Container = {
      name: "c",
      envFrom: [{ configMapRef: { name: "cm" }, prefix: "CM_" }],
      env: [
        { name: "NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
        { name: "NS", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
        { name: "IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
        { name: "SA", valueFrom: { fieldRef: { fieldPath: "spec.serviceAccountName" } } },
        { name: "APP", valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
        { name: "PW", valueFrom: { secretKeyRef: { name: "sec", key: "PASSWORD" } } },
        { name: "B", valueFrom: { configMapKeyRef: { name: "cm", key: "B" } } },
        { name: "URL", value: "http://$(IP):8080/$(NAME)" },
      ],
    };
    const r = containerEnv(pod, c, ctx);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.env).toMatchObject({
      CM_A: "1",
      NAME: "web-0",
      NS: "ns1",
      IP: "127.5.0.2",
      POD_IP: "127.5.0.2",
      SA: "sa1",
      APP: "web",
      PW: "hunter2",
      B: "2",
      URL: "http://127.5.0.2:8080/web-0",
      KUBERNETES_SERVICE_HOST: "127.0.0.1",
      KUBERNETES_SERVICE_PORT: "6443",
    });
  });
  it("fails on a missing required key and skips an optional one", () => {
    const missing: V1Container = {
      name: "c",
      env: [{ name: "X", valueFrom: { configMapKeyRef: { name: "cm", key: "nope" } } }],
    };
    expect(containerEnv(pod, missing, ctx).ok).toBe(false);
    const optional: V1Container = {
      name: "c",
      env: [{ name: "X", valueFrom: { configMapKeyRef: { name: "gone", key: "k", optional: true } } }],
    };
    const r = containerEnv(pod, optional, ctx);
    expect(r.ok && !("X" in r.env)).toBe(true);
  });
  it("lists referenced objects", () => {
    const c: V1Container = {
      name: "c",
      envFrom: [{ secretRef: { name: "s1" } }],
      env: [{ name: "X", valueFrom: { configMapKeyRef: { name: "cm2", key: "k" } } }],
    };
    const refs = referencedObjects(c);
    expect([...refs.configMaps]).toEqual(["cm2"]);
    expect([...refs.secrets]).toEqual(["s1"]);
  });
});
