// `kubectl narad status`: what the operator wrote in a NaradCluster's status,
// joined with its pods (Ready, node), as one view for json/yaml and as text.
// Pure: the cluster, its pods and the time are inputs. Only fields the
// operator writes are shown (packages/api/src/v1alpha1/types.ts); an absent
// one stays absent in json/yaml and shows as "-" in the table.

import type { V1Pod } from "@kubernetes/client-node";
import { withClusterDefaults } from "../../../packages/api/src/v1alpha1/defaults.ts";
import type {
  Condition,
  DrainCancelStatus,
  MemberState,
  MoveRetry,
  NaradCluster,
  PartitionMoveStatus,
  RollStatus,
} from "../../../packages/api/src/v1alpha1/types.ts";
import { formatAge, table } from "./format.ts";

export interface MemberView {
  id: string;
  state: MemberState;
  /** RFC 3339: when the member entered its state. */
  since: string;
  pod: string;
  /** The pod's Ready condition; undefined when the pod does not exist. */
  ready?: boolean;
  node?: string;
  address?: string;
  walPendingRecords?: number;
  revision?: string;
}

export interface ScaleView {
  decommissioning?: string;
  movesDone?: number;
  rebalanceHandled?: string;
  moves: PartitionMoveStatus[];
  moveRetries: MoveRetry[];
}

export interface StatusView {
  name: string;
  namespace: string;
  generation?: number;
  observedGeneration?: number;
  phase?: string;
  replicas: { spec: number; pods?: number; ready?: number };
  image: string;
  currentRevision?: string;
  updateRevision?: string;
  membershipEpoch?: number;
  conditions: Condition[];
  members: MemberView[];
  roll?: RollStatus;
  scale?: ScaleView;
  drainCancel?: DrainCancelStatus;
}

export function statusView(cluster: NaradCluster, pods: readonly V1Pod[]): StatusView {
  const spec = withClusterDefaults(cluster.spec ?? {});
  const status = cluster.status ?? {};
  const byName = new Map(pods.map((p) => [p.metadata?.name ?? "", p]));
  const scale = status.scale;
  // Built in reading order (json/yaml keep it); absent fields stay absent.
  const view: StatusView = {
    name: cluster.metadata.name ?? "",
    namespace: cluster.metadata.namespace ?? "",
    ...defined("generation", cluster.metadata.generation),
    ...defined("observedGeneration", status.observedGeneration),
    ...defined("phase", status.phase),
    replicas: {
      spec: spec.replicas,
      ...defined("pods", status.replicas),
      ...defined("ready", status.readyReplicas),
    },
    image: spec.image,
    ...defined("currentRevision", status.currentRevision),
    ...defined("updateRevision", status.updateRevision),
    ...defined("membershipEpoch", status.membershipEpoch),
    conditions: status.conditions ?? [],
    members: (status.members ?? []).map((m) => {
      const pod = byName.get(m.pod);
      return {
        id: m.id,
        state: m.state,
        since: m.since,
        pod: m.pod,
        ...defined("ready", pod === undefined ? undefined : podReady(pod)),
        ...defined("node", pod?.spec?.nodeName),
        ...defined("address", m.address),
        ...defined("walPendingRecords", m.walPendingRecords),
        ...defined("revision", m.revision),
      };
    }),
    ...defined("roll", status.roll),
    ...defined(
      "scale",
      scale === undefined
        ? undefined
        : {
            ...defined("decommissioning", scale.decommissioning),
            ...defined("movesDone", scale.movesDone),
            ...defined("rebalanceHandled", scale.rebalanceHandled),
            moves: scale.moves ?? [],
            moveRetries: scale.moveRetries ?? [],
          },
    ),
    ...defined("drainCancel", status.drainCancel),
  };
  return view;
}

/** { key: value }, or nothing when the value is undefined (so the key stays absent). */
function defined<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

