import type { V1Pod, V1Secret } from "@kubernetes/client-node";
import { withClusterDefaults } from "../../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import { BROKER_CLUSTER_SECRET_KEY, CLUSTER_SECRET_CACHE_MS, LABEL_CLUSTER } from "../constants.ts";
import type { Clock } from "../kube/clock.ts";
import type { KindCache } from "../kube/informers.ts";
import { clusterSecretName } from "../specs/secrets.ts";
import type { BrokerEndpoint } from "./types.ts";

/** How the operator talks to one broker's admin API. */
export interface BrokerAuth {
  /** Authorization: Bearer <cluster secret> (the broker accepts it as admin). */
  bearer?: string;
  /**
   * HTTPS (spec.security.tls). ca: the TLS Secret's ca.crt, which the chain
   * must verify against; absent: the certificate is not verified. The host
   * name is never checked: the operator dials pod IPs, which certificates
   * rarely name.
   */
  tls?: { ca?: string };
}

export type CredentialSource = (ep: BrokerEndpoint) => Promise<BrokerAuth | undefined>;

/**
 * Finds the credentials for a broker endpoint from the informer caches: the
 * pod with that IP and name → its cluster (label) → the cluster secret and
 * TLS Secret named by the spec, read with a GET and reused for
 * CLUSTER_SECRET_CACHE_MS (so a rotated secret is picked up within that).
 * Call sites only pass the pod IP and member id.
 */
export class ClusterCredentials {
  readonly #pods: KindCache<V1Pod>;
  readonly #clusters: KindCache<NaradCluster>;
  readonly #getSecret: (namespace: string, name: string) => Promise<V1Secret | undefined>;
  readonly #clock: Clock;
  readonly #cache = new Map<string, { at: number; secret: V1Secret | undefined }>();

  constructor(opts: {
    pods: KindCache<V1Pod>;
    clusters: KindCache<NaradCluster>;
    getSecret: (namespace: string, name: string) => Promise<V1Secret | undefined>;
    clock: Clock;
  }) {
    this.#pods = opts.pods;
    this.#clusters = opts.clusters;
    this.#getSecret = opts.getSecret;
    this.#clock = opts.clock;
  }

  readonly source: CredentialSource = async (ep) => {
    const pod = this.#pods.list().find((p) => p.metadata?.name === ep.id && p.status?.podIP === ep.podIP);
    const namespace = pod?.metadata?.namespace;
    const clusterName = pod?.metadata?.labels?.[LABEL_CLUSTER];
    if (namespace === undefined || clusterName === undefined) return undefined;
    const cluster = this.#clusters.get(namespace, clusterName);
    if (cluster === undefined) return undefined;
    const spec = withClusterDefaults(cluster.spec);
    const auth: BrokerAuth = {};
    const rpc = await this.#secret(namespace, clusterSecretName(clusterName, spec));
    const bearer = decode(rpc, BROKER_CLUSTER_SECRET_KEY)?.trim();
    if (bearer) auth.bearer = bearer;
    if (spec.security.tls !== undefined) {
      const tls = await this.#secret(namespace, spec.security.tls.secretName);
      const ca = decode(tls, "ca.crt");
      auth.tls = ca === undefined ? {} : { ca };
    }
    return auth;
  };

  async #secret(namespace: string, name: string): Promise<V1Secret | undefined> {
    const key = `${namespace}/${name}`;
    const now = this.#clock.now();
    const hit = this.#cache.get(key);
    if (hit !== undefined && now - hit.at < CLUSTER_SECRET_CACHE_MS) return hit.secret;
    const secret = await this.#getSecret(namespace, name);
    this.#cache.set(key, { at: now, secret });
    return secret;
  }
}

function decode(secret: V1Secret | undefined, key: string): string | undefined {
  const b64 = secret?.data?.[key];
  return b64 === undefined ? undefined : Buffer.from(b64, "base64").toString("utf8");
}
