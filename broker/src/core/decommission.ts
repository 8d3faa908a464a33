// What a decommission request (POST /v1/cluster/members/{id}/decommission)
// or its cancellation (DELETE) gets, pure: from what was observed of the
// cluster to an answer, a scale change or a refusal. The I/O (reading the
// NaradCluster, the conditional write of its scale subresource) lives in
// node/decommission.ts.
//
// On Kubernetes the operator decommissions by scale-down: the member at the
// highest ordinal at or above spec.replicas is moved off and removed
// (operator/src/plan/scale.ts), because a StatefulSet only removes pods from
// the top. So a request maps onto spec.replicas: decommissioning the highest
// in-service member is spec.replicas − 1, cancelling the lowest member being
// decommissioned is spec.replicas + 1, and any other member cannot be asked
// for without changing members the request did not name.

import type { MemberState } from "../meta/types.ts";

/** A member as the NaradCluster's status lists it. */
export interface ObservedMember {
  id: string;
  ordinal: number;
  state: MemberState;
}

/** The NaradCluster as read for one decision (a fresh read of the API server, not a cache). */
export interface ScaleObservation {
  /** spec.replicas. */
  replicas: number;
  /** metadata.resourceVersion: the scale write is conditional on it. */
  resourceVersion: string;
  members: readonly ObservedMember[];
  /** status.roll.podInFlight: a rolling restart in progress (the operator waits for it before a scale-down). */
  rolling: string | undefined;
}

export type DecommissionDecision =
  /** Nothing to change: the answer is 204. */
  | { kind: "noop"; why: string }
  /** Write spec.replicas (through the scale subresource, conditional on the observed resourceVersion); then 204. */
  | { kind: "scale"; from: number; replicas: number; why: string }
  | { kind: "refuse"; status: 404 | 409 | 501; error: string };

/** Carries requests out (Kubernetes: node/decommission.ts). */
export interface DecommissionControl {
  /** The decision carried out: a "scale" result was written; "noop" and "refuse" changed nothing. */
  request(id: string, cancel: boolean): Promise<DecommissionDecision>;
}

const notFound = (id: string): DecommissionDecision => ({
  kind: "refuse",
  status: 404,
  error: `member "${id}" not found`,
});

/**
 * One node (the file metastore): there is no other member to take its
 * partitions, so a decommission is refused and a cancellation has nothing
 * to cancel. `known` is whether `id` is this node.
 */
export function decideSingleNode(known: boolean, id: string, cancel: boolean): DecommissionDecision {
  if (!known) return notFound(id);
  if (cancel) return { kind: "noop", why: "nothing is being decommissioned" };
  return {
    kind: "refuse",
    status: 409,
    error: `member "${id}" is this broker's only member: there is no other member to move its partitions to, so nothing to decommission`,
  };
}

/** A cluster without an operator to carry a decommission out (in-process test clusters). */
export function decideWithoutOperator(known: boolean, id: string): DecommissionDecision {
  if (!known) return notFound(id);
  return {
    kind: "refuse",
    status: 501,
    error: "this cluster has no operator to carry out a decommission: its membership is fixed",
  };
}

/** The Kubernetes decision for member `id` from one observation of the NaradCluster. */
export function decideKubernetes(obs: ScaleObservation, id: string, cancel: boolean): DecommissionDecision {
  const m = obs.members.find((x) => x.id === id);
  if (m === undefined) return notFound(id);
  return cancel ? decideCancel(obs, m) : decideDecommission(obs, m);
}

function byOrdinal(obs: ScaleObservation, ordinal: number): string {
  return obs.members.find((x) => x.ordinal === ordinal)?.id ?? `ordinal ${ordinal}`;
}

