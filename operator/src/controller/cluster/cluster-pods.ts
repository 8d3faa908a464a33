import type { V1Pod } from "@kubernetes/client-node";
import { LABEL_CLUSTER } from "../../constants.ts";
import { type PodView, podView } from "../../plan/pods.ts";
import { resourceNames } from "../../specs/labels.ts";
import type { ClusterContext } from "./context.ts";

/** The cluster's broker pods in the cache, as the planners see them. */
export function clusterPodViews(ctx: ClusterContext): PodView[] {
  const stsName = resourceNames(ctx.name).statefulSet;
  return ctx.deps.caches.pods
    .list(ctx.namespace)
    .filter((p: V1Pod) => p.metadata?.labels?.[LABEL_CLUSTER] === ctx.name)
    .map((p) => podView(p, stsName))
    .filter((v): v is PodView => v !== undefined);
}
