// Shared inputs for specs/ and plan/ unit tests.
import type { NaradCluster, NaradClusterSpec } from "../../../packages/api/src/v1alpha1/types.ts";

export function testCluster(spec: NaradClusterSpec = {}, name = "demo", namespace = "ns1"): NaradCluster {
  return {
    apiVersion: "narad.dev/v1alpha1",
    kind: "NaradCluster",
    metadata: { name, namespace, uid: `uid-${name}`, generation: 1, resourceVersion: "1" },
    spec,
  };
}
