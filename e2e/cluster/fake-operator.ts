// Shared pieces for e2e suites that run brokers against a real API server
// without the real operator: CRD install, a namespace, a NaradCluster whose
// status the test writes (members, membershipEpoch: the operator's job), a
// tiny fake operator that assigns partitions of new NaradTopics round-robin
// over the members, and a TCP proxy in front of the API server that a test
// can freeze (connections kept, nothing flows) or cut (every connection reset).

import { readFile, writeFile } from "node:fs/promises";
import { createServer, type Server, Socket } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1CustomResourceDefinition,
} from "@kubernetes/client-node";
import { load as loadYaml } from "js-yaml";
import type { MemberStatus, NaradCluster, NaradTopic } from "../../packages/api/src/v1alpha1/types.ts";
import { waitFor } from "../platform/helpers.ts";

export const GROUP = "narad.dev";
export const VERSION = "v1alpha1";

export async function installCrds(kc: KubeConfig): Promise<void> {
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const dir = join(import.meta.dirname, "..", "..", "crds");
  for (const file of ["narad.dev_naradclusters.yaml", "narad.dev_naradtopics.yaml"]) {
    const body = loadYaml(await readFile(join(dir, file), "utf8")) as V1CustomResourceDefinition;
    await ext.createCustomResourceDefinition({ body });
    const name = body.metadata?.name ?? "";
    await waitFor(
      async () => {
        const crd = await ext.readCustomResourceDefinition({ name });
        return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
      },
      { timeoutMs: 30_000, what: `CRD ${name} established` },
    );
  }
  // Established is not yet served: the first requests get 429 "storage is (re)initializing".
  const objects = kc.makeApiClient(CustomObjectsApi);
  for (const plural of ["naradclusters", "naradtopics"]) {
    await waitFor(
      () => objects.listClusterCustomObject({ group: GROUP, version: VERSION, plural }).then(() => true),
      { timeoutMs: 30_000, what: `${plural} served` },
    );
  }
}

export async function createNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const name = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

/** Creates the NaradCluster `name` and writes its status (members, epoch) through the status subresource. */
export async function createCluster(
  kc: KubeConfig,
  namespace: string,
  name: string,
  members: MemberStatus[],
  epoch: number,
): Promise<void> {
  const body: NaradCluster = {
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradCluster",
    metadata: { name, namespace },
    spec: { replicas: members.length },
  };
  await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: "naradclusters",
    body,
  });
  await writeMembers(kc, namespace, name, members, epoch);
}

export async function writeMembers(
  kc: KubeConfig,
  namespace: string,
  name: string,
  members: MemberStatus[],
  epoch: number,
): Promise<void> {
  await kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObjectStatus(
    {
      group: GROUP,
      version: VERSION,
      namespace,
      plural: "naradclusters",
      name,
      body: { status: { members, membershipEpoch: epoch } },
    },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );
}

/**
 * Assigns the partitions of new NaradTopics of `cluster` round-robin over
 * `memberIds` (partition p → memberIds[p % n]), polling every pollMs.
 * Never touches topics being deleted. Returns stop().
 */
export function startFakeOperator(
  kc: KubeConfig,
  namespace: string,
  cluster: string,
  memberIds: readonly string[],
  opts: { pollMs?: number; log?: (line: string) => void } = {},
): () => Promise<void> {
  const api = kc.makeApiClient(CustomObjectsApi);
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        const list = (await api.listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: "naradtopics",
        })) as { items: NaradTopic[] };
        for (const t of list.items) {
          if (t.spec.cluster !== cluster || t.metadata.deletionTimestamp !== undefined) continue;
          const partitions = t.spec.partitions ?? 3;
          if ((t.status?.assignments?.length ?? 0) >= partitions) continue;
          const assignments = Array.from({ length: partitions }, (_, p) => ({
            partition: p,
            owner: memberIds[p % memberIds.length] ?? "",
          }));
          await api.patchNamespacedCustomObjectStatus(
            {
              group: GROUP,
              version: VERSION,
              namespace,
              plural: "naradtopics",
              name: t.metadata.name ?? "",
              body: {
                status: {
                  assignments,
                  phase: "Ready",
                  assignmentEpoch: (t.status?.assignmentEpoch ?? 0) + 1,
                },
              },
            },
            setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
          );
        }
      } catch (err) {
        if (!stopped) opts.log?.(`fake operator: ${err instanceof Error ? err.message : String(err)}`);
      }
      await sleep(opts.pollMs ?? 100);
    }
  })();
  return async () => {
    stopped = true;
    await loop;
  };
}

/** Writes a copy of a (JSON) kubeconfig whose clusters point at https://127.0.0.1:<port>. */
export async function writeKubeconfigVia(source: string, target: string, port: number): Promise<string> {
  const kc = JSON.parse(await readFile(source, "utf8")) as {
    clusters: Array<{ cluster: { server: string } }>;
  };
  for (const c of kc.clusters) c.cluster.server = `https://127.0.0.1:${port}`;
  await writeFile(target, JSON.stringify(kc, null, 2), { mode: 0o600 });
  return target;
}

export type ApiProxyMode = "open" | "frozen" | "cut";

export interface ApiProxy {
  port: number;
  /** open: forward; frozen: keep connections, forward nothing; cut: reset every connection. */
  set(mode: ApiProxyMode): void;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number): Promise<ApiProxy> {
  let mode: ApiProxyMode = "open";
  const pairs = new Set<{ client: Socket; upstream: Socket | undefined }>();
  const connectUpstream = (pair: { client: Socket; upstream: Socket | undefined }) => {
    const upstream = new Socket();
    pair.upstream = upstream;
    upstream.connect(targetPort, "127.0.0.1");
    pair.client.pipe(upstream);
    upstream.pipe(pair.client);
    upstream.on("error", () => pair.client.destroy());
    upstream.on("close", () => pair.client.destroy());
  };
  const server: Server = createServer((client) => {
    const pair = { client, upstream: undefined as Socket | undefined };
    pairs.add(pair);
    client.on("error", () => pair.upstream?.destroy());
    client.on("close", () => {
      pair.upstream?.destroy();
      pairs.delete(pair);
    });
    if (mode === "cut") {
      client.resetAndDestroy();
      return;
    }
    if (mode === "frozen") {
      client.pause();
      return;
    }
    connectUpstream(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("proxy has no port");
  return {
    port: address.port,
    set(next) {
      mode = next;
      for (const pair of [...pairs]) {
        if (next === "cut") {
          pair.upstream?.destroy();
          pair.client.resetAndDestroy();
        } else if (next === "frozen") {
          pair.upstream?.pause();
          pair.client.pause();
        } else if (pair.upstream === undefined) {
          pair.client.resume();
          connectUpstream(pair);
        } else {
          pair.upstream.resume();
          pair.client.resume();
        }
      }
    },
    close: async () => {
      for (const pair of pairs) {
        pair.upstream?.destroy();
        pair.client.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