function decideDecommission(obs: ScaleObservation, m: ObservedMember): DecommissionDecision {
  // At or above spec.replicas the operator already has it to decommission
  // (in progress, queued behind a higher ordinal, or done): the same request again.
  if (m.state === "Removed")
    return { kind: "noop", why: `${m.id} is already decommissioned (Removed); its pod is being deleted` };
  if (m.ordinal >= obs.replicas)
    return { kind: "noop", why: `${m.id} is already being decommissioned (spec.replicas ${obs.replicas})` };
  if (obs.replicas <= 1)
    return {
      kind: "refuse",
      status: 409,
      error: `member "${m.id}" is the cluster's only remaining member: there is no other member to move its partitions to, so nothing to decommission`,
    };
  const top = obs.replicas - 1;
  if (m.ordinal !== top) {
    const highest = byOrdinal(obs, top);
    return {
      kind: "refuse",
      status: 409,
      error:
        `member "${m.id}" is not the highest ordinal in service: the NaradCluster's StatefulSet removes pods ` +
        `from the top, so only "${highest}" (ordinal ${top}) can be decommissioned now. Decommission "${highest}" ` +
        `(POST /v1/cluster/members/${highest}/decommission, or kubectl scale naradcluster --replicas=${top}); ` +
        `to take "${m.id}" out, decommission every member above it first`,
    };
  }
  // The operator refuses a scale-down while a roll runs or a remaining member
  // is not Active (it would sit blocked); say so now, with nothing changed.
  if (obs.rolling !== undefined)
    return {
      kind: "refuse",
      status: 409,
      error: `a rolling restart is in progress (${obs.rolling}): the operator starts a decommission only after it; retry once the roll is done`,
    };
  const notActive = obs.members.filter((x) => x.ordinal < top && x.state !== "Active");
  if (notActive.length > 0)
    return {
      kind: "refuse",
      status: 409,
      error: `the members that would remain must all be Active to take "${m.id}"'s partitions (${notActive
        .map((x) => `${x.id} is ${x.state}`)
        .join(", ")}); retry once they are`,
    };
  return {
    kind: "scale",
    from: obs.replicas,
    replicas: top,
    why: `decommission ${m.id}: spec.replicas ${obs.replicas} → ${top}`,
  };
}

function decideCancel(obs: ScaleObservation, m: ObservedMember): DecommissionDecision {
  if (m.ordinal < obs.replicas)
    return {
      kind: "noop",
      why:
        m.state === "Decommissioning"
          ? `the decommission of ${m.id} is already cancelled (spec.replicas ${obs.replicas})`
          : `${m.id} is not being decommissioned`,
    };
  // Removed is the operator's point of no return: its broker confirmed an
  // empty WAL and no partition, and the StatefulSet shrinks past it (its
  // volume goes per whenScaled). Scaling up then adds an empty member.
  if (m.state === "Removed")
    return {
      kind: "refuse",
      status: 409,
      error:
        `the decommission of "${m.id}" cannot be cancelled: it is complete (Removed: its partitions moved, its WAL ` +
        `confirmed empty) and its pod is being deleted. Scaling the NaradCluster up again adds a new, empty member at that ordinal`,
    };
  if (m.ordinal !== obs.replicas) {
    const lowest = byOrdinal(obs, obs.replicas);
    return {
      kind: "refuse",
      status: 409,
      error:
        `"${m.id}" is queued for decommission behind "${lowest}" (ordinal ${obs.replicas}): the StatefulSet grows from ` +
        `the bottom, so cancel "${lowest}" first (DELETE /v1/cluster/members/${lowest}/decommission), then "${m.id}"`,
    };
  }
  return {
    kind: "scale",
    from: obs.replicas,
    replicas: obs.replicas + 1,
    why: `cancel the decommission of ${m.id}: spec.replicas ${obs.replicas} → ${obs.replicas + 1}`,
  };
}

/**
 * After the conditional write lost to a concurrent change: decide again from
 * the fresh observation when only status moved (the operator writes it every
 * pass), but refuse when spec.replicas itself changed, since the request was
 * meant for the cluster size it saw.
 */
export function afterConflict(
  first: ScaleObservation,
  fresh: ScaleObservation,
  id: string,
  cancel: boolean,
): DecommissionDecision {
  if (fresh.replicas !== first.replicas)
    return {
      kind: "refuse",
      status: 409,
      error: `spec.replicas of the NaradCluster changed from ${first.replicas} to ${fresh.replicas} while this request was decided (another scale or decommission); nothing was changed by this request: read GET /v1/cluster/members and retry`,
    };
  return decideKubernetes(fresh, id, cancel);
}
