// What an e2e suite of brokers on the kubernetes metastore starts from,
// without the real operator: a control plane with the CRDs installed, a
// namespace holding a NaradCluster whose status the suite writes and the
// fake operator's assignments, and `narad serve --metastore kubernetes`
// processes on port pairs. The suites about the data plane (cluster-kube,
// fanout-kube), the metastore and the producer registry share it instead of
// each repeating the setup; the pieces it composes live in
// ../cluster/fake-operator.ts. The operator suites have ../operator/suite.ts.
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { freePort, type RunningNarad, startNarad } from "../../broker/test/harness/process.ts";
import type { MemberStatus } from "../../packages/api/src/v1alpha1/types.ts";
import { createCluster, createNamespace, installCrds, startFakeOperator } from "../cluster/fake-operator.ts";
import { type ControlPlane, startControlPlane } from "../platform/control-plane.ts";
import type { Log } from "../platform/log.ts";

export interface KubePlatform {
  /** The suite's scratch directory: the control plane's state under cp/, broker data beside it. */
  dir: string;
  cp: ControlPlane;
  /** The admin identity, loaded once for the suite's own API calls. */
  kc: KubeConfig;
  /** A fresh admin KubeConfig: its own client, as a separate broker has. */
  adminConfig(): KubeConfig;
  /** Stops the control plane and removes the scratch directory. */
  stop(): Promise<void>;
}

