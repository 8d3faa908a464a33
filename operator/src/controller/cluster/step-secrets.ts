import { randomBytes } from "node:crypto";
import type { V1Secret } from "@kubernetes/client-node";
import { GENERATED_SECRET_BYTES, SECRET_RECHECK_MS } from "../../constants.ts";
import { apiMessage } from "../../kube/api.ts";
import { canonicalJson } from "../../specs/canonical-json.ts";
import { resourceNames } from "../../specs/labels.ts";
import {
  NETWORK_POLICY_API_VERSION,
  NETWORK_POLICY_KIND,
  networkPolicyName,
  networkPolicySpec,
} from "../../specs/network-policy.ts";
import {
  apiUsersSecretSpec,
  clusterSecretName,
  clusterSecretSpec,
  usersSecretName,
  usersSecretSpec,
} from "../../specs/secrets.ts";
import type { ControllerMemory } from "../deps.ts";
import { StepError } from "./apply-owned.ts";
import { type ClusterContext, NEXT, type StepResult } from "./context.ts";

// Step: the Secrets the broker pods mount (before the StatefulSet, so new
// pods find them) and the optional NetworkPolicy.
//
// Secrets: created with random contents when missing and never written
// again (users rotate them; the brokers re-read the files). The operator
// neither lists nor watches Secrets (least privilege: get + create), so it
// checks each name with a GET at most every SECRET_RECHECK_MS. A Secret the
// user named but did not create is reported, not invented.

interface SecurityMemory {
  /** "<uid>/<secret name>" → when it was last seen present. */
  secretSeenAt: Map<string, number>;
  /** cluster uid → last applied NetworkPolicy hash, or "absent". */
  networkPolicy: Map<string, string>;
}

// Kept beside the controller's memory without widening it: same lifetime.
const memories = new WeakMap<ControllerMemory, SecurityMemory>();
function memoryOf(m: ControllerMemory): SecurityMemory {
  let s = memories.get(m);
  if (s === undefined) {
    s = { secretSeenAt: new Map(), networkPolicy: new Map() };
    memories.set(m, s);
  }
  return s;
}

export async function ensureSecurityObjects(ctx: ClusterContext): Promise<StepResult> {
  const { spec, name } = ctx;
  const mem = memoryOf(ctx.deps.memory);
  const generated = (bytes = GENERATED_SECRET_BYTES) => randomBytes(bytes).toString("hex");
  await ensureSecret(
    ctx,
    mem,
    clusterSecretName(name, spec),
    spec.security.clusterSecret === undefined,
    (n) => clusterSecretSpec(ctx.cluster, n, generated()),
  );
  if (spec.security.auth.enabled) {
    await ensureSecret(
      ctx,
      mem,
      usersSecretName(name, spec),
      spec.security.auth.usersSecret === undefined,
      (n) =>
        // 24 bytes: a 48-character password, easy to paste.
        usersSecretSpec(ctx.cluster, n, generated(24)),
    );
    // The Users API's store: always this name, always generated (empty).
    await ensureSecret(ctx, mem, resourceNames(name).apiUsers, true, (n) =>
      apiUsersSecretSpec(ctx.cluster, n),
    );
  }
  await ensureNetworkPolicy(ctx, mem);
  return NEXT;
}

async function ensureSecret(
  ctx: ClusterContext,
  mem: SecurityMemory,
  secretName: string,
  generate: boolean,
  build: (name: string) => V1Secret,
): Promise<void> {
  const { deps, namespace, cluster } = ctx;
  const key = `${cluster.metadata.uid ?? ""}/${secretName}`;
  const now = deps.clock.now();
  const seen = mem.secretSeenAt.get(key);
  if (seen !== undefined && now - seen < SECRET_RECHECK_MS) return;
  let present: boolean;
  try {
    present = (await deps.api.getSecret(namespace, secretName)) !== undefined;
  } catch (err) {
    throw new StepError(`read Secret ${secretName}: ${apiMessage(err)}`, { cause: err });
  }
  if (present) {
    mem.secretSeenAt.set(key, now);
    return;
  }
  if (!generate) {
    const msg = `Secret ${secretName} named in spec.security does not exist; broker pods cannot start until it does`;
    ctx.log.warn(msg);
    deps.recorder.record(cluster, "Warning", "SecretMissing", msg);
    ctx.refused.push(msg);
    return;
  }
  let created: boolean;
  try {
    created = await deps.api.createIfAbsent(build(secretName));
  } catch (err) {
    const msg = `create Secret ${secretName}: ${apiMessage(err)}`;
    deps.recorder.record(cluster, "Warning", "CreateFailed", msg);
    throw new StepError(msg, { cause: err });
  }
  mem.secretSeenAt.set(key, now);
  if (created) {
    // Never the contents, only the name.
    ctx.log.info({ secret: secretName }, `created Secret ${secretName}`);
    deps.recorder.record(cluster, "Normal", "Created", `created Secret ${secretName}`);
  }
}

/** Like the ServiceMonitor: applied on change, deleted when disabled; the hash lives in memory. */
async function ensureNetworkPolicy(ctx: ClusterContext, mem: SecurityMemory): Promise<void> {
  const { cluster, spec, deps, namespace, name } = ctx;
  const uid = cluster.metadata.uid ?? "";
  const desired = networkPolicySpec(cluster, spec);
  const remembered = mem.networkPolicy.get(uid);
  if (desired === undefined) {
    if (remembered === "absent") return;
    const npName = networkPolicyName(name);
    let deleted: boolean;
    try {
      deleted = await deps.api.delete({
        apiVersion: NETWORK_POLICY_API_VERSION,
        kind: NETWORK_POLICY_KIND,
        namespace,
        name: npName,
      });
    } catch (err) {
      throw new StepError(`delete NetworkPolicy ${npName}: ${apiMessage(err)}`, { cause: err });
    }
    if (deleted) {
      ctx.log.info(`deleted NetworkPolicy ${npName} (spec.security.networkPolicy.enabled is false)`);
      deps.recorder.record(cluster, "Normal", "Deleted", `deleted NetworkPolicy ${npName}`);
    }
    mem.networkPolicy.set(uid, "absent");
    return;
  }
  const hash = canonicalJson(desired);
  if (remembered === hash) return;
  try {
    await deps.api.apply(desired);
  } catch (err) {
    const msg = `apply NetworkPolicy ${desired.metadata?.name}: ${apiMessage(err)}`;
    deps.recorder.record(cluster, "Warning", "ApplyFailed", msg);
    throw new StepError(msg, { cause: err });
  }
  mem.networkPolicy.set(uid, hash);
  ctx.log.info(`applied NetworkPolicy ${desired.metadata?.name}`);
  deps.recorder.record(cluster, "Normal", "Updated", `applied NetworkPolicy ${desired.metadata?.name}`);
}
