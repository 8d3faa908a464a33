import type { MemberState, MemberStatus } from "../../../packages/api/src/v1alpha1/types.ts";
import type { PodView } from "./pods.ts";

// Membership: the operator is its only writer (ARCHITECTURE.md §4-5), brokers
// act on it (a Down owner is rerouted around at once). The rules:
//
//   previous state     pod Ready           pod not ready / missing
//   (new) / Joining    Active              Joining
//   Active             Active              Active until downGrace, then Down
//   Down               Active              Down
//   Maintenance        Maintenance while the roll holds it (planned
//                      restart: from the moment status.roll names the pod
//                      until its replacement is Ready); then like Active:
//                      Active when Ready, Down after downGrace otherwise
//   Decommissioning, Removed: set by the scale step (holds); kept as they
//                      are while the ordinal is at or above replicas; below
//                      it (scaled back up: the decommission was cancelled)
//                      the member is re-admitted like a new one (Active once
//                      its pod is Ready).
//   Any state → Maintenance when the roll holds the member.
//
// Every change of state or address bumps the membership epoch; the caller
// emits one Event per transition.
//
// Down is a claim that the broker is gone, and peers act on it at once
// (single-copy partitions: reroute, reads answer 503; replicated ones: the
// topic reconcile elects a new leader from the ISR, plan/topic-replication.ts). So it needs two pieces of
// evidence, both measured on the operator's own clock from its own
// observations, never from timestamps written by another machine:
//   - the pod not Ready (or missing) for downGrace, counted from the first
//     reconcile that saw it so (notReadySinceMs, kept by the caller); and
//   - the broker's admin status failing for downGrace, counted from the
//     first failed probe of an unbroken run of failures
//     (brokerUnreachableSinceMs, kept by the caller; see reachability.ts).
//
// A member whose state is held (Decommissioning by the scale step,
// Maintenance by the roll) never goes Down: the decommission and the roll
// own its state. But a replicated partition it leads needs an election when
// its broker is dead. So the same broker-side evidence (admin status failing
// for downGrace, and the pod not Ready now) sets failedSince on it instead:
// its state stays, elections treat it as Down (plan/topic-replication.ts).
// The pod's own not-ready clock does not run while the roll holds it (a
// planned restart is not a failure), so the broker's is the clock here.
// A pod whose Ready=False was written by the node lifecycle controller (the
// node missed heartbeats, typically during an API outage) says nothing about
// the broker: it counts as unknown, and its clock does not run. Nor does any
// clock run while the caller's cache is not trusted (watch errors, or the
// settling time after them): then nobody goes Down and the clocks restart
// from the next trusted observation.

export interface MembersInput {
  statefulSetName: string;
  /** Desired broker count; ordinals 0..replicas-1 are members. */
  replicas: number;
  pods: readonly PodView[];
  previous: readonly MemberStatus[];
  previousEpoch: number;
  downGraceMs: number;
  nowMs: number;
  /** member id → first time (operator clock) this operator saw it without a ready pod; kept by the caller between reconciles. */
  notReadySinceMs: ReadonlyMap<string, number>;
  /**
   * member id → first time (operator clock) of the current unbroken run of
   * failed admin-status probes. A member absent here answered its last probe
   * (or was never probed): it cannot go Down. Undefined: no broker evidence
   * at all, so nobody goes Down.
   */
  brokerUnreachableSinceMs?: ReadonlyMap<string, number> | undefined;
  /**
   * False while the pod cache cannot be believed (watch errors, or the
   * settling time after an outage; see observation.ts): no member goes
   * Down and the not-ready clocks are cleared. Default true.
   */
  observationsTrusted?: boolean | undefined;
  /** Port in members[].address ("podIP:port"). */
  port: number;
  /** Members held in Maintenance by a planned restart (maintenanceHolds() in roll.ts). */
  maintenance?: ReadonlySet<string>;
  /** States the scale step imposes this pass (decommission progress; plan/scale.ts). */
  holds?: ReadonlyMap<string, "Decommissioning" | "Removed">;
  /**
   * The volume id to record per member (volumes.ts nextVolumeIds: this
   * pass's answer, else the last known); a member missing here keeps its
   * recorded one.
   */
  volumeIds?: ReadonlyMap<string, string>;
}

