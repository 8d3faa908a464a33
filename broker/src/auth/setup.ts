// Wires the security settings into the broker's parts: the HTTP
// authenticator (users file + cluster secret as an admin bearer), the
// cluster RPC interceptors and the HTTPS material. Everything here is I/O
// glue; the decisions live in the modules it composes.

import type { Server as HttpsServer } from "node:https";
import type { Interceptor, ServerInterceptor } from "@grpc/grpc-js";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { resourceNames } from "../../../packages/api/src/v1alpha1/names.ts";
import type { Config } from "../config.ts";
import type { AppOptions } from "../http/app.ts";
import type { UsersApi } from "../http/routes/users.ts";
import { httpsServerFactory, loadTls, type TlsMaterial, watchTls } from "../http/tls.ts";
import { loadKubeConfig } from "../meta/kube-metastore.ts";
import { clusterAuthClientInterceptor, clusterAuthServerInterceptor } from "../rpc/auth.ts";
import { type ClusterTls, clusterTlsCredentials } from "../rpc/tls.ts";
import { type ApiUsersStore, mergeUsers, openApiUsersStore } from "./api-users-store.ts";
import { Authenticator } from "./authenticator.ts";
import { type ClusterSecret, openClusterSecret } from "./cluster-secret.ts";
import { openKubeUsersStore } from "./kube-users-store.ts";
import { PasswordChecker } from "./passwords.ts";
import { defaultThrottle, LoginThrottle } from "./throttle.ts";
import type { UsersDb } from "./users-file.ts";
import { ensureDefaultUsersFile, openUsersStore, type UsersStore } from "./users-store.ts";

/** How often secret files are re-stated (Kubernetes propagates Secret updates in ~1 min anyway). */
export const securityPollMs = 2000;
/** A successful scrypt verification is reused this long. */
const verifiedCacheMs = 60_000;
/** Log a rejected cluster RPC at most this often. */
const rejectLogIntervalMs = 5000;

export interface Security {
  rpcClientInterceptors: Interceptor[];
  rpcServerInterceptors: ServerInterceptor[];
  /** Mutual TLS credentials of the cluster RPC (--cluster-tls-dir), else undefined. */
  rpcTls: ClusterTls | undefined;
  appOptions(registry: Registry): AppOptions;
  /** After listen: start applying certificate changes to the HTTPS server. */
  startTlsReload(): void;
  readonly scheme: "http" | "https";
  close(): void;
}

