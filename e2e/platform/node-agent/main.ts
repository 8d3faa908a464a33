// Narad node agent: a small process "kubelet" for the local test platform.
// See README.md beside this file for what it does and does not do.

import fs from "node:fs";
import path from "node:path";
import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  StorageV1Api,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
  type V1Pod,
  type V1Service,
} from "@kubernetes/client-node";
import pino from "pino";
import { Binder } from "./binder.ts";
import { apiEndpoint, parseConfig } from "./config.ts";
import { HostsFile } from "./hosts-file.ts";
import { startInformer } from "./informer.ts";
import { IpAllocator, nodeIp } from "./ip-allocator.ts";
import { NodeRegistration, nodeLabels } from "./node-registration.ts";
import { killOrphans } from "./orphans.ts";
import { PodManager } from "./pod-manager.ts";
import { LocalDirProvisioner } from "./provisioner.ts";

/** How often unbound pods are offered to the binder again (a failed bind gets no new watch event). */
const BIND_RESYNC_MS = 5_000;
const HOSTS_UPDATE_DEBOUNCE_MS = 100;
const REPO_ROOT = path.resolve(import.meta.dirname, "../../..");

async function main(): Promise<void> {
  const cfg = parseConfig(process.argv.slice(2));
  const log = pino({ base: { node: cfg.nodeName } });
  fs.mkdirSync(path.join(cfg.stateDir, "pods"), { recursive: true });
  fs.mkdirSync(path.join(cfg.stateDir, "volumes"), { recursive: true });

  const kc = new KubeConfig();
  kc.loadFromFile(cfg.kubeconfig);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("kubeconfig has no current cluster");
  const caPem = cluster.caData
    ? Buffer.from(cluster.caData, "base64").toString("utf8")
    : cluster.caFile
      ? fs.readFileSync(cluster.caFile, "utf8")
      : "";
  const api = apiEndpoint(cluster.server);
  const core = kc.makeApiClient(CoreV1Api);
  const coord = kc.makeApiClient(CoordinationV1Api);
  const storage = kc.makeApiClient(StorageV1Api);

  const hostIP = nodeIp(cfg.podIpPrefix);
  const labels = nodeLabels(cfg.nodeName);

  const orphans = await killOrphans(cfg.stateDir, log);
  if (orphans > 0) log.info({ orphans }, "cleaned up after a previous run");

  const registration = new NodeRegistration(core, coord, { name: cfg.nodeName, ip: hostIP }, log);
  await registration.register();
  registration.start();

  const ips = new IpAllocator(cfg.podIpPrefix);
  const hosts = new HostsFile(path.join(cfg.stateDir, "hosts"));
  const binder = new Binder(core, cfg.nodeName, labels, log);
  const pods = new PodManager(
    {
      core,
      log,
      stateDir: cfg.stateDir,
      repoRoot: REPO_ROOT,
      hostIP,
      apiHost: api.host,
      apiPort: api.port,
      caPem,
      ips,
      hostsFile: hosts.path,
    },
    cfg.nodeName,
    binder,
  );
  const provisioner = new LocalDirProvisioner(core, storage, path.join(cfg.stateDir, "volumes"), log);

  // Coalesce bursts of pod events into one rewrite of the hosts file.
  let hostsTimer: NodeJS.Timeout | null = null;
  const scheduleHostsUpdate = () => {
    if (hostsTimer) return;
    hostsTimer = setTimeout(() => {
      hostsTimer = null;
      try {
        hosts.update(podInformer.list(), serviceInformer.list());
      } catch (err) {
        log.warn({ err }, "hosts file update failed");
      }
    }, HOSTS_UPDATE_DEBOUNCE_MS);
  };
  const podInformer = startInformer<V1Pod>(
    kc,
    "/api/v1/pods",
    () => core.listPodForAllNamespaces(),
    {
      upsert: (p) => {
        pods.upsert(p);
        scheduleHostsUpdate();
      },
      remove: (p) => {
        pods.remove(p);
        scheduleHostsUpdate();
      },
    },
    log,
  );
  const serviceInformer = startInformer<V1Service>(
    kc,
    "/api/v1/services",
    () => core.listServiceForAllNamespaces(),
    { upsert: scheduleHostsUpdate, remove: scheduleHostsUpdate },
    log,
  );
  const pvcInformer = startInformer<V1PersistentVolumeClaim>(
    kc,
    "/api/v1/persistentvolumeclaims",
    () => core.listPersistentVolumeClaimForAllNamespaces(),
    { upsert: (c) => provisioner.onClaim(c), remove: () => {} },
    log,
  );
  const pvInformer = startInformer<V1PersistentVolume>(
    kc,
    "/api/v1/persistentvolumes",
    () => core.listPersistentVolume(),
    { upsert: (v) => provisioner.onVolume(v), remove: () => {} },
    log,
  );
  const resync = setInterval(() => {
    pods.resync(podInformer.list());
    // Claims wait on classes created after them; PVs on their claim being deleted.
    for (const c of pvcInformer.list()) provisioner.onClaim(c);
    for (const v of pvInformer.list()) provisioner.onVolume(v);
  }, BIND_RESYNC_MS);
  await podInformer.synced;
  log.info({ hostIP, stateDir: cfg.stateDir, api: cluster.server }, "node agent ready");

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "stopping: terminating pod processes");
    clearInterval(resync);
    registration.stop();
    await Promise.all([
      podInformer.stop(),
      serviceInformer.stop(),
      pvcInformer.stop(),
      pvInformer.stop(),
    ]).catch(() => {});
    await pods.shutdown(cfg.shutdownGraceMs);
    log.info("stopped");
    log.flush();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
