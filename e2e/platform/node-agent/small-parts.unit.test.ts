// Pure helpers: probe thresholds, the mount prologue, bind decisions,
// provisioner bookkeeping and flag parsing.
import type { V1PersistentVolumeClaim, V1Pod, V1Service, V1StorageClass } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { bindRefusal } from "./binder.ts";
import { apiEndpoint, parseConfig } from "./config.ts";
import { hostsFileContent, podHostsLines, serviceHostsLines } from "./hosts-file.ts";
import { mountScript, shellQuote } from "./mount-script.ts";
import { initialProbeState, observeProbe, probeTiming } from "./probe-state.ts";
import {
  buildPv,
  claimClassName,
  claimMayNeedWork,
  needsProvisioning,
  PROVISIONER_NAME,
  quantityBytes,
} from "./provisioner.ts";

describe("probe thresholds", () => {
  const timing = probeTiming({ failureThreshold: 2, successThreshold: 1, periodSeconds: 1 });
  it("readiness starts not ready and flips on first success", () => {
    const s = observeProbe(initialProbeState("readiness"), true, timing);
    expect(s.result).toBe("success");
  });
  it("liveness fails only after failureThreshold consecutive failures", () => {
    let s = initialProbeState("liveness");
    s = observeProbe(s, false, timing);
    expect(s.result).toBe("success");
    s = observeProbe(s, true, timing);
    s = observeProbe(s, false, timing);
    expect(s.result).toBe("success");
    s = observeProbe(s, false, timing);
    expect(s.result).toBe("failure");
  });
  it("uses kubelet defaults", () => {
    expect(probeTiming({})).toMatchObject({ periodMs: 10_000, timeoutMs: 1_000, failureThreshold: 3 });
  });
});

describe("mountScript", () => {
  it("quotes paths and mounts shallow targets first", () => {
    const s = mountScript([
      { source: "/s/b", target: "/data/sub", readOnly: true, isFile: false },
      { source: "/s/a'x", target: "/data", readOnly: false, isFile: false },
    ]);
    expect(s.indexOf("'/data'")).toBeLessThan(s.indexOf("'/data/sub'"));
    expect(s).toContain(shellQuote("/s/a'x"));
    expect(s).toContain("mount -o remount,bind,ro '/data/sub'");
    expect(s.endsWith('exec "$@"')).toBe(true);
  });
});

describe("bindRefusal", () => {
  const labels = { "kubernetes.io/hostname": "n1" };
  const base: V1Pod = { metadata: { name: "p", uid: "u" }, spec: { containers: [] } };
  it("binds plain unscheduled pods", () => {
    expect(bindRefusal(base, labels)).toBeNull();
  });
  it("refuses bound, foreign-scheduler and mismatched pods", () => {
    expect(bindRefusal({ ...base, spec: { containers: [], nodeName: "x" } }, labels)).not.toBeNull();
    expect(bindRefusal({ ...base, spec: { containers: [], schedulerName: "other" } }, labels)).not.toBeNull();
    expect(
      bindRefusal(
        { ...base, spec: { containers: [], nodeSelector: { "kubernetes.io/hostname": "n2" } } },
        labels,
      ),
    ).not.toBeNull();
  });
});

