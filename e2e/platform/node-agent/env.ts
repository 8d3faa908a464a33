// Container environment (pure): envFrom, env with valueFrom, the in-cluster
// API variables and `$(VAR)` expansion. ConfigMaps and Secrets are fetched by
// the caller first (see `referencedObjects`) so this stays testable.

import type { V1Container, V1Pod } from "@kubernetes/client-node";

export interface EnvContext {
  readonly podIP: string;
  readonly hostIP: string;
  readonly apiHost: string;
  readonly apiPort: string;
  /** name → data; a missing key means the object does not exist. */
  readonly configMaps: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** name → decoded data. */
  readonly secrets: ReadonlyMap<string, Readonly<Record<string, string>>>;
}

export type EnvResult =
  | { readonly ok: true; readonly env: Record<string, string> }
  | { readonly ok: false; readonly message: string };

export function referencedObjects(container: V1Container): { configMaps: Set<string>; secrets: Set<string> } {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef?.name) configMaps.add(from.configMapRef.name);
    if (from.secretRef?.name) secrets.add(from.secretRef.name);
  }
  for (const e of container.env ?? []) {
    if (e.valueFrom?.configMapKeyRef?.name) configMaps.add(e.valueFrom.configMapKeyRef.name);
    if (e.valueFrom?.secretKeyRef?.name) secrets.add(e.valueFrom.secretKeyRef.name);
  }
  return { configMaps, secrets };
}

/**
 * Expands `$(NAME)` from `vars`; `$$(NAME)` yields a literal `$(NAME)` and
 * unknown references are left untouched, as the kubelet does.
 */
export function expandVars(input: string, vars: Readonly<Record<string, string>>): string {
  return input.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (match, name: string | undefined) => {
    if (match === "$$") return "$";
    if (name !== undefined && Object.hasOwn(vars, name)) return vars[name]!;
    return match;
  });
}

/** Values for `fieldRef` (downward API); undefined for unsupported paths. */
export function fieldRefValue(
  pod: V1Pod,
  fieldPath: string,
  podIP: string,
  hostIP: string,
): string | undefined {
  const md = pod.metadata ?? {};
  switch (fieldPath) {
    case "metadata.name":
      return md.name ?? "";
    case "metadata.namespace":
      return md.namespace ?? "";
    case "metadata.uid":
      return md.uid ?? "";
    case "spec.nodeName":
      return pod.spec?.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec?.serviceAccountName ?? "default";
    case "status.podIP":
    case "status.podIPs":
      return podIP;
    case "status.hostIP":
    case "status.hostIPs":
      return hostIP;
  }
  const label = /^metadata\.labels\['(.+)'\]$/.exec(fieldPath);
  if (label) return md.labels?.[label[1]!] ?? "";
  const annotation = /^metadata\.annotations\['(.+)'\]$/.exec(fieldPath);
  if (annotation) return md.annotations?.[annotation[1]!] ?? "";
  return undefined;
}

/** `resourceFieldRef`: the raw quantity of the container's limit, else its request, else "0". */
function resourceFieldValue(container: V1Container, resource: string): string {
  const [kind, name] = resource.split(".") as [string, string | undefined];
  const res = container.resources;
  const pick = (m: Record<string, string> | undefined) => (name ? m?.[name] : undefined);
  if (kind === "limits") return pick(res?.limits) ?? pick(res?.requests) ?? "0";
  if (kind === "requests") return pick(res?.requests) ?? "0";
  return "0";
}

export function containerEnv(pod: V1Pod, container: V1Container, ctx: EnvContext): EnvResult {
  const env: Record<string, string> = {
    KUBERNETES_SERVICE_HOST: ctx.apiHost,
    KUBERNETES_SERVICE_PORT: ctx.apiPort,
    KUBERNETES_SERVICE_PORT_HTTPS: ctx.apiPort,
    POD_IP: ctx.podIP,
    HOSTNAME: pod.spec?.hostname ?? pod.metadata?.name ?? "",
  };

  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? "";
    if (from.configMapRef) {
      const data = ctx.configMaps.get(from.configMapRef.name ?? "");
      if (!data && !from.configMapRef.optional) {
        return { ok: false, message: `configmap "${from.configMapRef.name}" not found` };
      }
      for (const [k, v] of Object.entries(data ?? {})) env[prefix + k] = v;
    }
    if (from.secretRef) {
      const data = ctx.secrets.get(from.secretRef.name ?? "");
      if (!data && !from.secretRef.optional) {
        return { ok: false, message: `secret "${from.secretRef.name}" not found` };
      }
      for (const [k, v] of Object.entries(data ?? {})) env[prefix + k] = v;
    }
  }

  for (const e of container.env ?? []) {
    if (e.valueFrom === undefined) {
      // Later entries may refer to earlier ones, so expand against what is set so far.
      env[e.name] = expandVars(e.value ?? "", env);
      continue;
    }
    const vf = e.valueFrom;
    if (vf.fieldRef) {
      const v = fieldRefValue(pod, vf.fieldRef.fieldPath, ctx.podIP, ctx.hostIP);
      if (v === undefined) return { ok: false, message: `unsupported fieldRef ${vf.fieldRef.fieldPath}` };
      env[e.name] = v;
    } else if (vf.configMapKeyRef) {
      const ref = vf.configMapKeyRef;
      const v = ctx.configMaps.get(ref.name ?? "")?.[ref.key];
      if (v === undefined) {
        if (ref.optional) continue;
        return { ok: false, message: `configmap "${ref.name}" key "${ref.key}" not found` };
      }
      env[e.name] = v;
    } else if (vf.secretKeyRef) {
      const ref = vf.secretKeyRef;
      const v = ctx.secrets.get(ref.name ?? "")?.[ref.key];
      if (v === undefined) {
        if (ref.optional) continue;
        return { ok: false, message: `secret "${ref.name}" key "${ref.key}" not found` };
      }
      env[e.name] = v;
    } else if (vf.resourceFieldRef) {
      env[e.name] = resourceFieldValue(container, vf.resourceFieldRef.resource);
    }
  }
  return { ok: true, env };
}