export interface MembersResult {
  members: MemberStatus[];
  epoch: number;
  changed: boolean;
  /** Updated "not ready since" map for the caller to keep. */
  notReadySinceMs: Map<string, number>;
  /** Reconcile again after this long: the earliest grace expiry still pending. */
  recheckAfterMs: number | undefined;
  /** Members whose Down grace is running: id → what it still waits for. */
  pendingDown: Map<string, string>;
  /** Human-readable transitions, for Events and logs ("demo-1: Active → Down (not ready for 31s)"). */
  transitions: string[];
  /** Held members that failed this pass (failedSince newly set), for Warning Events. */
  failures: string[];
}

/** How long to wait, at most, before probing a member whose Down grace runs. */
export const DOWN_RECHECK_MAX_MS = 5_000;

const HELD_STATES: ReadonlySet<MemberState> = new Set(["Decommissioning", "Removed"]);

export function planMembers(input: MembersInput): MembersResult {
  const { nowMs, downGraceMs } = input;
  const podsByName = new Map(input.pods.map((p) => [p.name, p]));
  const prevById = new Map(input.previous.map((m) => [m.id, m]));
  const notReadySinceMs = new Map<string, number>();
  const transitions: string[] = [];
  const failures: string[] = [];
  const pendingDown = new Map<string, string>();
  let recheckAfterMs: number | undefined;

  const ordinals = new Set<number>();
  for (let i = 0; i < input.replicas; i++) ordinals.add(i);
  // Members beyond replicas stay listed until a decommission removes them.
  for (const m of input.previous) if (m.state !== "Removed" || podsByName.has(m.pod)) ordinals.add(m.ordinal);

  const members: MemberStatus[] = [];
  for (const ordinal of [...ordinals].sort((a, b) => a - b)) {
    const id = `${input.statefulSetName}-${ordinal}`;
    const prev = prevById.get(id);
    const pod = podsByName.get(id);
    const trusted = input.observationsTrusted !== false;
    // A Ready=False the node controller wrote is no observation of the broker.
    const unknown = pod !== undefined && !pod.ready && pod.readyVerdictFromNode === true;
    let notReadySince: number | undefined;
    if (trusted && !unknown && pod?.ready !== true && input.maintenance?.has(id) !== true) {
      notReadySince = input.notReadySinceMs.get(id) ?? nowMs;
      notReadySinceMs.set(id, notReadySince);
    }
    const prevState = prev?.state;
    let state: MemberState;
    let why = "";
    const hold = input.holds?.get(id);
    if (hold !== undefined) {
      state = hold;
      why = hold === "Decommissioning" ? "scale-down" : "decommissioned";
    } else if (prevState !== undefined && HELD_STATES.has(prevState) && ordinal >= input.replicas) {
      state = prevState;
    } else if (input.maintenance?.has(id) === true) {
      state = "Maintenance";
      why = "planned restart";
    } else if (pod?.ready === true) {
      state = "Active";
      why =
        prevState === "Maintenance"
          ? "planned restart done, pod ready"
          : prevState !== undefined && HELD_STATES.has(prevState)
            ? "scaled back up, pod ready"
            : "pod ready";
    } else if (prevState === "Active" || prevState === "Maintenance") {
      state = prevState;
      if (notReadySince !== undefined) {
        const podFor = nowMs - notReadySince;
        const unreachableSince = input.brokerUnreachableSinceMs?.get(id);
        const brokerFor = unreachableSince === undefined ? undefined : nowMs - unreachableSince;
        if (podFor >= downGraceMs && brokerFor !== undefined && brokerFor >= downGraceMs) {
          state = "Down";
          why = `${pod === undefined ? "pod missing" : "pod not ready"} for ${Math.round(podFor / 1000)}s, broker unreachable for ${Math.round(brokerFor / 1000)}s`;
        } else {
          const left = Math.max(downGraceMs - podFor, downGraceMs - (brokerFor ?? 0), 0);
          pendingDown.set(
            id,
            brokerFor === undefined
              ? `pod not ready for ${Math.round(podFor / 1000)}s, broker still answers`
              : `pod not ready for ${Math.round(podFor / 1000)}s, broker unreachable for ${Math.round(brokerFor / 1000)}s`,
          );
          // Look again soon even when the broker answers: it may stop.
          const next = Math.min(Math.max(left, 1), DOWN_RECHECK_MAX_MS);
          recheckAfterMs = recheckAfterMs === undefined ? next : Math.min(recheckAfterMs, next);
        }
      }
    } else if (prevState === "Down") {
      state = "Down";
    } else {
      state = "Joining";
      why = pod === undefined ? "pod not created yet" : "pod not ready yet";
    }

    const address = pod?.podIP !== undefined ? `${pod.podIP}:${input.port}` : undefined;
    const member: MemberStatus = {
      id,
      pod: id,
      ordinal,
      state,
      since: prev !== undefined && prev.state === state ? prev.since : new Date(nowMs).toISOString(),
    };
    // Keep the last known address while the pod is away: peers still need a target to retry.
    const addr = address ?? prev?.address;
    if (addr !== undefined) member.address = addr;
    if (prev?.walPendingRecords !== undefined) member.walPendingRecords = prev.walPendingRecords;
    const revision = pod?.revision ?? prev?.revision;
    if (revision !== undefined) member.revision = revision;
    const volumeId = input.volumeIds?.get(id) ?? prev?.volumeId;
    if (volumeId !== undefined) member.volumeId = volumeId;
    if (state === "Decommissioning" || state === "Maintenance") {
      // Held or not: a Maintenance member released by the roll goes Down by
      // the rule above, this only covers the time before.
      const unreachableSince = input.brokerUnreachableSinceMs?.get(id);
      const brokerFor = unreachableSince === undefined ? undefined : nowMs - unreachableSince;
      const podAway = pod === undefined || (!pod.ready && pod.readyVerdictFromNode !== true);
      if (trusted && podAway && brokerFor !== undefined) {
        if (brokerFor >= downGraceMs) {
          member.failedSince = prev?.failedSince ?? new Date(nowMs).toISOString();
          if (prev?.failedSince === undefined)
            failures.push(
              `${id}: ${state}, ${pod === undefined ? "pod missing" : "pod not ready"}, broker unreachable for ${Math.round(brokerFor / 1000)}s: replicated partitions elect around it`,
            );
        } else {
          const next = Math.min(Math.max(downGraceMs - brokerFor, 1), DOWN_RECHECK_MAX_MS);
          recheckAfterMs = recheckAfterMs === undefined ? next : Math.min(recheckAfterMs, next);
        }
      }
    }
    if (prevState !== state)
      transitions.push(`${id}: ${prevState ?? "(new)"} → ${state}${why ? ` (${why})` : ""}`);
    members.push(member);
  }

  const changed = membershipChanged(input.previous, members);
  return {
    members,
    epoch: changed ? input.previousEpoch + 1 : input.previousEpoch,
    changed,
    notReadySinceMs,
    recheckAfterMs,
    pendingDown,
    transitions,
    failures,
  };
}

/** A change brokers care about: the set of members, a state, or an address. */
export function membershipChanged(a: readonly MemberStatus[], b: readonly MemberStatus[]): boolean {
  if (a.length !== b.length) return true;
  const byId = new Map(a.map((m) => [m.id, m]));
  return b.some((m) => {
    const old = byId.get(m.id);
    return old === undefined || old.state !== m.state || old.address !== m.address;
  });
}

export function activeMemberIds(members: readonly MemberStatus[]): string[] {
  return members.filter((m) => m.state === "Active").map((m) => m.id);
}