describe("provisioner", () => {
  const ours: V1StorageClass = {
    metadata: { name: "narad-local", annotations: { "storageclass.kubernetes.io/is-default-class": "true" } },
    provisioner: PROVISIONER_NAME,
  };
  const pvc: V1PersistentVolumeClaim = {
    metadata: { name: "data-web-0", namespace: "ns", uid: "abc" },
    spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
    status: { phase: "Pending" },
  };
  it("resolves an unset class to the default one", () => {
    expect(claimClassName(pvc, [ours])).toBe("narad-local");
    expect(claimClassName({ ...pvc, spec: { ...pvc.spec, storageClassName: "" } }, [ours])).toBe("");
  });
  it("provisions only pending unbound claims of our class", () => {
    expect(needsProvisioning(pvc, ours)).toBe(true);
    expect(needsProvisioning(pvc, { ...ours, provisioner: "other" })).toBe(false);
    expect(needsProvisioning({ ...pvc, spec: { ...pvc.spec, volumeName: "v" } }, ours)).toBe(false);
  });
  it("builds a pre-bound hostPath PV", () => {
    const pv = buildPv(pvc, "narad-local", "/state/volumes");
    expect(pv.metadata?.name).toBe("pvc-abc");
    expect(pv.spec?.hostPath?.path).toBe("/state/volumes/pvc-abc");
    expect(pv.spec?.claimRef).toMatchObject({ name: "data-web-0", namespace: "ns", uid: "abc" });
    expect(pv.spec?.capacity).toEqual({ storage: "1Gi" });
    expect(pv.spec?.persistentVolumeReclaimPolicy).toBe("Delete");
  });
  it("skips settled claims before any API call", () => {
    expect(claimMayNeedWork(pvc)).toBe(true);
    const bound: V1PersistentVolumeClaim = {
      ...pvc,
      spec: { ...pvc.spec, volumeName: "v" },
      status: { phase: "Bound", capacity: { storage: "1Gi" } },
    };
    expect(claimMayNeedWork(bound)).toBe(false);
    const grown = { ...bound, spec: { ...bound.spec, resources: { requests: { storage: "2Gi" } } } };
    expect(claimMayNeedWork(grown)).toBe(true);
  });
  it("compares quantities", () => {
    expect(quantityBytes("2Gi")).toBeGreaterThan(quantityBytes("1Gi"));
    expect(quantityBytes("1G")).toBe(1e9);
  });
});

describe("config", () => {
  it("parses flags", () => {
    const c = parseConfig([
      "--kubeconfig",
      "k",
      "--node-name",
      "n",
      "--state-dir",
      "/s",
      "--pod-ip-prefix",
      "127.9",
    ]);
    expect(c.nodeName).toBe("n");
    expect(c.podIpPrefix).toBe("127.9");
    expect(() => parseConfig(["--node-name", "n"])).toThrow(/kubeconfig/);
  });
  it("splits the server URL", () => {
    expect(apiEndpoint("https://127.0.0.1:6443")).toEqual({ host: "127.0.0.1", port: "6443" });
  });
});

describe("hosts file", () => {
  it("lists pods with hostname and subdomain under their service names", () => {
    const pods: V1Pod[] = [
      {
        metadata: { name: "web-1", namespace: "ns" },
        spec: { containers: [], hostname: "web-1", subdomain: "web" },
        status: { podIP: "127.5.0.3", phase: "Running" },
      },
      { metadata: { name: "x", namespace: "ns" }, spec: { containers: [] }, status: { podIP: "127.5.0.4" } },
      {
        metadata: { name: "done", namespace: "ns" },
        spec: { containers: [], hostname: "done", subdomain: "web" },
        status: { podIP: "127.5.0.5", phase: "Succeeded" },
      },
    ];
    expect(podHostsLines(pods)).toEqual([
      "127.5.0.3\tweb-1.web.ns.svc.cluster.local web-1.web.ns.svc web-1.web.ns web-1.web",
    ]);
    expect(hostsFileContent("127.0.0.1 localhost", pods).startsWith("127.0.0.1 localhost\n")).toBe(true);
  });
});

describe("service hosts lines", () => {
  it("maps a Service to its selected ready pods", () => {
    const pod = (name: string, ip: string, ready: boolean, app = "web"): V1Pod => ({
      metadata: { name, namespace: "ns", labels: { app } },
      spec: { containers: [] },
      status: { podIP: ip, conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
    });
    const pods = [
      pod("a", "127.5.0.2", true),
      pod("b", "127.5.0.3", false),
      pod("c", "127.5.0.4", true, "db"),
    ];
    const svc: V1Service = { metadata: { name: "web", namespace: "ns" }, spec: { selector: { app: "web" } } };
    expect(serviceHostsLines([svc], pods)).toEqual(["127.5.0.2\tweb.ns.svc.cluster.local web.ns.svc web.ns"]);
    const all = serviceHostsLines([{ ...svc, spec: { ...svc.spec, publishNotReadyAddresses: true } }], pods);
    expect(all).toHaveLength(2);
  });
});
