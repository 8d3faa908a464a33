// The plugin's Kubernetes I/O, kept thin: the kubeconfig read as kubectl
// reads it, a few GETs and one merge patch, and the port-forward listener.

import { existsSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { delimiter } from "node:path";
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  PortForward,
  setHeaderOptions,
  type V1Pod,
  type V1Secret,
} from "@kubernetes/client-node";
import type { NaradCluster } from "../../../packages/api/src/v1alpha1/types.ts";
import { API_GROUP, API_VERSION, CLUSTER_PLURAL } from "../constants.ts";
import { apiMessage, httpStatus } from "../kube/api.ts";
import { selectorString } from "../specs/labels.ts";
import type { Connection } from "./args.ts";
import { PluginError } from "./errors.ts";
import { kubeconfigPaths, mergeKubeconfigs } from "./kubeconfig.ts";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/**
 * --kubeconfig FILE, else $KUBECONFIG (a list of files merged as kubectl
 * merges them, kubeconfig.ts), else ~/.kube/config or the in-cluster account
 * (client-node's loadFromDefault); --context switches the context; the
 * namespace is -n, else the context's, else "default".
 */
export function loadKubeConfig(
  connection: Connection,
  env: NodeJS.ProcessEnv = process.env,
): { kc: KubeConfig; namespace: string } {
  const kc = new KubeConfig();
  const listed = kubeconfigPaths(env.KUBECONFIG ?? "", delimiter);
  if (connection.kubeconfig !== undefined) loadFile(kc, connection.kubeconfig);
  else if (listed.length > 0) {
    const files = listed.filter((file) => existsSync(file));
    if (files.length === 0) throw new PluginError(`no file of KUBECONFIG exists (${listed.join(delimiter)})`);
    kc.loadFromOptions(
      mergeKubeconfigs(
        files.map((file) => {
          const one = new KubeConfig();
          loadFile(one, file);
          return one;
        }),
      ),
    );
  } else kc.loadFromDefault();
  if (connection.context !== undefined) {
    if (kc.getContextObject(connection.context) === null)
      throw new PluginError(`context "${connection.context}" not found in the kubeconfig`);
    kc.setCurrentContext(connection.context);
  }
  const fromContext = kc.getContextObject(kc.getCurrentContext())?.namespace;
  return { kc, namespace: connection.namespace ?? (fromContext || "default") };
}

/** loadFromFile (which also makes the file's relative paths absolute), failures named by file. */
function loadFile(kc: KubeConfig, file: string): void {
  try {
    kc.loadFromFile(file);
  } catch (err) {
    throw new PluginError(`reading kubeconfig ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export class PluginKube {
  readonly #kc: KubeConfig;
  readonly #custom: CustomObjectsApi;
  readonly #core: CoreV1Api;

  constructor(kc: KubeConfig) {
    this.#kc = kc;
    this.#custom = kc.makeApiClient(CustomObjectsApi);
    this.#core = kc.makeApiClient(CoreV1Api);
  }

  /** The NaradCluster; a PluginError naming namespace and name when there is none. */
  async cluster(namespace: string, name: string): Promise<NaradCluster> {
    try {
      return (await this.#custom.getNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural: CLUSTER_PLURAL,
        name,
      })) as NaradCluster;
    } catch (err) {
      if (httpStatus(err) === 404) throw new PluginError(notFound(namespace, name));
      throw apiError(`reading naradcluster ${namespace}/${name}`, err);
    }
  }

  /** Names of the namespace's NaradClusters (shell completion). */
  async clusterNames(namespace: string): Promise<string[]> {
    const list = (await this.#custom.listNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace,
      plural: CLUSTER_PLURAL,
    })) as { items?: Array<{ metadata?: { name?: string } }> };
    return (list.items ?? []).flatMap((c) => (c.metadata?.name === undefined ? [] : [c.metadata.name]));
  }

  /** The cluster's broker pods, by the StatefulSet's selector labels. */
  async pods(namespace: string, clusterName: string): Promise<V1Pod[]> {
    try {
      const list = await this.#core.listNamespacedPod({
        namespace,
        labelSelector: selectorString(clusterName),
      });
      return list.items;
    } catch (err) {
      throw apiError(`listing the pods of ${namespace}/${clusterName}`, err);
    }
  }

  /** undefined when the Secret does not exist. */
  async secret(namespace: string, name: string): Promise<V1Secret | undefined> {
    try {
      return await this.#core.readNamespacedSecret({ namespace, name });
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw apiError(`reading secret ${namespace}/${name}`, err);
    }
  }

  async patchCluster(namespace: string, name: string, patch: object): Promise<NaradCluster> {
    try {
      return (await this.#custom.patchNamespacedCustomObject(
        { group: API_GROUP, version: API_VERSION, namespace, plural: CLUSTER_PLURAL, name, body: patch },
        mergePatch,
      )) as NaradCluster;
    } catch (err) {
      if (httpStatus(err) === 404) throw new PluginError(notFound(namespace, name));
      throw apiError(`patching naradcluster ${namespace}/${name}`, err);
    }
  }

  /**
   * Listens on address:localPort; each connection is a port-forward stream
   * to the pod's port through the API server. Resolves once listening.
   * `close` stops listening and cuts the open connections: a client's
   * kept-alive connection would otherwise hold the close open for good.
   */
  async forward(
    namespace: string,
    pod: string,
    podPort: number,
    address: string,
    localPort: number,
    onError: (message: string) => void,
  ): Promise<{ port: number; close: () => Promise<void> }> {
    const pf = new PortForward(this.#kc);
    const open = new Set<Socket>();
    const server = createServer((socket) => {
      open.add(socket);
      socket.once("close", () => open.delete(socket));
      pf.portForward(namespace, pod, [podPort], socket, null, socket).catch((err: unknown) => {
        onError(`forwarding to ${namespace}/${pod}: ${apiMessage(err)}`);
        socket.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(localPort, address, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const bound = server.address();
    return {
      port: typeof bound === "object" && bound !== null ? bound.port : localPort,
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          for (const socket of open) socket.destroy();
        }),
    };
  }
}

export function notFound(namespace: string, name: string): string {
  return `naradcluster "${name}" not found in namespace "${namespace}"`;
}

function apiError(what: string, err: unknown): PluginError {
  const code = httpStatus(err);
  return new PluginError(`${what}: ${code === undefined ? "" : `${code} `}${apiMessage(err)}`);
}
