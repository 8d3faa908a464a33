// A real Kubernetes control plane as local processes: etcd, kube-apiserver
// and kube-controller-manager with client-certificate auth, RBAC and
// service-account tokens. No scheduler and no kubelet: the node agent
// (node-agent/) binds and runs pods. Several instances can run side by side,
// each in its own directory with its own free ports.
import { randomUUID } from "node:crypto";
import { mkdir, readFile, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { reapStaleInstances, removeInstance, writeInstance } from "./instances.ts";
import { type Log, silentLog } from "./log.ts";
import { createPki, issueClientCert, type Pki, writeKubeconfig } from "./pki.ts";
import { freePorts, LOOPBACK } from "./ports.ts";
import { type ProbeTls, probe } from "./probe.ts";
import { describeFailure, type ManagedProcess, startProcess } from "./process.ts";

export type { ManagedProcess } from "./process.ts";

import { type Binaries, ensureBinaries } from "./tools.ts";

export const SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24";
const ETCD_READY_TIMEOUT_MS = 30_000;
const APISERVER_READY_TIMEOUT_MS = 120_000;
const KCM_READY_TIMEOUT_MS = 60_000;
const POLL_INTERVAL_MS = 200;
/** etcd's default 2 GiB quota is far beyond what a test needs; keep the mmap small. */
const ETCD_QUOTA_BYTES = String(512 * 1024 * 1024);

export interface ControlPlaneOptions {
  /** Working directory for data, certs, kubeconfigs and logs; created if missing. */
  dir: string;
  log?: Log;
  /** Keep `dir` after stop() (for post-mortems). */
  keep?: boolean;
  /** Skip ensureBinaries() when the caller already has the paths. */
  binaries?: Binaries;
}

export interface ClientIdentityRequest {
  /** File stem for the cert and kubeconfig under dir, e.g. "node-agent". */
  name: string;
  /** Kubernetes user name (certificate CN). */
  user: string;
  /** Kubernetes groups (certificate O). */
  groups?: string[];
}

export interface ComponentInfo {
  name: string;
  pid: number;
  logPath: string;
  running: boolean;
}

export interface ControlPlane {
  dir: string;
  /** Admin kubeconfig (CN=admin, O=system:masters). */
  kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  server: string;
  caCertPath: string;
  /** Service-account issuer, also the default API audience. */
  serviceAccountIssuer: string;
  ports: { etcd: number; etcdPeer: number; apiserver: number; controllerManager: number };
  binaries: Binaries;
  pki: Pki;
  components(): ComponentInfo[];
  /** Issues a client cert signed by the cluster CA and writes a kubeconfig for it; returns its path. */
  issueKubeconfig(request: ClientIdentityRequest): Promise<string>;
  /**
   * Starts an extra process owned by this control plane (e.g. the node agent):
   * logged to dir/logs/<name>.log, registered for leak cleanup, stopped first.
   */
  startComponent(spec: ComponentSpec): Promise<ManagedProcess>;
  /** SIGTERM, then SIGKILL after a few seconds; waits for exit; removes dir unless kept. */
  stop(options?: { keep?: boolean }): Promise<void>;
  /** Fault injection: stops the kube-apiserver process (etcd and the rest keep running). */
  stopApiserver(): Promise<void>;
  /** Starts kube-apiserver again with the same flags and waits until it is ready (no-op when running). */
  startApiserver(): Promise<void>;
}

export interface ComponentSpec {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Sent if the owner dies; SIGTERM lets a component clean up its own children. */
  parentDeathSignal?: "SIGKILL" | "SIGTERM";
}

interface Running {
  procs: ManagedProcess[];
}

async function waitUntilReady(
  proc: ManagedProcess,
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = "";
  while (Date.now() < deadline) {
    if (proc.exit !== undefined) throw new Error(await describeFailure(proc, `${what} failed`));
    try {
      if (await check()) return;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    await sleep(POLL_INTERVAL_MS);
  }
  const hint = lastError === "" ? "" : ` (last probe error: ${lastError})`;
  throw new Error(await describeFailure(proc, `${what} not ready after ${timeoutMs} ms${hint}`));
}

export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const log = options.log ?? silentLog;
  const dir = resolve(options.dir);
  await reapStaleInstances(log);
  const binaries = options.binaries ?? (await ensureBinaries(log));
  const started = Date.now();
  const logs = join(dir, "logs");
  const pkiDir = join(dir, "pki");
  // A reused dir must not mix an old etcd with a new CA and signing key.
  for (const stale of ["etcd-data", "pki", "logs", "apiserver-certs", "kcm-certs"]) {
    await rm(join(dir, stale), { recursive: true, force: true });
  }
  await mkdir(logs, { recursive: true });
  await mkdir(pkiDir, { recursive: true });

  const id = randomUUID();
  const running: Running = { procs: [] };
  const record = async () =>
    writeInstance({
      id,
      ownerPid: process.pid,
      dir,
      keep: options.keep ?? false,
      pids: running.procs.map((p) => p.pid),
    });
  let stopped = false;
  const stop = async (stopOptions: { keep?: boolean } = {}) => {
    if (stopped) return;
    stopped = true;
    // Reverse start order: controllers first, etcd last.
    for (const proc of [...running.procs].reverse()) await proc.stop();
    if (!(stopOptions.keep ?? options.keep ?? false)) await rm(dir, { recursive: true, force: true });
    await removeInstance(id);
    log(`control plane in ${dir} stopped`);
  };
  const procsNamed = (name: string) => running.procs.filter((p) => p.name === name);
  const launch = async (
    name: string,
    command: string,
    args: string[],
    extra: Partial<ComponentSpec> = {},
  ) => {
    if (stopped) throw new Error(`control plane in ${dir} is stopped; cannot start ${name}`);
    const proc = startProcess({ ...extra, name, command, args, logPath: join(logs, `${name}.log`) });
    running.procs.push(proc);
    await record();
    return proc;
  };

  try {
    await record();
    const [etcdPort, etcdPeerPort, apiserverPort, kcmPort] = (await freePorts(4)) as [
      number,
      number,
      number,
      number,
    ];
    const server = `https://${LOOPBACK}:${apiserverPort}`;
    const serviceAccountIssuer = server;

    log(`creating PKI in ${pkiDir}`);
    const pki = await createPki(pkiDir);
    const [admin, kcm] = await Promise.all([
      issueClientCert(pki, { name: "admin", commonName: "admin", organizations: ["system:masters"] }),
      issueClientCert(pki, { name: "kube-controller-manager", commonName: "system:kube-controller-manager" }),
    ]);
    const kubeconfigPath = await writeKubeconfig({
      path: join(dir, "admin.kubeconfig"),
      server,
      caCert: pki.caCert,
      client: admin,
      user: "admin",
    });
    const kcmKubeconfig = await writeKubeconfig({
      path: join(dir, "kube-controller-manager.kubeconfig"),
      server,
      caCert: pki.caCert,
      client: kcm,
      user: "system:kube-controller-manager",
    });

    const etcdUrl = `http://${LOOPBACK}:${etcdPort}`;
    const etcdPeerUrl = `http://${LOOPBACK}:${etcdPeerPort}`;
    const etcd = await launch("etcd", binaries.etcd, [
      "--name=narad",
      `--data-dir=${join(dir, "etcd-data")}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${etcdPeerUrl}`,
      `--initial-advertise-peer-urls=${etcdPeerUrl}`,
      `--initial-cluster=narad=${etcdPeerUrl}`,
      "--initial-cluster-state=new",
      // Test data is disposable; fsync dominates etcd latency on shared disks.
      "--unsafe-no-fsync",
      `--quota-backend-bytes=${ETCD_QUOTA_BYTES}`,
      "--log-level=warn",
    ]);
    await waitUntilReady(etcd, "etcd", ETCD_READY_TIMEOUT_MS, async () => {
      const res = await probe(`${etcdUrl}/health`);
      return res.status === 200 && res.body.includes('"true"');
    });
    log(`etcd ready on ${etcdUrl}`);

    const apiserverArgs = [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${LOOPBACK}`,
      `--advertise-address=${LOOPBACK}`,
      `--secure-port=${apiserverPort}`,
      `--cert-dir=${join(dir, "apiserver-certs")}`,
      `--tls-cert-file=${pki.serverCert}`,
      `--tls-private-key-file=${pki.serverKey}`,
      `--client-ca-file=${pki.caCert}`,
      `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
      "--allow-privileged=true",
      "--authorization-mode=Node,RBAC",
      // The node agent mounts service-account tokens itself (TokenRequest).
      "--disable-admission-plugins=ServiceAccount",
      `--service-account-issuer=${serviceAccountIssuer}`,
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      `--api-audiences=${serviceAccountIssuer}`,
      // The lease reconciler would publish 127.0.0.1 as the `kubernetes`
      // Endpoints, which validation rejects (loopback), logging an error every
      // 10 s. The Service is still created; the node agent hands pods the real
      // apiserver address instead.
      "--endpoint-reconciler-type=none",
      "--profiling=false",
    ];
    const apiserver = await launch("kube-apiserver", binaries.kubeApiserver, apiserverArgs);
    const [ca, cert, key] = await Promise.all([
      readFile(pki.caCert),
      readFile(admin.cert),
      readFile(admin.key),
    ]);
    const adminTls: ProbeTls = { ca, cert, key };
    await waitUntilReady(apiserver, "kube-apiserver", APISERVER_READY_TIMEOUT_MS, async () => {
      const res = await probe(`${server}/readyz`, adminTls);
      return res.status === 200;
    });
    log(`kube-apiserver ready on ${server}`);

    const controllerManager = await launch("kube-controller-manager", binaries.kubeControllerManager, [
      `--kubeconfig=${kcmKubeconfig}`,
      `--authentication-kubeconfig=${kcmKubeconfig}`,
      `--authorization-kubeconfig=${kcmKubeconfig}`,
      `--bind-address=${LOOPBACK}`,
      `--secure-port=${kcmPort}`,
      `--cert-dir=${join(dir, "kcm-certs")}`,
      "--leader-elect=false",
      "--controllers=*,-nodeipam",
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--root-ca-file=${pki.caCert}`,
      "--use-service-account-credentials=true",
      `--cluster-signing-cert-file=${pki.caCert}`,
      `--cluster-signing-key-file=${pki.caKey}`,
      `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
      "--profiling=false",
    ]);
    await waitUntilReady(controllerManager, "kube-controller-manager", KCM_READY_TIMEOUT_MS, async () => {
      const res = await probe(`https://${LOOPBACK}:${kcmPort}/healthz`, { insecure: true });
      return res.status === 200;
    });
    log(`kube-controller-manager healthy; control plane up in ${Date.now() - started} ms`);

    return {
      dir,
      kubeconfigPath,
      server,
      caCertPath: pki.caCert,
      serviceAccountIssuer,
      ports: { etcd: etcdPort, etcdPeer: etcdPeerPort, apiserver: apiserverPort, controllerManager: kcmPort },
      binaries,
      pki,
      components: () =>
        running.procs.map((p) => ({
          name: p.name,
          pid: p.pid,
          logPath: p.logPath,
          running: p.exit === undefined,
        })),
      startComponent: (spec) => launch(spec.name, spec.command, spec.args, spec),
      async stopApiserver() {
        const live = procsNamed("kube-apiserver").filter((p) => p.exit === undefined);
        for (const p of live) await p.stop();
        log("kube-apiserver stopped (fault injection)");
      },
      async startApiserver() {
        if (procsNamed("kube-apiserver").some((p) => p.exit === undefined)) return;
        const again = await launch("kube-apiserver", binaries.kubeApiserver, apiserverArgs);
        await waitUntilReady(again, "kube-apiserver", APISERVER_READY_TIMEOUT_MS, async () => {
          const res = await probe(`${server}/readyz`, adminTls);
          return res.status === 200;
        });
        log(`kube-apiserver started again on ${server}`);
      },
      async issueKubeconfig(request) {
        const client = await issueClientCert(pki, {
          name: request.name,
          commonName: request.user,
          organizations: request.groups ?? [],
        });
        return writeKubeconfig({
          path: join(dir, `${request.name}.kubeconfig`),
          server,
          caCert: pki.caCert,
          client,
          user: request.user,
        });
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
