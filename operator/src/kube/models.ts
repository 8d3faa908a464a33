// Type-only re-exports of the client-node models that the pure layers
// (specs/, plan/) describe objects with. Those layers may not import
// @kubernetes/client-node (a lint rule bans the package by path, type imports
// included); these types are erased at runtime, so importing them from here
// keeps specs/ and plan/ free of any runtime dependency on the client.
export type {
  KubernetesObject,
  V1ConfigMap,
  V1Container,
  V1EnvVar,
  V1Lease,
  V1NetworkPolicy,
  V1NetworkPolicyIngressRule,
  V1NetworkPolicyPeer,
  V1ObjectMeta,
  V1OwnerReference,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodCondition,
  V1PodDisruptionBudget,
  V1PodSpec,
  V1PodTemplateSpec,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1Service,
  V1ServiceAccount,
  V1StatefulSet,
  V1Volume,
  V1VolumeMount,
} from "@kubernetes/client-node";
