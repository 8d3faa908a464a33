// The CustomResourceDefinitions, built from schema.ts. scripts/gen-crds.ts
// writes them to crds/ (and the chart and bundle); nothing edits those files by hand.

import { type JSONSchemaProps, naradClusterSchema, naradTopicSchema, naradUserSchema } from "./schema.ts";
import {
  GROUP,
  NARAD_CLUSTER_KIND,
  NARAD_CLUSTER_PLURAL,
  NARAD_TOPIC_KIND,
  NARAD_TOPIC_PLURAL,
  NARAD_USER_KIND,
  NARAD_USER_PLURAL,
  VERSION,
} from "./types.ts";

export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  jsonPath: string;
  description?: string;
  priority?: number;
}

/** apiextensions.k8s.io/v1 CustomResourceDefinition, only the fields used here. */
export interface CustomResourceDefinition {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames: string[];
      categories: string[];
    };
    scope: "Namespaced";
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      schema: { openAPIV3Schema: JSONSchemaProps };
      subresources: {
        status: Record<string, never>;
        scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath: string };
      };
      additionalPrinterColumns: PrinterColumn[];
    }[];
  };
}

const age: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };

const labels = { "app.kubernetes.io/part-of": "narad" };

export function naradClusterCrd(): CustomResourceDefinition {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${NARAD_CLUSTER_PLURAL}.${GROUP}`, labels },
    spec: {
      group: GROUP,
      names: {
        kind: NARAD_CLUSTER_KIND,
        listKind: `${NARAD_CLUSTER_KIND}List`,
        plural: NARAD_CLUSTER_PLURAL,
        singular: "naradcluster",
        shortNames: ["nc"],
        categories: ["narad"],
      },
      scope: "Namespaced",
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: naradClusterSchema },
          subresources: {
            status: {},
            scale: {
              specReplicasPath: ".spec.replicas",
              statusReplicasPath: ".status.replicas",
              labelSelectorPath: ".status.selector",
            },
          },
          additionalPrinterColumns: [
            {
              name: "Ready",
              type: "integer",
              jsonPath: ".status.readyReplicas",
              description: "Ready brokers",
            },
            { name: "Replicas", type: "integer", jsonPath: ".spec.replicas", description: "Desired brokers" },
            { name: "Phase", type: "string", jsonPath: ".status.phase", description: "Summary state" },
            age,
          ],
        },
      ],
    },
  };
}

export function naradTopicCrd(): CustomResourceDefinition {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${NARAD_TOPIC_PLURAL}.${GROUP}`, labels },
    spec: {
      group: GROUP,
      names: {
        kind: NARAD_TOPIC_KIND,
        listKind: `${NARAD_TOPIC_KIND}List`,
        plural: NARAD_TOPIC_PLURAL,
        singular: "naradtopic",
        shortNames: ["nt"],
        categories: ["narad"],
      },
      scope: "Namespaced",
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: naradTopicSchema },
          subresources: { status: {} },
          additionalPrinterColumns: [
            {
              name: "Cluster",
              type: "string",
              jsonPath: ".spec.cluster",
              description: "Serving NaradCluster",
            },
            {
              name: "Partitions",
              type: "integer",
              jsonPath: ".spec.partitions",
              description: "Partition count",
            },
            {
              name: "Ready",
              type: "string",
              jsonPath: '.status.conditions[?(@.type=="Ready")].status',
              description: "Ready condition",
            },
            age,
          ],
        },
      ],
    },
  };
}

export function naradUserCrd(): CustomResourceDefinition {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${NARAD_USER_PLURAL}.${GROUP}`, labels },
    spec: {
      group: GROUP,
      names: {
        kind: NARAD_USER_KIND,
        listKind: `${NARAD_USER_KIND}List`,
        plural: NARAD_USER_PLURAL,
        singular: "naraduser",
        shortNames: ["nu"],
        categories: ["narad"],
      },
      scope: "Namespaced",
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: naradUserSchema },
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: "Cluster", type: "string", jsonPath: ".spec.cluster", description: "NaradCluster" },
            { name: "Username", type: "string", jsonPath: ".status.username", description: "Users API name" },
            {
              name: "Managed-By",
              type: "string",
              jsonPath: ".metadata.annotations.narad\\.dev/managed-by",
              description: "api: created through the Users API and mirrored here",
            },
            {
              name: "Ready",
              type: "string",
              jsonPath: '.status.conditions[?(@.type=="Ready")].status',
              description: "Ready condition",
            },
            age,
          ],
        },
      ],
    },
  };
}

export function allCrds(): CustomResourceDefinition[] {
  return [naradClusterCrd(), naradTopicCrd(), naradUserCrd()];
}
