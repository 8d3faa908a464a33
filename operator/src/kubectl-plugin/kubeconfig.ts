// $KUBECONFIG the way kubectl reads it, which client-node's loadFromDefault
// does not quite do: kubectl skips files in the list that do not exist, the
// first file to name a cluster, user or context wins (client-node throws on
// a duplicate), and the first current-context set wins (client-node takes
// the last). Pure: the files, already parsed, are inputs.

import type { Cluster, Context, User } from "@kubernetes/client-node";

export interface KubeconfigParts {
  clusters: Cluster[];
  users: User[];
  contexts: Context[];
  currentContext: string;
}

/** The files of a $KUBECONFIG value, in order, empty entries dropped. */
export function kubeconfigPaths(value: string, delimiter: string): string[] {
  return value.split(delimiter).filter((p) => p !== "");
}

export function mergeKubeconfigs(parts: readonly KubeconfigParts[]): KubeconfigParts {
  const firstByName = <T extends { name: string }>(pick: (p: KubeconfigParts) => readonly T[]): T[] => {
    const seen = new Map<string, T>();
    for (const part of parts)
      for (const item of pick(part)) if (!seen.has(item.name)) seen.set(item.name, item);
    return [...seen.values()];
  };
  return {
    clusters: firstByName((p) => p.clusters),
    users: firstByName((p) => p.users),
    contexts: firstByName((p) => p.contexts),
    currentContext: parts.find((p) => p.currentContext !== "")?.currentContext ?? "",
  };
}