/** Starts etcd + kube-apiserver in a fresh scratch directory and installs the Narad CRDs. */
export async function startKubePlatform(o: { prefix: string; log: Log }): Promise<KubePlatform> {
  const started = Date.now();
  const dir = await mkdtemp(join(tmpdir(), `narad-${o.prefix}-`));
  let cp: ControlPlane | undefined;
  try {
    cp = await startControlPlane({ dir: join(dir, "cp"), log: o.log });
    const control = cp;
    const adminConfig = (): KubeConfig => {
      const kc = new KubeConfig();
      kc.loadFromFile(control.kubeconfigPath);
      return kc;
    };
    const kc = adminConfig();
    await installCrds(kc);
    o.log(`control plane + CRDs ready in ${Date.now() - started} ms`);
    return {
      dir,
      cp: control,
      kc,
      adminConfig,
      stop: async () => {
        await control.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    // A half-started platform is still torn down: afterAll never sees it.
    await cp?.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

export interface FakeCluster {
  namespace: string;
  /** Stops the fake operator (the namespace goes with the control plane). */
  stop(): Promise<void>;
}

/**
 * A fresh namespace `<prefix>-xxxxxx` with the NaradCluster `cluster`, its
 * status holding these members at this membership epoch, and the fake
 * operator assigning new topics' partitions round-robin over `assignTo`
 * (default: the members' ids).
 */
export async function startFakeCluster(
  kc: KubeConfig,
  o: {
    prefix: string;
    cluster: string;
    members: MemberStatus[];
    epoch: number;
    assignTo?: readonly string[];
    pollMs?: number;
    log?: Log;
  },
): Promise<FakeCluster> {
  const namespace = await createNamespace(kc, o.prefix);
  await createCluster(kc, namespace, o.cluster, o.members, o.epoch);
  const stop = startFakeOperator(kc, namespace, o.cluster, o.assignTo ?? o.members.map((m) => m.id), {
    ...(o.pollMs === undefined ? {} : { pollMs: o.pollMs }),
    ...(o.log === undefined ? {} : { log: o.log }),
  });
  return { namespace, stop };
}

/** One `narad serve` of a suite: HTTP on httpPort, cluster RPC on httpPort + 1. */
export interface KubeBroker {
  id: string;
  ordinal: number;
  httpPort: number;
  dataDir: string;
  url: string;
  proc: RunningNarad | undefined;
}

/** A free port whose successor is free too (cluster RPC = HTTP port + 1, the operator's convention). */
export async function freePortPair(): Promise<number> {
  for (;;) {
    const p = await freePort();
    const ok = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once("error", () => resolve(false));
      s.listen(p + 1, "127.0.0.1", () => s.close(() => resolve(true)));
    });
    if (ok && p + 1 < 65535) return p;
  }
}

/** A broker record for each id (ordinal = its index), data under dir/<id>; none started yet. */
async function allocateBrokers(dir: string, ids: readonly string[]): Promise<KubeBroker[]> {
  const out: KubeBroker[] = [];
  for (const [ordinal, id] of ids.entries()) {
    const httpPort = await freePortPair();
    out.push({
      id,
      ordinal,
      httpPort,
      dataDir: join(dir, id),
      url: `http://127.0.0.1:${httpPort}`,
      proc: undefined,
    });
  }
  return out;
}

/** The member entry the operator would write for this broker. */
export function memberStatus(b: KubeBroker, state: MemberStatus["state"] = "Active"): MemberStatus {
  return {
    id: b.id,
    pod: b.id,
    ordinal: b.ordinal,
    address: `127.0.0.1:${b.httpPort}`,
    state,
    since: new Date().toISOString(),
  };
}

/**
 * Starts (or restarts, keeping its data) `b` as a member of `cluster` in
 * `namespace`, reaching the API server through `kubeconfig`; `args` are the
 * suite's own flags (auth, drain timeout, fence lease). The in-cluster
 * service host is blanked so the broker takes the kubeconfig, not a pod's.
 */
async function startKubeBroker(
  b: KubeBroker,
  o: { cluster: string; namespace: string; kubeconfig: string; logLevel: string; args: readonly string[] },
): Promise<void> {
  b.proc = await startNarad({
    port: b.httpPort,
    dataDir: b.dataDir,
    keepData: true,
    logLevel: process.env.NARAD_TEST_LOG ?? o.logLevel,
    args: [
      "--metastore",
      "kubernetes",
      "--cluster-name",
      o.cluster,
      "--namespace",
      o.namespace,
      "--node-id",
      b.id,
      "--cluster-addr",
      `127.0.0.1:${b.httpPort + 1}`,
      // The fake operator places single-copy owners only (no replicated
      // records, no elections): these suites run their topics at one copy.
      // A suite may pass --replication on itself (later flags win).
      ...["--replication", "off"],
      ...o.args,
    ],
    env: { KUBECONFIG: o.kubeconfig, KUBERNETES_SERVICE_HOST: "" },
  });
}

export interface KubeBrokerSet {
  namespace: string;
  brokers: KubeBroker[];
  /** Starts (or restarts after a kill, keeping its data) one broker of the set. */
  start(b: KubeBroker): Promise<void>;
  /** Stops every broker still running, then the fake operator. */
  stop(): Promise<void>;
}

/**
 * The usual preamble: a broker record for each id, a fake cluster in a fresh
 * namespace whose status lists them (state(id), default Active, at this
 * epoch), then every broker started. `kubeconfig` is how the brokers reach
 * the API server (default: directly; a suite with a proxy passes its own).
 */
export async function startKubeBrokers(
  platform: KubePlatform,
  o: {
    prefix: string;
    cluster: string;
    ids: readonly string[];
    epoch?: number;
    state?: (id: string) => MemberStatus["state"];
    kubeconfig?: string;
    logLevel: string;
    args: readonly string[];
    log: Log;
  },
): Promise<KubeBrokerSet> {
  const brokers = await allocateBrokers(platform.dir, o.ids);
  const fake = await startFakeCluster(platform.kc, {
    prefix: o.prefix,
    cluster: o.cluster,
    members: brokers.map((b) => memberStatus(b, o.state?.(b.id))),
    epoch: o.epoch ?? 1,
    log: o.log,
  });
  const start = (b: KubeBroker) =>
    startKubeBroker(b, {
      cluster: o.cluster,
      namespace: fake.namespace,
      kubeconfig: o.kubeconfig ?? platform.cp.kubeconfigPath,
      logLevel: o.logLevel,
      args: o.args,
    });
  const set: KubeBrokerSet = {
    namespace: fake.namespace,
    brokers,
    start,
    stop: async () => {
      // A broker that already died (a kill -9 test) is no error at teardown.
      await Promise.all(brokers.map((b) => b.proc?.stop().catch(() => undefined)));
      await fake.stop();
    },
  };
  try {
    await Promise.all(brokers.map(start));
  } catch (err) {
    await set.stop();
    throw err;
  }
  return set;
}
