// Narad topic names allow upper case and underscores ("^[A-Za-z0-9._-]{1,255}$");
// Kubernetes object names are DNS-1123 subdomains (lower case, at most 253
// characters, labels that start and end alphanumeric). A topic whose name is
// already a valid object name keeps it; any other gets a sanitized name plus a
// short hash of the real name, so "Orders" and "orders" never collide. The
// real name always travels in spec.name; topicName() (operator defaults.ts)
// reads it back.

import { createHash } from "node:crypto";

/** Kubernetes' limit for a DNS-1123 subdomain (metadata.name of most objects). */
export const KUBE_NAME_MAX_CHARS = 253;
/** Hex characters of sha256(topic name) appended when the name had to change. */
export const KUBE_NAME_HASH_CHARS = 8;

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function isDns1123Subdomain(name: string): boolean {
  return name.length <= KUBE_NAME_MAX_CHARS && DNS1123_SUBDOMAIN.test(name);
}

/** The metadata.name a NaradTopic created for `topic` gets. Deterministic. */
export function kubeNameForTopic(topic: string): string {
  if (isDns1123Subdomain(topic)) return topic;
  const hash = createHash("sha256").update(topic).digest("hex").slice(0, KUBE_NAME_HASH_CHARS);
  const base = topic
    .toLowerCase()
    .replace(/_/g, "-")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, KUBE_NAME_MAX_CHARS - KUBE_NAME_HASH_CHARS - 1)
    .replace(/-+$/g, "");
  return base === "" ? `t-${hash}` : `${base}-${hash}`;
}
