// The metastore holds topics and partition ownership. Two backends share this
// contract: `file` (single node, the embedded default) and `kubernetes`
// (cluster mode; NaradTopic resources and NaradCluster membership).

import type { IsrMember, ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";

/**
 * A declared consumer group (named subscription): its own settings; an unset
 * field inherits the topic's. Groups need not be declared: an undeclared group
 * uses the topic's settings.
 */
export interface SubscriptionConfig {
  name: string;
  visibility_timeout_ms?: number;
  max_in_flight_per_partition?: number;
  max_acked_ahead_per_partition?: number;
}

/**
 * A topic's JSON Schema: the latest version, which every produced message
 * must match. Versions count from 1 and grow by one per change; each change
 * is additive only (core/topic-schema.ts).
 */
export interface TopicSchema {
  version: number;
  /** The schema document as JSON text. */
  definition: string;
}

export interface TopicConfig {
  name: string;
  /**
   * The topic's identity, fixed when it is created and never reused: a topic
   * deleted and created again under the same name gets a new uid. WAL records
   * carry it so an old incarnation's records never reach a namesake
   * (kubernetes: the NaradTopic's metadata.uid; file: a random UUID persisted
   * at create).
   */
  uid: string;
  partitions: number;
  /** Age after which sealed segments are deleted; 0 keeps forever. */
  retention_ms: number;
  /** Per-partition size cap over sealed segments; 0 means unlimited. */
  retention_bytes: number;
  visibility_timeout_ms: number;
  max_in_flight_per_partition: number;
  max_acked_ahead_per_partition: number;
  /** ISO-8601 creation time. */
  created_at: string;
  /** Declared consumer groups, sorted by name; absent or empty when none. */
  subscriptions?: SubscriptionConfig[];
  /** Absent: any payload is accepted (even one that is not JSON). */
  schema?: TopicSchema;
  /**
   * The user who created it (Narad v1: alter and delete need the owner or an
   * admin). Absent when auth was off at create, or the topic is older than owners.
   */
  owner?: string;
  /**
   * Copies of each partition (docs/replication.md). Absent: 1 (a topic from
   * before replication, or the file metastore's single node). Immutable.
   */
  replication_factor?: number;
  /** Copies an acks=all record needs before it is answered. Absent: min(2, replication_factor). */
  min_insync_replicas?: number;
  /** Fan-out (child only): the topic whose committed records are copied here (fanout/rules.ts). */
  parent?: string | undefined;
  /** Fan-out (child only): a delay child receives each record this long after its parent commit. */
  fanout_delay_ms?: number | undefined;
  /** Fan-out (child only): this attachment's id (16 hex); a cursor file of another epoch is stale. */
  attach_epoch?: string | undefined;
  /** Fan-out (child only): wall ms of the attach; a cursor with no file starts at the first record committed since. */
  attached_at_ms?: number | undefined;
}

/** What createTopic takes: the metastore assigns the uid. */
export type NewTopic = Omit<TopicConfig, "uid">;

export type TopicPatch = Partial<
  Pick<
    TopicConfig,
    | "partitions"
    | "retention_ms"
    | "retention_bytes"
    | "max_in_flight_per_partition"
    | "max_acked_ahead_per_partition"
    | "min_insync_replicas"
    | "subscriptions"
    | "schema"
    | "parent"
    | "fanout_delay_ms"
    | "attach_epoch"
    | "attached_at_ms"
  >
>;

export type MemberState = "Joining" | "Active" | "Maintenance" | "Down" | "Decommissioning" | "Removed";

export interface Member {
  id: string;
  /** host:httpPort (the operator writes podIP:7942). */
  address: string;
  /**
   * host:port of the member's cluster RPC. When absent, peers use the host
   * of `address` and its port + 1 (7942 → 7943, the operator's convention;
   * core/routing.ts clusterAddressOf).
   */
  clusterAddress?: string;
  state: MemberState;
  /**
   * The member's data volume identity as the operator last read it from the
   * broker (NaradCluster status.members[].volumeId); absent when not known.
   */
  volumeId?: string;
}

/** What became of an ISR change a leader asked the authority to record. */
export type IsrWriteOutcome =
  /** Recorded: the partition's record now holds `isr` at the leader's epoch. */
  | { kind: "recorded"; record: ReplicaAssignment }
  /**
   * Refused for good: the record moved on (another leader or epoch, the
   * topic gone). The leader stops leading at that epoch when it reads it.
   */
  | { kind: "stale"; reason: string }
  /** No answer: the change may or may not have landed (ADR 0007: it stays pending). */
  | { kind: "unknown"; reason: string }
  /**
   * Not applied: at the leader's epoch the record's ISR is neither the one
   * the change was decided on (`expect.isr`) nor the change itself: another
   * writer changed it (the operator dropping a leaving replica). Read on a
   * fresh record, so no write of this change can land any more; the leader
   * takes `record` and decides again.
   */
  | { kind: "superseded"; record: ReplicaAssignment; reason: string };

/** One partition moving from member `from` to member `to`. */
export interface ClusterMove {
  topic: string;
  partition: number;
  from: string;
  to: string;
}

/** What a quorum read says of a partition's owner; "unknown" when the authority could not be read. */
export type AuthoritativeOwner = { kind: "owner"; node: string } | { kind: "gone" } | { kind: "unknown" };

/**
 * A fan-out link as declared outside the broker's API (kubernetes: a
 * NaradTopic's spec.parent, set with kubectl or GitOps) and what the broker
 * recorded of it; fanout/declared-links.ts admits, refuses or ends it.
 */
export interface DeclaredLink {
  child: string;
  /** The declared parent; undefined when none is declared. */
  parent: string | undefined;
  delayMs: number;
  /** Admitted, and the parent incarnation it was admitted under lives: the child's TopicConfig carries it. */
  inEffect: boolean;
  /**
   * An admission is recorded that no longer holds: the declaration changed
   * since ("spec-changed"), or the parent incarnation it named is gone ("parent-gone").
   */
  ended: "none" | "spec-changed" | "parent-gone";
  /**
   * Admitted on the child's side (its attach epoch and time) but not yet in
   * the parent's register: an attach under way, or one a crash cut short
   * (kubernetes: meta/kube/link-registry.ts). Deciding it again completes it
   * with this epoch rather than starting afresh.
   */
  pending?: { epoch: string; attachedAtMs: number };
  /** The problem last reported for this declaration, if any. */
  reported: string | undefined;
}

export interface Metastore {
  /** "memory": testing/memory-metastore.ts, several in-process brokers sharing one state. */
  readonly kind: "file" | "kubernetes" | "memory";
  /** All topics, sorted by name (the local replica; never blocks on the network). */
  listTopics(): readonly TopicConfig[];
  getTopic(name: string): TopicConfig | undefined;
  createTopic(topic: NewTopic): Promise<TopicConfig>;
  updateTopic(name: string, patch: TopicPatch): Promise<TopicConfig>;
  deleteTopic(name: string): Promise<void>;
  /**
   * The stale-replica defense before a destructive step: true only when the
   * topic is absent locally and the authority confirms it is gone. With
   * `uid`, what must be gone is that incarnation: a namesake with another uid
   * does not keep it alive (records of a deleted-and-recreated topic are
   * discarded, never committed into the new one). Without `uid` (WAL records
   * written before topics had uids), any live topic of that name counts.
   */
  confirmTopicDeleted(name: string, uid?: string): Promise<boolean>;
  /** Node id owning a partition. */
  ownerOf(topic: string, partition: number): string;
  /**
   * The partition's owner by a quorum read of the authority, not the local
   * replica, for a decision the replica's lag must not make (a move source
   * whose freeze lapsed, about to take commits again). With `uid`, a namesake
   * of another incarnation counts as gone. Optional: a backend whose local
   * state is the authority (file, memory) answers from ownerOf.
   */
  authoritativeOwner?(topic: string, partition: number, uid?: string): Promise<AuthoritativeOwner>;
  members(): readonly Member[];
  /**
   * The replicated record of a partition (leader, replicas, ISR with volume
   * ids, leader epoch), or undefined for a single-copy partition (and for a
   * backend without replication). docs/adr/0007-replication.md.
   */
  replicaAssignment?(topic: string, partition: number): ReplicaAssignment | undefined;
  /**
   * Compare-and-swap of the ISR of a partition this node leads: applied only
   * while the record still names `leader` at `leaderEpoch` and, when
   * `expect.isr` is given, still holds that ISR (the one the change was
   * decided on; any order) or already the change (kubernetes: a status write
   * conditional on the NaradTopic's resourceVersion, retried on a fresh read
   * while those still hold). An ISR another writer changed meanwhile is
   * "superseded", never overwritten: the change was decided without it.
   */
  recordIsr?(
    topic: string,
    partition: number,
    expect: { leader: string; leaderEpoch: number; isr?: readonly IsrMember[] },
    isr: readonly IsrMember[],
  ): Promise<IsrWriteOutcome>;
  /**
   * Partition moves in flight (kubernetes: the operator's status.scale.moves,
   * with broker topic names). Optional: a single node never moves partitions.
   */
  moves?(): readonly ClusterMove[];
  /**
   * The membership epoch (NaradCluster.status.membershipEpoch; bumped on
   * every member change). Optional: the file metastore has one fixed member.
   */
  membershipEpoch?(): number;
  /**
   * Whether the local replica is known fresh (watch synced, open and heard
   * from recently). Optional: a backend without a remote authority is always fresh.
   */
  caughtUp?(): boolean;
  /**
   * Links declared outside the broker's API that need a decision: a declared
   * parent not in effect, an ended admission, a stale report. Optional: the
   * file and memory metastores take links only through the API.
   */
  declaredLinks?(): readonly DeclaredLink[];
  /**
   * Records the outcome for a declaration that is not admitted: `problem`
   * (undefined: none), and drops the recorded admission when it no longer
   * holds. A change of the child meanwhile wins (the write is conditional).
   */
  settleDeclaredLink?(child: string, problem: string | undefined, dropAdmission: boolean): Promise<void>;
  /**
   * Completes a link pending on the child's side (DeclaredLink.pending) with
   * its own epoch: only the parent's side is written, and only while the
   * child still carries `epoch` (a link taken back meanwhile stays gone).
   * 409 when the parent refuses it. Optional: only the kubernetes metastore
   * keeps a link in two parts.
   */
  completeLink?(child: string, epoch: string): Promise<void>;
  /** Called after any topic or membership change is applied locally. */
  onChange(listener: () => void): void;
  close(): Promise<void>;
}