export async function openSecurity(
  config: Config,
  logger: Logger,
  nowMs: () => number,
  clustered: boolean,
  /** The kubernetes metastore's API client config (loaded only when used). */
  kubeConfig: () => KubeConfig = loadKubeConfig,
): Promise<Security> {
  const log = logger.child({ component: "security" });
  const sec = config.security;
  const closers: Array<() => void> = [];

  let clusterSecret: ClusterSecret | undefined;
  if (sec.clusterSecretFile !== undefined) {
    clusterSecret = await openClusterSecret(sec.clusterSecretFile, log, securityPollMs);
    closers.push(() => clusterSecret?.close());
  } else if (config.metastore === "kubernetes" && sec.clusterTlsDir === undefined) {
    log.warn(
      "no --cluster-secret-file or --cluster-tls-dir: cluster RPC between brokers is not authenticated",
    );
  }

  let users: UsersStore | undefined;
  if (sec.auth === "on") {
    const path = sec.authFile ?? (await ensureDefaultUsersFile(config.dataDir, log));
    users = await openUsersStore(path, log, securityPollMs);
    closers.push(() => users?.close());
  }
  // The Users API's own users: a file next to the metadata on one node, a
  // Secret shared by the brokers on the kubernetes metastore (read fresh
  // within --users-max-staleness-ms, else its users are refused with 503).
  let apiUsers: ApiUsersStore | undefined;
  if (users !== undefined && config.metastore === "file") {
    apiUsers = await openApiUsersStore(config.dataDir);
  } else if (users !== undefined && config.metastore === "kubernetes") {
    apiUsers = openKubeUsersStore({
      kubeConfig: kubeConfig(),
      namespace: config.namespace,
      name: resourceNames(config.clusterName).apiUsers,
      maxStalenessMs: config.usersMaxStalenessMs,
      pollMs: config.usersPollMs,
      requestTimeoutMs: config.usersRequestTimeoutMs,
      monoMs: () => performance.now(),
      logger: log.child({ component: "api-users" }),
    });
  }
  if (apiUsers !== undefined) closers.push(() => void apiUsers?.close());

  let tls: TlsMaterial | undefined;
  let factory: ReturnType<typeof httpsServerFactory> | undefined;
  if (sec.tlsDir !== undefined) {
    tls = await loadTls(sec.tlsDir);
    factory = httpsServerFactory(tls);
  }

  let lastRejectLog = 0;
  const rpcServerInterceptors: ServerInterceptor[] =
    clusterSecret !== undefined && clustered
      ? [
          clusterAuthServerInterceptor(
            () => (clusterSecret as ClusterSecret).rpcToken(),
            (call) => {
              const now = nowMs();
              if (now - lastRejectLog < rejectLogIntervalMs) return;
              lastRejectLog = now;
              log.warn(
                call,
                "cluster RPC call rejected: UNAUTHENTICATED (cluster secret missing or different)",
              );
            },
          ),
        ]
      : [];

  return {
    rpcClientInterceptors:
      clusterSecret !== undefined
        ? [clusterAuthClientInterceptor(() => (clusterSecret as ClusterSecret).rpcToken())]
        : [],
    rpcServerInterceptors,
    rpcTls:
      sec.clusterTlsDir === undefined ? undefined : clusterTlsCredentials(sec.clusterTlsDir, securityPollMs),
    scheme: tls === undefined ? "http" : "https",
    appOptions(registry) {
      const opts: AppOptions = {};
      if (factory !== undefined) opts.serverFactory = factory.factory;
      if (users !== undefined) {
        const store = users;
        const passwords = new PasswordChecker({
          concurrency: config.limits.hashConcurrency,
          maxQueued: config.limits.hashMaxQueued,
          cacheMs: verifiedCacheMs,
          cacheEntries: 10_000,
          nowMs,
        });
        const merged = mergedUsers(() => store.current(), apiUsers);
        const api: UsersApi = {
          file: () => store.current(),
          store: apiUsers,
          passwords,
          nowMs,
        };
        opts.users = api;
        opts.auth = {
          registry,
          metricsNeedAuth: sec.metricsAuth,
          authenticator: new Authenticator({
            users: merged,
            clusterSecretDigest: () => clusterSecret?.bearerDigest(),
            passwords,
            throttle: new LoginThrottle({
              ...defaultThrottle,
              freeFailures: config.limits.loginFreeAttempts,
              intervalMs: config.limits.loginIntervalMs,
            }),
            nowMs,
          }),
        };
      }
      return opts;
    },
    startTlsReload() {
      const server: HttpsServer | undefined = factory?.server();
      if (server === undefined || tls === undefined || sec.tlsDir === undefined) return;
      const w = watchTls(sec.tlsDir, server, log, securityPollMs, tls);
      closers.push(() => w.close());
    },
    close() {
      for (const c of closers) c();
    },
  };
}

/**
 * Both sources as one (the file wins a clash), rebuilt only when either
 * changed; a store past its freshness bound contributes no users, only the
 * reason (the authenticator's 503).
 */
function mergedUsers(file: () => UsersDb, api: ApiUsersStore | undefined): () => UsersDb {
  let lastFile: UsersDb | undefined;
  let lastApi: UsersDb | undefined;
  let merged: UsersDb | undefined;
  return () => {
    const f = file();
    const stale = api?.staleness();
    if (stale !== undefined) return mergeUsers(f, undefined, stale);
    const a = api?.db();
    if (merged === undefined || f !== lastFile || a !== lastApi) {
      merged = mergeUsers(f, a);
      lastFile = f;
      lastApi = a;
    }
    return merged;
  };
}
