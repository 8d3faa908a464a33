// Registers this agent's Node and keeps it alive: the Lease in
// kube-node-lease is renewed every 10 s (kcm's node lifecycle controller
// reads it) and the Ready condition's heartbeat is refreshed alongside.

import {
  type CoordinationV1Api,
  type CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  V1MicroTime,
  type V1Node,
  type V1NodeCondition,
} from "@kubernetes/client-node";
import type { Logger } from "pino";

export const LEASE_NAMESPACE = "kube-node-lease";
export const LEASE_RENEW_INTERVAL_MS = 10_000;
export const LEASE_DURATION_S = 40;
export const KUBELET_VERSION = "v1.36.3";
export const NODE_CAPACITY = { cpu: "2", memory: "24Gi", pods: "110" } as const;

export interface NodeIdentity {
  readonly name: string;
  readonly ip: string;
}

export function nodeLabels(name: string): Record<string, string> {
  return {
    "kubernetes.io/hostname": name,
    "kubernetes.io/os": "linux",
    "kubernetes.io/arch": process.arch === "x64" ? "amd64" : process.arch,
    "node.narad.dev/agent": "process",
  };
}

function conditions(now: Date, readySince: Date): V1NodeCondition[] {
  const ok = (type: string, reason: string, message: string): V1NodeCondition => ({
    type,
    status: "False",
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: readySince,
  });
  return [
    ok("MemoryPressure", "KubeletHasSufficientMemory", "no memory pressure"),
    ok("DiskPressure", "KubeletHasNoDiskPressure", "no disk pressure"),
    ok("PIDPressure", "KubeletHasSufficientPID", "no PID pressure"),
    {
      type: "Ready",
      status: "True",
      reason: "KubeletReady",
      message: "narad node agent is posting ready status",
      lastHeartbeatTime: now,
      lastTransitionTime: readySince,
    },
  ];
}

export function nodeStatus(id: NodeIdentity, now: Date, readySince: Date): V1Node["status"] {
  return {
    capacity: { ...NODE_CAPACITY },
    allocatable: { ...NODE_CAPACITY },
    addresses: [
      { type: "InternalIP", address: id.ip },
      { type: "Hostname", address: id.name },
    ],
    conditions: conditions(now, readySince),
    daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
    nodeInfo: {
      kubeletVersion: KUBELET_VERSION,
      kubeProxyVersion: KUBELET_VERSION,
      architecture: nodeLabels(id.name)["kubernetes.io/arch"]!,
      operatingSystem: "linux",
      bootID: "",
      containerRuntimeVersion: "narad-node-agent://0.1.0",
      kernelVersion: "",
      machineID: id.name,
      osImage: "narad node agent",
      systemUUID: id.name,
    },
  };
}

export class NodeRegistration {
  readonly #core: CoreV1Api;
  readonly #coord: CoordinationV1Api;
  readonly #id: NodeIdentity;
  readonly #log: Logger;
  readonly #readySince = new Date();
  #nodeUid = "";
  #timer: NodeJS.Timeout | null = null;

  constructor(core: CoreV1Api, coord: CoordinationV1Api, id: NodeIdentity, log: Logger) {
    this.#core = core;
    this.#coord = coord;
    this.#id = id;
    this.#log = log.child({ component: "node" });
  }

  async register(): Promise<void> {
    const body: V1Node = {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: this.#id.name, labels: nodeLabels(this.#id.name) },
      spec: {},
      // Ready from the first write (as the kubelet does), so kcm's node
      // lifecycle controller never sees a status-less node and taints it not-ready.
      status: nodeStatus(this.#id, new Date(), this.#readySince),
    };
    try {
      const created = await this.#core.createNode({ body });
      this.#nodeUid = created.metadata?.uid ?? "";
      this.#log.info("node created");
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
      // Re-registration after an agent restart: clear taints and refresh labels.
      const patched = await this.#core.patchNode(
        {
          name: this.#id.name,
          body: { metadata: { labels: nodeLabels(this.#id.name) }, spec: { taints: null } },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
      this.#nodeUid = patched.metadata?.uid ?? "";
      this.#log.info("node already registered; updated");
    }
    await this.#heartbeat();
  }

  start(): void {
    const tick = () => {
      this.#timer = setTimeout(async () => {
        await this.#heartbeat().catch((err: unknown) => this.#log.warn({ err }, "heartbeat failed"));
        if (this.#timer) tick();
      }, LEASE_RENEW_INTERVAL_MS);
    };
    tick();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  async #heartbeat(): Promise<void> {
    const now = new Date();
    await this.#core.patchNodeStatus(
      { name: this.#id.name, body: { status: nodeStatus(this.#id, now, this.#readySince) } },
      setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
    );
    await this.#renewLease();
  }

  async #renewLease(): Promise<void> {
    const spec = {
      holderIdentity: this.#id.name,
      leaseDurationSeconds: LEASE_DURATION_S,
      renewTime: new V1MicroTime(),
    };
    try {
      const lease = await this.#coord.readNamespacedLease({
        name: this.#id.name,
        namespace: LEASE_NAMESPACE,
      });
      // Replace the spec wholesale: re-sending a read-back MicroTime would lose its microsecond format.
      lease.spec = spec;
      await this.#coord.replaceNamespacedLease({
        name: this.#id.name,
        namespace: LEASE_NAMESPACE,
        body: lease,
      });
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
      await this.#coord.createNamespacedLease({
        namespace: LEASE_NAMESPACE,
        body: {
          metadata: {
            name: this.#id.name,
            namespace: LEASE_NAMESPACE,
            ownerReferences: [{ apiVersion: "v1", kind: "Node", name: this.#id.name, uid: this.#nodeUid }],
          },
          spec,
        },
      });
    }
  }
}
