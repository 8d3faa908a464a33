import { createHash } from "node:crypto";
import { brokerConfigFromSpec } from "../../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradCluster, ResolvedNaradClusterSpec } from "../../../packages/api/src/v1alpha1/types.ts";
import { BROKER_CONFIG_FILE } from "../constants.ts";
import type { V1ConfigMap } from "../kube/models.ts";
import { canonicalJson } from "./canonical-json.ts";
import { resourceNames } from "./labels.ts";
import { ownedMeta } from "./owner.ts";

/** The broker's config file: exactly the keys the broker accepts (it rejects unknown ones). */
export function brokerConfigJson(spec: ResolvedNaradClusterSpec): string {
  return `${canonicalJson(brokerConfigFromSpec(spec), 2)}\n`;
}

export function configMapSpec(cluster: NaradCluster, spec: ResolvedNaradClusterSpec): V1ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: ownedMeta(cluster, resourceNames(cluster.metadata.name ?? "").configMap),
    data: { [BROKER_CONFIG_FILE]: brokerConfigJson(spec) },
  };
}

/**
 * Hash of the ConfigMap's data, put on the pod template so a config change
 * changes the template (and so is visible as pending for a roll). Only the
 * data: never replica count, never Secret contents.
 */
export function configHash(data: Record<string, string>): string {
  return createHash("sha256").update(canonicalJson(data)).digest("hex").slice(0, 16);
}
