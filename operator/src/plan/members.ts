import type { MemberState, MemberStatus } from "../api/v1alpha1/types.ts";
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
// "Not ready since" is the later of the pod's Ready transition and its
// creation. A missing pod has no timestamps, and a replacement pod's would
// restart the clock, so the caller also keeps, per member, the earliest time
// it saw the member without a ready pod; the earlier of the two counts.

export interface MembersInput {
  statefulSetName: string;
  /** Desired broker count; ordinals 0..replicas-1 are members. */
  replicas: number;
  pods: readonly PodView[];
  previous: readonly MemberStatus[];
  previousEpoch: number;
  downGraceMs: number;
  nowMs: number;
  /** member id → earliest time seen without a ready pod (kept by the caller between reconciles). */
  notReadySinceMs: ReadonlyMap<string, number>;
  /** Port in members[].address ("podIP:port"). */
  port: number;
  /** Members held in Maintenance by a planned restart (maintenanceHolds() in roll.ts). */
  maintenance?: ReadonlySet<string>;
  /** States the scale step imposes this pass (decommission progress; plan/scale.ts). */
  holds?: ReadonlyMap<string, "Decommissioning" | "Removed">;
}

export interface MembersResult {
  members: MemberStatus[];
  epoch: number;
  changed: boolean;
  /** Updated "not ready since" map for the caller to keep. */
  notReadySinceMs: Map<string, number>;
  /** Reconcile again after this long: the earliest grace expiry still pending. */
  recheckAfterMs: number | undefined;
  /** Human-readable transitions, for Events and logs ("demo-1: Active → Down (not ready for 31s)"). */
  transitions: string[];
}

const HELD_STATES: ReadonlySet<MemberState> = new Set(["Decommissioning", "Removed"]);

export function planMembers(input: MembersInput): MembersResult {
  const { nowMs, downGraceMs } = input;
  const podsByName = new Map(input.pods.map((p) => [p.name, p]));
  const prevById = new Map(input.previous.map((m) => [m.id, m]));
  const notReadySinceMs = new Map<string, number>();
  const transitions: string[] = [];
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
    let notReadySince: number | undefined;
    if (pod?.ready !== true && input.maintenance?.has(id) !== true) {
      const seen = input.notReadySinceMs.get(id);
      const fromPod = pod?.notReadySinceMs ?? nowMs;
      notReadySince = seen === undefined ? fromPod : Math.min(seen, fromPod);
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
      const since = notReadySince ?? nowMs;
      const elapsed = nowMs - since;
      if (elapsed >= downGraceMs) {
        state = "Down";
        why = `${pod === undefined ? "pod missing" : "pod not ready"} for ${Math.round(elapsed / 1000)}s`;
      } else {
        state = prevState;
        const left = downGraceMs - elapsed;
        recheckAfterMs = recheckAfterMs === undefined ? left : Math.min(recheckAfterMs, left);
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
    transitions,
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
