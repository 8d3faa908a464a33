// Thin, typed calls to the narad.dev API for the metastore: the right patch
// content type, a per-request deadline (so writes fail fast when the API
// server is unreachable), and Kubernetes errors mapped to NaradErrors.

import {
  ApiException,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderMiddleware,
  setHeaderOptions,
} from "@kubernetes/client-node";
import {
  GROUP,
  NARAD_CLUSTER_PLURAL,
  NARAD_TOPIC_PLURAL,
  type NaradCluster,
  type NaradTopic,
  VERSION,
} from "../../../../packages/api/src/v1alpha1/types.ts";
import { NaradError } from "../../errors.ts";
import type { ListResult } from "./reflector.ts";

export interface NaradApi {
  listTopics(): Promise<ListResult<NaradTopic>>;
  listClusters(fieldSelector: string): Promise<ListResult<NaradCluster>>;
  createTopic(body: NaradTopic): Promise<NaradTopic>;
  patchTopicSpec(name: string, patch: object): Promise<NaradTopic>;
  deleteTopic(name: string): Promise<void>;
  /** A quorum GET of one NaradTopic (by object name), not the watch cache. */
  getTopic(name: string): Promise<NaradTopic>;
  /**
   * A JSON Patch (RFC 6902) of a NaradTopic's status subresource. Every
   * change the broker makes there names the resourceVersion it read
   * (`replace /metadata/resourceVersion`), so it applies to that version only (else 409).
   */
  patchTopicStatus(name: string, ops: readonly JsonPatchOp[]): Promise<NaradTopic>;
  /** A quorum GET of one NaradCluster. */
  getCluster(name: string): Promise<NaradCluster>;
  /** A merge patch of the NaradCluster's scale subresource (autoscaling/v1 Scale). */
  patchClusterScale(name: string, patch: object): Promise<unknown>;
  topicsPath: string;
  clustersPath: string;
}

/** One RFC 6902 operation (the broker uses replace and test). */
export interface JsonPatchOp {
  op: "replace" | "test";
  path: string;
  value: unknown;
}

export function naradApi(kubeConfig: KubeConfig, namespace: string, requestTimeoutMs: number): NaradApi {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const base = { group: GROUP, version: VERSION, namespace };
  // client-node's generated code takes Observable middleware it does not
  // export; wrap the one it builds for headers to also set an abort deadline.
  const passthrough = setHeaderMiddleware("Accept", "application/json");
  const deadline: ReturnType<typeof setHeaderMiddleware> = {
    pre: (ctx) => {
      ctx.setSignal(AbortSignal.timeout(requestTimeoutMs));
      return passthrough.pre(ctx);
    },
    post: (response) => passthrough.post(response),
  };
  const opts = { middleware: [deadline], middlewareMergeStrategy: "append" as const };
  return {
    topicsPath: `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${NARAD_TOPIC_PLURAL}`,
    clustersPath: `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${NARAD_CLUSTER_PLURAL}`,
    listTopics: () => api.listNamespacedCustomObject({ ...base, plural: NARAD_TOPIC_PLURAL }, opts),
    listClusters: (fieldSelector) =>
      api.listNamespacedCustomObject({ ...base, plural: NARAD_CLUSTER_PLURAL, fieldSelector }, opts),
    createTopic: (body) =>
      api.createNamespacedCustomObject({ ...base, plural: NARAD_TOPIC_PLURAL, body }, opts),
    patchTopicSpec: (name, patch) =>
      api.patchNamespacedCustomObject(
        { ...base, plural: NARAD_TOPIC_PLURAL, name, body: patch },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch, opts),
      ),
    deleteTopic: async (name) => {
      await api.deleteNamespacedCustomObject({ ...base, plural: NARAD_TOPIC_PLURAL, name }, opts);
    },
    getTopic: (name) => api.getNamespacedCustomObject({ ...base, plural: NARAD_TOPIC_PLURAL, name }, opts),
    patchTopicStatus: (name, ops) =>
      api.patchNamespacedCustomObjectStatus(
        { ...base, plural: NARAD_TOPIC_PLURAL, name, body: ops },
        setHeaderOptions("Content-Type", PatchStrategy.JsonPatch, opts),
      ),
    getCluster: (name) =>
      api.getNamespacedCustomObject({ ...base, plural: NARAD_CLUSTER_PLURAL, name }, opts),
    patchClusterScale: (name, patch) =>
      api.patchNamespacedCustomObjectScale(
        { ...base, plural: NARAD_CLUSTER_PLURAL, name, body: patch },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch, opts),
      ),
  };
}

/** HTTP status of a Kubernetes API error, or undefined for transport errors (refused, timeout). */
export function apiStatus(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

export function apiMessage(err: unknown): string {
  if (err instanceof ApiException) {
    const body = err.body as unknown;
    if (typeof body === "string") {
      try {
        const parsed = JSON.parse(body) as { message?: unknown };
        if (typeof parsed.message === "string") return parsed.message;
      } catch {
        return body;
      }
    }
    if (
      typeof body === "object" &&
      body !== null &&
      typeof (body as { message?: unknown }).message === "string"
    )
      return (body as { message: string }).message;
  }
  return err instanceof Error ? err.message : String(err);
}

/** Maps a failed write to what the client should see. */
export function writeError(err: unknown, what: string, retryAfterSeconds: number): NaradError {
  if (err instanceof NaradError) return err;
  const status = apiStatus(err);
  const msg = apiMessage(err);
  if (status === 404) return new NaradError("NOT_FOUND", `${what}: not found`);
  if (status === 409) return new NaradError("CONFLICT", `${what}: already exists`);
  if (status === 422 || status === 400) return new NaradError("BAD_REQUEST", `${what}: ${msg}`);
  if (status === 401 || status === 403)
    return new NaradError("INTERNAL", `${what}: Kubernetes API refused: ${msg}`);
  if (status === 429) return new NaradError("TOO_MANY_REQUESTS", `${what}: ${msg}`, { retryAfterSeconds });
  return new NaradError("UNAVAILABLE", `${what}: Kubernetes API unavailable: ${msg}`, {
    retryAfterSeconds,
    cause: err,
  });
}
