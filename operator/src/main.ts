// narad-operator: wiring only. Config from the environment, a manager with
// informers and reconcilers, leader election gating the reconcilers, an HTTP
// server for /metrics, /healthz and /readyz, and an orderly SIGTERM.

import { KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { releaseEarlyStop } from "../../packages/runtime/src/early-stop.ts";
import { ClusterCredentials } from "./broker-client/credentials.ts";
import { HttpBrokerClient } from "./broker-client/http-client.ts";
import { loadConfig } from "./config.ts";
import {
  LEASE_DURATION_MS,
  LEASE_NAME,
  LEASE_RENEW_DEADLINE_MS,
  LEASE_RETRY_PERIOD_MS,
  SHUTDOWN_TIMEOUT_MS,
} from "./constants.ts";
import { Manager } from "./controller/manager.ts";
import { buildHttp } from "./http.ts";
import { ClientNodeApi, ClientNodeLeaseStore } from "./kube/client-node.ts";
import { systemClock } from "./kube/clock.ts";
import { LeaderElector } from "./kube/leader-election.ts";
import { OperatorMetrics } from "./metrics.ts";

const config = loadConfig(process.env, process.argv.slice(2));
const log = pino({ name: "narad-operator", level: config.logLevel });

const kc = new KubeConfig();
if (config.kubeconfig !== undefined) kc.loadFromFile(config.kubeconfig);
else kc.loadFromDefault();

const metrics = new OperatorMetrics({ processMetrics: true });
const api = new ClientNodeApi(kc);
// Admin calls carry the cluster's shared secret, found from the informer
// caches, which exist once the manager does.
let credentials: ClusterCredentials | undefined;
const manager = new Manager({
  kc,
  api,
  brokers: new HttpBrokerClient({ credentials: async (ep) => credentials?.source(ep) }),
  clock: systemClock,
  log,
  metrics,
  watchNamespaces: config.watchNamespaces,
  defaultBrokerImage: config.brokerImage,
});

credentials = new ClusterCredentials({
  pods: manager.caches.pods,
  clusters: manager.caches.clusters,
  getSecret: (ns, name) => api.getSecret(ns, name),
  clock: systemClock,
});

let stopping = false;
const elector = config.leaderElect
  ? new LeaderElector({
      store: new ClientNodeLeaseStore(kc, config.namespace, LEASE_NAME),
      clock: systemClock,
      identity: config.identity,
      leaseDurationMs: LEASE_DURATION_MS,
      renewDeadlineMs: LEASE_RENEW_DEADLINE_MS,
      retryPeriodMs: LEASE_RETRY_PERIOD_MS,
      onStartedLeading: () => void manager.startLeading(),
      // Losing the lease stops reconciling at once (writes refused from now).
      // Awaited by the elector: the next term starts only after this one's reconciles returned.
      onStoppedLeading: () => manager.stopLeading(),
      onNewLeader: (holder) => log.info({ holder, me: config.identity }, "leader is now %s", holder),
      log: (level, msg, fields) => log[level](fields ?? {}, msg),
    })
  : undefined;

const http = buildHttp(metrics, {
  alive: () => !stopping,
  ready: () => {
    const detail = manager.syncState();
    return { ready: !stopping && Object.values(detail).every(Boolean), detail };
  },
});

async function start(): Promise<void> {
  log.info(
    {
      identity: config.identity,
      leaseNamespace: config.namespace,
      leaderElect: config.leaderElect,
      watchNamespaces: config.watchNamespaces.length ? config.watchNamespaces : "all",
      server: kc.getCurrentCluster()?.server,
    },
    "narad-operator starting",
  );
  await http.listen({ host: config.listen.host, port: config.listen.port });
  log.info({ addr: `${config.listen.host}:${config.listen.port}` }, "serving /metrics, /healthz, /readyz");
  manager.start();
  if (elector !== undefined) elector.start();
  else {
    log.warn("leader election disabled (NARAD_OPERATOR_LEADER_ELECT=false): run a single replica");
    void manager.startLeading();
  }
}

async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, "shutting down: stop reconciling, release the lease, close the server");
  const deadline = setTimeout(() => {
    log.error({ timeoutMs: SHUTDOWN_TIMEOUT_MS }, "shutdown timed out; exiting");
    process.exit(1);
  }, SHUTDOWN_TIMEOUT_MS);
  deadline.unref();
  try {
    // Stop the reconcilers before releasing the lease, so a successor never
    // overlaps with our in-flight writes.
    await manager.stopLeading();
    await elector?.stop();
    await manager.stop();
    await http.close();
  } catch (err) {
    log.error({ err }, "error during shutdown");
  }
  log.info("stopped");
  process.exit(0);
}

process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
// entry.ts's exit-at-once handler gives way to the orderly shutdown above.
releaseEarlyStop();
process.on("unhandledRejection", (err) => log.error({ err }, "unhandled rejection"));

start().catch((err: unknown) => {
  log.fatal({ err }, "narad-operator failed to start");
  process.exit(1);
});