export function podReady(pod: V1Pod): boolean {
  if (pod.metadata?.deletionTimestamp !== undefined) return false;
  return pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/** The view as text, times as ages relative to nowMs. */
export function renderStatus(view: StatusView, nowMs: number): string {
  const age = (iso: string | undefined) => (iso === undefined ? "-" : formatAge(iso, nowMs));
  const dash = (v: string | number | undefined) => (v === undefined ? "-" : String(v));
  const lines: string[] = [];
  lines.push(`NaradCluster ${view.namespace}/${view.name}`);
  const generation =
    view.observedGeneration === undefined
      ? ""
      : `   (observed generation ${view.observedGeneration} of ${dash(view.generation)})`;
  lines.push(`Phase:       ${view.phase ?? "- (no status yet)"}${generation}`);
  lines.push(
    `Replicas:    ${view.replicas.spec} desired, ${dash(view.replicas.pods)} pods, ${dash(view.replicas.ready)} ready`,
  );
  lines.push(`Image:       ${view.image}`);
  if (view.currentRevision !== undefined || view.updateRevision !== undefined) {
    const same = view.currentRevision === view.updateRevision;
    lines.push(
      same
        ? `Revision:    ${dash(view.currentRevision)}`
        : `Revision:    ${dash(view.currentRevision)} -> ${dash(view.updateRevision)} (update pending)`,
    );
  }
  if (view.membershipEpoch !== undefined) lines.push(`Epoch:       ${view.membershipEpoch}`);

  lines.push("", "Conditions:");
  if (view.conditions.length === 0) lines.push("  (none)");
  else
    lines.push(
      ...indent(
        table(
          ["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"],
          view.conditions.map((c) => [c.type, c.status, c.reason, age(c.lastTransitionTime), c.message]),
        ),
      ),
    );

  lines.push("", "Members:");
  if (view.members.length === 0) lines.push("  (none)");
  else
    lines.push(
      ...indent(
        table(
          ["MEMBER", "STATE", "SINCE", "POD", "READY", "NODE", "WAL PENDING", "REVISION"],
          view.members.map((m) => [
            m.id,
            m.state,
            age(m.since),
            m.pod,
            m.ready === undefined ? "no pod" : m.ready ? "true" : "false",
            dash(m.node),
            dash(m.walPendingRecords),
            dash(m.revision),
          ]),
        ),
      ),
    );

  if (view.roll !== undefined) {
    const r = view.roll;
    lines.push("", `Rolling restart: ${r.podInFlight} (${r.reason}), started ${age(r.startedAt)} ago`);
    if (r.gateBlockedSince !== undefined)
      lines.push(
        `  blocked for ${age(r.gateBlockedSince)}: waiting for the other brokers to be Ready and Active`,
      );
  }
  if (view.drainCancel !== undefined) {
    const d = view.drainCancel;
    const error = d.lastError === undefined ? "" : `, last error: ${d.lastError}`;
    lines.push(
      "",
      `Drain cancel: ${d.pod}, abandoned ${age(d.since)} ago, ${d.attempts} attempt(s) so far${error}`,
    );
  }
  const s = view.scale;
  if (s !== undefined) {
    lines.push("", "Scale:");
    if (s.decommissioning !== undefined) lines.push(`  decommissioning: ${s.decommissioning}`);
    if (s.movesDone !== undefined) lines.push(`  moves done:      ${s.movesDone}`);
    if (s.rebalanceHandled !== undefined) lines.push(`  rebalance served: ${s.rebalanceHandled}`);
    if (s.moves.length > 0)
      lines.push(
        ...indent(
          table(
            ["TOPIC", "PARTITION", "FROM", "TO", "STATE", "STARTED", "LAST PROGRESS", "NOTE"],
            s.moves.map((m) => [
              m.topic,
              String(m.partition),
              m.from,
              m.to,
              m.state,
              age(m.startedAt),
              age(m.progressAt),
              moveNote(m, age),
            ]),
          ),
        ),
      );
    if (s.moveRetries.length > 0) {
      lines.push("  Retries:");
      lines.push(
        ...indent(
          table(
            ["TOPIC", "PARTITION", "ATTEMPTS", "NOT BEFORE", "AVOID", "REASON"],
            s.moveRetries.map((r) => [
              r.topic,
              String(r.partition),
              String(r.attempts),
              r.notBefore,
              r.avoid,
              r.reason,
            ]),
          ),
          4,
        ),
      );
    }
  }
  return `${lines.join("\n")}\n`;
}

function moveNote(m: PartitionMoveStatus, age: (iso: string | undefined) => string): string {
  if (m.aborting !== undefined) return `aborting (${m.aborting.reason})`;
  if (m.stuckSince !== undefined) return `not installed for ${age(m.stuckSince)}`;
  return "";
}

function indent(lines: string[], by = 2): string[] {
  const pad = " ".repeat(by);
  return lines.map((l) => pad + l);
}
