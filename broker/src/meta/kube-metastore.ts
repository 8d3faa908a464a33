// The `kubernetes` metastore (cluster mode): the Kubernetes API is the
// authority, so Narad runs no consensus of its own (ARCHITECTURE.md §4).
//
//   - Topics are NaradTopic resources in the broker's namespace whose
//     spec.cluster is this cluster; the topic name is topicName() (spec.name,
//     else metadata.name). Resources being deleted (deletionTimestamp set)
//     count as gone: the operator's finalizer asks brokers to remove their data,
//     which they refuse while the topic still exists here.
//   - Partition owners come from status.assignments (written by the operator);
//     membership and its epoch from NaradCluster.status. A replicated
//     partition's owner is its leader; its record (replicas, ISR, leader
//     epoch) is read from the same entry. The only status the broker writes
//     is a replicated partition's ISR (recordIsr), a compare-and-swap on the
//     NaradTopic's resourceVersion.
//   - Reads answer from a watch-fed local replica and never block; writes go
//     to the API server and fail fast with 503 when it cannot be reached.
//   - confirmTopicDeleted is the stale-replica defense: absent locally, watch
//     caught up, and a quorum read confirms.

import { KubeConfig } from "@kubernetes/client-node";
import { topicName } from "../../../packages/api/src/v1alpha1/defaults.ts";
import type { IsrMember, ReplicaAssignment } from "../../../packages/api/src/v1alpha1/replication.ts";
import type {
  NaradCluster,
  NaradTopic,
  PartitionMoveStatus,
} from "../../../packages/api/src/v1alpha1/types.ts";
import { conflict, NaradError, topicExists, topicNotFound } from "../errors.ts";
import { maxChildrenPerParent } from "../fanout/rules.ts";
import { apiMessage, apiStatus, type NaradApi, naradApi, writeError } from "./kube/api.ts";
import {
  ATTACHMENT_ANNOTATION,
  type Attachment,
  assignmentIndex,
  assignmentsOf,
  attachmentFor,
  attachmentOf,
  declaredLinkOf,
  isoTime,
  LINK_PROBLEM_ANNOTATION,
  matchingAttachment,
  memberOf,
  movesInFlight,
  naradTopicFor,
  replicaAssignmentOf,
  replicaAssignmentsOf,
  topicConfigOf,
  topicMergePatch,
  withoutLink,
} from "./kube/convert.ts";
import {
  CHILDREN_ANNOTATION,
  childLinkProblem,
  deregisterChild,
  formatRegister,
  type LinkRegister,
  liveEntries,
  parseRegister,
  registerChild,
} from "./kube/link-registry.ts";
import { Reflector, type ReflectorLogger, type ReflectorTiming } from "./kube/reflector.ts";
import type {
  AuthoritativeOwner,
  ClusterMove,
  DeclaredLink,
  IsrWriteOutcome,
  Member,
  Metastore,
  TopicConfig,
  TopicPatch,
} from "./types.ts";

export interface KubeMetastoreTiming extends ReflectorTiming {
  /** How long createTopic waits for the operator to write status.assignments. */
  assignmentWaitMs: number;
  /** How long updateTopic waits for its change to reach the local replica. */
  replicaWaitMs: number;
  /** Deadline of every API request (writes and quorum reads). */
  requestTimeoutMs: number;
  /** How long open() waits for both replicas to be listed and watching. */
  initialSyncTimeoutMs: number;
  /** Retry-After on a 503 when the API server is unreachable. */
  retryAfterSeconds: number;
  /** Bound of one recordIsr call, its retries included; past it the answer is "unknown". */
  isrWriteTimeoutMs: number;
  /** Conditional writes one recordIsr call tries (each conflict is followed by a fresh read). */
  isrWriteAttempts: number;
}

export const kubeMetastoreTiming: KubeMetastoreTiming = {
  assignmentWaitMs: 10_000,
  replicaWaitMs: 3_000,
  requestTimeoutMs: 5_000,
  initialSyncTimeoutMs: 30_000,
  retryAfterSeconds: 2,
  isrWriteTimeoutMs: 5_000,
  isrWriteAttempts: 10,
  watchTimeoutSeconds: 20,
  restartBaseMs: 200,
  restartMaxMs: 10_000,
  resyncIntervalMs: 5 * 60_000,
  maxSilenceMs: 45_000,
};

export interface KubeMetastoreLogger extends ReflectorLogger {
  error(obj: object, msg: string): void;
}

export interface KubeMetastoreOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  clusterName: string;
  logger: KubeMetastoreLogger;
  timing?: Partial<KubeMetastoreTiming>;
}

/** The kubernetes Metastore plus what only it has. */
export interface KubeMetastore extends Metastore {
  readonly kind: "kubernetes";
  /** NaradCluster.status.membershipEpoch (0 before the operator wrote one). */
  membershipEpoch(): number;
  /** Both watches synced, open, and heard from recently. */
  caughtUp(): boolean;
  /** Forces a relist of both collections (tests, diagnostics). */
  resync(): void;
  authoritativeOwner(topic: string, partition: number, uid?: string): Promise<AuthoritativeOwner>;
  declaredLinks(): readonly DeclaredLink[];
  settleDeclaredLink(child: string, problem: string | undefined, dropAdmission: boolean): Promise<void>;
  replicaAssignment(topic: string, partition: number): ReplicaAssignment | undefined;
  recordIsr(
    topic: string,
    partition: number,
    expect: { leader: string; leaderEpoch: number; isr?: readonly IsrMember[] },
    isr: readonly IsrMember[],
  ): Promise<IsrWriteOutcome>;
  completeLink(child: string, epoch: string): Promise<void>;
}

/** In-cluster credentials when running in a pod, else KUBECONFIG / ~/.kube/config. */
export function loadKubeConfig(env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const kc = new KubeConfig();
  if (env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}

interface TopicEntry {
  config: TopicConfig;
  kubeName: string;
  generation: number;
  resourceVersion: string;
  owners: ReadonlyMap<number, string>;
  /** Replicated partitions' records (single-copy partitions are absent). */
  replicas: ReadonlyMap<number, ReplicaAssignment>;
  /** As a parent: its children's register (kube/link-registry.ts); undefined for a parent from before registers. */
  register: LinkRegister | undefined;
  /** The fan-out link as spec declares it, the broker's record of it, and a reported problem. */
  link: {
    declared: { parent: string; delayMs: number } | undefined;
    attachment: Attachment | undefined;
    /** The attachment matches the declaration (the parent incarnation aside). */
    matching: boolean;
    parentGone: boolean;
    /** Admitted on the child's side, the parent incarnation alive, but not in its register (yet). */
    pending: boolean;
    reported: string | undefined;
  };
}

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

class DeadlineExceeded extends Error {}

/** `start()`'s answer, or DeadlineExceeded at `deadline` (the request may still land). */
function bounded<T>(start: () => Promise<T>, deadline: number): Promise<T> {
  const left = deadline - Date.now();
  if (left <= 0) return Promise.reject(new DeadlineExceeded("the call's deadline passed"));
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineExceeded(`no answer within ${left} ms`)), left);
  });
  return Promise.race([start(), late]).finally(() => clearTimeout(timer));
}

/** The same ISR entries, in any order. */
function sameMembers(a: readonly IsrMember[], b: readonly IsrMember[]): boolean {
  const k = (m: IsrMember) => `${m.member}\u0000${m.volumeId}`;
  const set = new Set(a.map(k));
  return a.length === b.length && b.every((m) => set.has(k(m)));
}

function sameIsr(a: readonly IsrMember[], b: readonly IsrMember[]): boolean {
  return (
    a.length === b.length && a.every((m, i) => m.member === b[i]?.member && m.volumeId === b[i]?.volumeId)
  );
}

export async function openKubeMetastore(opts: KubeMetastoreOptions): Promise<KubeMetastore> {
  const overrides = Object.entries(opts.timing ?? {}).filter(([, v]) => v !== undefined);
  const timing: KubeMetastoreTiming = { ...kubeMetastoreTiming, ...Object.fromEntries(overrides) };
  const { namespace, clusterName, logger } = opts;
  const api: NaradApi = naradApi(opts.kubeConfig, namespace, timing.requestTimeoutMs);
  const listeners: Array<() => void> = [];

  let topics = new Map<string, TopicEntry>();
  let sorted: TopicConfig[] = [];
  let members: Member[] = [];
  let epoch = 0;
  /** status.scale.moves (topic: the NaradTopic's metadata.name). */
  let scaleMoves: PartitionMoveStatus[] = [];

  const notify = (): void => {
    for (const l of listeners) {
      try {
        l();
      } catch (err) {
        logger.error({ err: err instanceof Error ? err.message : String(err) }, "metastore listener threw");
      }
    }
  };

  const ours = (t: NaradTopic): boolean =>
    t.spec?.cluster === clusterName && t.metadata?.deletionTimestamp === undefined;

  const rebuildTopics = (): void => {
    const next = new Map<string, TopicEntry>();
    const dupes: string[] = [];
    for (const t of topicReflector.list()) {
      if (!ours(t)) continue;
      let entry: TopicEntry;
      try {
        const reported = t.metadata.annotations?.[LINK_PROBLEM_ANNOTATION];
        entry = {
          config: topicConfigOf(t),
          kubeName: t.metadata.name ?? "",
          generation: t.metadata.generation ?? 0,
          resourceVersion: t.metadata.resourceVersion ?? "",
          owners: assignmentsOf(t),
          replicas: replicaAssignmentsOf(t),
          register: parseRegister(t.metadata.annotations?.[CHILDREN_ANNOTATION]),
          link: {
            declared: declaredLinkOf(t),
            attachment: attachmentOf(t),
            matching: matchingAttachment(t) !== undefined,
            parentGone: false,
            pending: false,
            reported: typeof reported === "string" && reported !== "" ? reported : undefined,
          },
        };
      } catch (err) {
        logger.warn({ object: t.metadata?.name, err: String(err) }, "skipping malformed NaradTopic");
        continue;
      }
      const existing = next.get(entry.config.name);
      // Two resources naming one topic: the older one wins, deterministically.
      if (existing !== undefined) {
        dupes.push(entry.config.name);
        const older =
          existing.config.created_at < entry.config.created_at ||
          (existing.config.created_at === entry.config.created_at && existing.kubeName < entry.kubeName);
        if (older) continue;
      }
      next.set(entry.config.name, entry);
    }
    if (dupes.length > 0)
      logger.warn({ topics: dupes }, "several NaradTopics name the same topic; the oldest wins");
    // A link is in effect only while the parent incarnation it was admitted
    // under lives: a parent deleted with kubectl (no unlink first) or replaced
    // by a namesake leaves its children unlinked, never adopted by the namesake.
    // And only once the parent's register names it with its epoch (a parent
    // without a register is from before them: the child's side decides).
    for (const e of next.values()) {
      const a = e.link.attachment;
      if (e.config.parent === undefined || a === undefined) continue;
      const parent = next.get(a.parent);
      if (parent?.config.uid !== a.parentUid) {
        e.config = withoutLink(e.config);
        e.link.parentGone = true;
      } else if (parent.register !== undefined && parent.register.get(e.config.name) !== a.epoch) {
        e.config = withoutLink(e.config);
        e.link.pending = true;
      }
    }
    topics = next;
    sorted = [...next.values()].map((e) => e.config).sort((a, b) => compareNames(a.name, b.name));
  };

  const rebuildCluster = (): void => {
    const c = clusterReflector.get(clusterName);
    members = (c?.status?.members ?? []).map(memberOf);
    scaleMoves = c?.status?.scale?.moves ?? [];
    epoch = c?.status?.membershipEpoch ?? 0;
  };

  const topicReflector: Reflector<NaradTopic> = new Reflector<NaradTopic>({
    name: `naradtopics/${namespace}`,
    kubeConfig: opts.kubeConfig,
    path: api.topicsPath,
    list: () => api.listTopics(),
    onChange: () => {
      rebuildTopics();
      notify();
    },
    timing,
    logger,
  });
  const clusterReflector: Reflector<NaradCluster> = new Reflector<NaradCluster>({
    name: `naradclusters/${namespace}/${clusterName}`,
    kubeConfig: opts.kubeConfig,
    path: api.clustersPath,
    fieldSelector: `metadata.name=${clusterName}`,
    list: () => api.listClusters(`metadata.name=${clusterName}`),
    onChange: () => {
      rebuildCluster();
      notify();
    },
    timing,
    logger,
  });

  const caughtUp = (): boolean => topicReflector.caughtUp() && clusterReflector.caughtUp();

  /** Writes need a live API server; without a watch there is no point waiting for a timeout. */
  const requireReachable = (what: string): void => {
    if (topicReflector.caughtUp()) return;
    const why = topicReflector.lastError instanceof Error ? `: ${topicReflector.lastError.message}` : "";
    throw new NaradError("UNAVAILABLE", `${what}: Kubernetes API unreachable${why}`, {
      retryAfterSeconds: timing.retryAfterSeconds,
    });
  };

  /** Resolves true once pred() holds (checked after every replica change), false after timeoutMs. */
  const waitForReplica = (pred: () => boolean, timeoutMs: number): Promise<boolean> => {
    if (pred()) return Promise.resolve(true);
    return new Promise((resolve) => {
      let done = false;
      const finish = (ok: boolean): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        const i = listeners.indexOf(check);
        if (i >= 0) listeners.splice(i, 1);
        resolve(ok);
      };
      const check = (): void => {
        if (pred()) finish(true);
      };
      const timer = setTimeout(() => finish(false), timeoutMs);
      listeners.push(check);
    });
  };

  /** The uid of the parent a link is made to (the attach rules already found it). */
  const parentUid = (parent: string): string => {
    const p = topics.get(parent);
    if (p === undefined) throw topicNotFound(parent);
    return p.config.uid;
  };

  const declaredLinks = (): DeclaredLink[] => {
    const out: DeclaredLink[] = [];
    for (const e of topics.values()) {
      const l = e.link;
      if (l.declared === undefined && l.attachment === undefined && l.reported === undefined) continue;
      const inEffect = e.config.parent !== undefined;
      out.push({
        child: e.config.name,
        parent: l.declared?.parent,
        delayMs: l.declared?.delayMs ?? 0,
        inEffect,
        ended:
          inEffect || l.attachment === undefined || l.pending
            ? "none"
            : l.matching && l.parentGone
              ? "parent-gone"
              : "spec-changed",
        ...(l.pending && l.attachment !== undefined
          ? { pending: { epoch: l.attachment.epoch, attachedAtMs: l.attachment.attachedAtMs } }
          : {}),
        reported: l.reported,
      });
    }
    return out.sort((a, b) => compareNames(a.child, b.child));
  };

  /**
   * The ISR compare-and-swap (ADR 0007): a JSON Patch of the status that
   * names the resourceVersion it was decided on and replaces only this
   * partition's `isr`, so a write on a version that changed since is a 409,
   * and nothing else of the object is touched (not `owner`, not the other
   * partitions). On a 409 the object is read again from the API server (a
   * quorum GET, not the watch) and the write retried while that record still
   * names `expect.leader` at `expect.leaderEpoch` and still holds the ISR the
   * change was decided on (`expect.isr`): an ISR changed by another writer
   * (the operator dropping a replica) is answered "superseded", not
   * overwritten with a change decided without it.
   */
  const recordIsr = async (
    topic: string,
    partition: number,
    expect: { leader: string; leaderEpoch: number; isr?: readonly IsrMember[] },
    isr: readonly IsrMember[],
  ): Promise<IsrWriteOutcome> => {
    const at = `${topic}/${partition}`;
    const entry = topics.get(topic);
    // The caller read its record from this replica; a topic gone from it was deleted.
    if (entry === undefined) return { kind: "stale", reason: `topic "${topic}" is gone` };
    const { kubeName } = entry;
    const uid = entry.config.uid;
    const wanted = isr.map((m) => ({ member: m.member, volumeId: m.volumeId }));
    const deadline = Date.now() + timing.isrWriteTimeoutMs;
    const unknown = (reason: string): IsrWriteOutcome => {
      logger.warn({ topic, partition, reason }, "ISR write without an answer; it may have landed");
      return { kind: "unknown", reason: `record the ISR of ${at}: ${reason}` };
    };
    /** Why the object no longer takes this change, or where the partition's record is. */
    const judge = (
      obj: NaradTopic,
    ):
      | { stale: string }
      | { superseded: string; record: ReplicaAssignment }
      | { index: number; record: ReplicaAssignment } => {
      if (obj.metadata?.uid !== uid) return { stale: `topic "${topic}" was deleted and created again` };
      if (obj.metadata?.deletionTimestamp !== undefined || obj.spec?.cluster !== clusterName)
        return { stale: `topic "${topic}" is being deleted` };
      const index = assignmentIndex(obj, partition);
      const a = index < 0 ? undefined : obj.status?.assignments?.[index];
      const record = a === undefined ? undefined : replicaAssignmentOf(a);
      if (record === undefined) return { stale: `partition ${at} has no replicated record` };
      if (record.leader !== expect.leader || record.leaderEpoch !== expect.leaderEpoch)
        return {
          stale: `the record of ${at} names leader ${record.leader ?? "(none)"} at epoch ${record.leaderEpoch}, not ${expect.leader} at ${expect.leaderEpoch}`,
        };
      // Another writer (the operator dropping a leaving replica) changed the
      // ISR since the change was decided: writing it would undo that change.
      if (
        expect.isr !== undefined &&
        !sameMembers(record.isr, expect.isr) &&
        !sameMembers(record.isr, wanted)
      )
        return { superseded: `the ISR of ${at} changed since the change was decided`, record };
      return { index, record };
    };
    // First from the watch's copy (a conflict costs a re-read); anything but
    // a write is only concluded from a fresh read, which the watch may lag.
    let obj: NaradTopic | undefined = topicReflector.get(kubeName);
    let fresh = false;
    let writes = 0;
    for (;;) {
      if (obj === undefined) {
        try {
          obj = await bounded(() => api.getTopic(kubeName), deadline);
        } catch (err) {
          if (apiStatus(err) === 404) return { kind: "stale", reason: `topic "${topic}" is gone` };
          return unknown(`cannot read the record: ${apiMessage(err)}`);
        }
        fresh = true;
      }
      const verdict = judge(obj);
      if ("stale" in verdict || "superseded" in verdict || sameIsr(verdict.record.isr, wanted)) {
        if (!fresh) {
          obj = undefined;
          continue;
        }
        if ("stale" in verdict) return { kind: "stale", reason: verdict.stale };
        if ("superseded" in verdict)
          return { kind: "superseded", record: verdict.record, reason: verdict.superseded };
        // Already recorded (an earlier write whose answer was lost, or a repeat).
        return { kind: "recorded", record: verdict.record };
      }
      if (writes >= timing.isrWriteAttempts)
        return unknown(`${writes} writes conflicted with other changes of the NaradTopic`);
      writes++;
      const version = obj.metadata?.resourceVersion ?? "";
      try {
        const updated = await bounded(
          () =>
            api.patchTopicStatus(kubeName, [
              { op: "replace", path: "/metadata/resourceVersion", value: version },
              { op: "replace", path: `/status/assignments/${verdict.index}/isr`, value: wanted },
            ]),
          deadline,
        );
        const a = updated.status?.assignments?.find((x) => x.partition === partition);
        const record = (a === undefined ? undefined : replicaAssignmentOf(a)) ?? {
          ...verdict.record,
          isr: wanted,
        };
        logger.debug({ topic, partition, isr: wanted, version }, "ISR recorded");
        return { kind: "recorded", record };
      } catch (err) {
        const status = apiStatus(err);
        if (status === 409) {
          // Changed since it was read: read it again, retry if leader and epoch still hold.
          logger.debug({ topic, partition, version }, "ISR write conflicted; re-reading");
          obj = undefined;
          continue;
        }
        if (status === 404) return { kind: "stale", reason: `topic "${topic}" is gone` };
        // A timeout, a reset connection, a 5xx: it may have landed. A 4xx
        // other than these did not, but is no verdict on the record either.
        return unknown(
          err instanceof DeadlineExceeded ? err.message : `${status ?? "no answer"}: ${apiMessage(err)}`,
        );
      }
    }
  };

  const fullyAssigned = (name: string): boolean => {
    const e = topics.get(name);
    if (e === undefined) return false;
    for (let p = 0; p < e.config.partitions; p++) if (!e.owners.has(p)) return false;
    return true;
  };

  // ---- fan-out links: both sides, each decided by a conditional write (kube/link-registry.ts)

  const epochOf = (name: string): string | undefined => topics.get(name)?.link.attachment?.epoch;
  const linkWriteAttempts = 8;

  /** Waits (bounded) until the replica no longer shows `name` at `rv`: after a write, or a 409 from it. */
  const replicaPast = (name: string, rv: string): Promise<boolean> =>
    waitForReplica(() => topics.get(name)?.resourceVersion !== rv, timing.replicaWaitMs);

  type ObjectPatch = { spec?: object; metadata?: { annotations?: Record<string, string | null> } };

  /**
   * A merge patch of `e`'s object conditional on the version it was decided
   * from: the object written, or undefined when it changed meanwhile (the
   * replica has then moved on, bounded, for the next decision).
   */
  const patchFrom = async (
    e: TopicEntry,
    patch: ObjectPatch,
    what: string,
  ): Promise<NaradTopic | undefined> => {
    try {
      const written = await api.patchTopicSpec(e.kubeName, {
        ...patch,
        metadata: { ...patch.metadata, resourceVersion: e.resourceVersion },
      });
      // A patch that changed nothing keeps the version: nothing for the replica to see.
      if (written.metadata.resourceVersion !== e.resourceVersion)
        await replicaPast(e.config.name, e.resourceVersion);
      return written;
    } catch (err) {
      if (apiStatus(err) === 409) {
        await replicaPast(e.config.name, e.resourceVersion);
        return undefined;
      }
      if (apiStatus(err) === 404) throw topicNotFound(e.config.name);
      throw writeError(err, what, timing.retryAfterSeconds);
    }
  };

  const keptChanging = (what: string): NaradError =>
    new NaradError("UNAVAILABLE", `${what}: the topics kept changing meanwhile; try again`, {
      retryAfterSeconds: timing.retryAfterSeconds,
    });

  /** A parent's register, or for a parent from before registers its children in effect. */
  const registerOrSeed = (p: TopicEntry): LinkRegister => {
    if (p.register !== undefined) return p.register;
    const seed = new Map<string, string>();
    for (const t of sorted)
      if (t.parent === p.config.name && t.attach_epoch !== undefined) seed.set(t.name, t.attach_epoch);
    return seed;
  };
  const registerPatch = (r: LinkRegister): ObjectPatch => ({
    metadata: { annotations: { [CHILDREN_ANNOTATION]: formatRegister(r) } },
  });

  /** Step 1: the parent has a register, so no child's side alone puts a link in effect any more. */
  const ensureRegister = async (parent: string, what: string): Promise<void> => {
    for (let i = 0; i < linkWriteAttempts; i++) {
      const p = topics.get(parent);
      if (p === undefined) throw topicNotFound(parent);
      if (p.register !== undefined) return;
      if ((await patchFrom(p, registerPatch(registerOrSeed(p)), what)) !== undefined) return;
    }
    throw keptChanging(what);
  };

  /** The link `e` holds or is being given: spec declares it and its parent incarnation lives. */
  const heldLink = (e: TopicEntry): (Attachment & { pending: boolean }) | undefined =>
    e.link.matching && !e.link.parentGone && e.link.attachment !== undefined
      ? { ...e.link.attachment, pending: e.link.pending }
      : undefined;
  const liveChildren = (e: TopicEntry): number =>
    e.register === undefined
      ? sorted.filter((t) => t.parent === e.config.name).length
      : liveEntries(e.register, epochOf).size;

  /** Step 2: the child's side, conditional on the child's version. */
  const writeChildLink = async (
    name: string,
    patch: TopicPatch,
    link: Attachment,
    what: string,
  ): Promise<{ written: NaradTopic; before: TopicEntry }> => {
    for (let i = 0; i < linkWriteAttempts; i++) {
      const c = topics.get(name);
      if (c === undefined) throw topicNotFound(name);
      const problem = childLinkProblem({
        child: name,
        epoch: link.epoch,
        current: heldLink(c),
        liveChildren: liveChildren(c),
      });
      if (problem !== undefined) throw conflict(problem);
      const written = await patchFrom(c, topicMergePatch(patch, link), what);
      if (written !== undefined) return { written, before: c };
    }
    throw keptChanging(what);
  };

  /** Step 3: the parent's side, conditional on the parent's version; the refusal's reason, or undefined when registered. */
  const registerLink = async (
    link: Pick<Attachment, "parent" | "parentUid" | "epoch">,
    child: string,
    what: string,
  ): Promise<string | undefined> => {
    const { parent, epoch } = link;
    for (let i = 0; i < linkWriteAttempts; i++) {
      const p = topics.get(parent);
      if (p === undefined || p.config.uid !== link.parentUid)
        return `topic "${parent}" was deleted meanwhile`;
      const d = registerChild({
        parent,
        register: registerOrSeed(p),
        parentAttachedTo: p.link.attachment?.parent,
        child,
        epoch,
        epochOf,
        maxChildren: maxChildrenPerParent,
      });
      if (d.kind === "registered") return undefined;
      if (d.kind === "refuse") return d.reason;
      if ((await patchFrom(p, registerPatch(d.register), what)) !== undefined) return undefined;
    }
    throw keptChanging(what);
  };

  /**
   * Takes back a child's side refused at step 3: the declaration it had
   * before (spec.parent, spec.delayMs; its schema when it had none) and no
   * attachment, unless something else changed the link meanwhile.
   */
  const takeBack = async (written: NaradTopic, before: TopicEntry, epoch: string): Promise<void> => {
    const name = before.config.name;
    const patch: ObjectPatch = {
      spec: {
        parent: before.link.declared?.parent ?? null,
        delayMs:
          before.link.declared === undefined || before.link.declared.delayMs === 0
            ? null
            : before.link.declared.delayMs,
        ...(before.config.schema === undefined ? { schema: null } : {}),
      },
      metadata: { annotations: { [ATTACHMENT_ANNOTATION]: null } },
    };
    let rv = written.metadata.resourceVersion ?? "";
    for (let i = 0; i < linkWriteAttempts; i++) {
      try {
        await api.patchTopicSpec(written.metadata.name ?? before.kubeName, {
          ...patch,
          metadata: { ...patch.metadata, resourceVersion: rv },
        });
        await replicaPast(name, rv);
        return;
      } catch (err) {
        if (apiStatus(err) === 404) return;
        if (apiStatus(err) !== 409) break;
        await waitForReplica(() => topics.get(name)?.resourceVersion !== rv, timing.replicaWaitMs);
        const now = topics.get(name);
        if (now === undefined || now.link.attachment?.epoch !== epoch) return;
        rv = now.resourceVersion;
      }
    }
    // Left pending (the parent never registers it): the deciding broker reports it on the child.
    logger.warn(
      { topic: name, epoch },
      "fan-out attach refused, but its link on the child could not be taken back",
    );
  };

  /** Deletes a topic this broker just created (a create-as-child refused on the parent's side). */
  const deleteCreated = async (created: NaradTopic): Promise<void> => {
    try {
      await api.deleteTopic(created.metadata.name ?? "");
    } catch (err) {
      if (apiStatus(err) !== 404)
        logger.warn(
          { object: created.metadata.name, err: String(err) },
          "create-as-child refused, but the created NaradTopic could not be deleted",
        );
    }
  };

  /** After a detach: the child's entry leaves the parent's register (best effort: a dead entry is pruned later anyway). */
  const deregisterLink = async (parent: string, child: string): Promise<void> => {
    for (let i = 0; i < linkWriteAttempts; i++) {
      const p = topics.get(parent);
      if (p?.register === undefined) return;
      const next = deregisterChild(p.register, child, epochOf);
      if (next === undefined) return;
      try {
        if ((await patchFrom(p, registerPatch(next), `update the children of "${parent}"`)) !== undefined)
          return;
      } catch (err) {
        logger.debug(
          { parent, child, err: String(err) },
          "fan-out register: could not drop a detached child",
        );
        return;
      }
    }
  };

  topicReflector.start();
  clusterReflector.start();
  try {
    await Promise.all([
      topicReflector.waitCaughtUp(timing.initialSyncTimeoutMs),
      clusterReflector.waitCaughtUp(timing.initialSyncTimeoutMs),
    ]);
  } catch (err) {
    await Promise.all([topicReflector.stop(), clusterReflector.stop()]);
    throw new NaradError("UNAVAILABLE", `kubernetes metastore: ${(err as Error).message}`, { cause: err });
  }
  if (clusterReflector.get(clusterName) === undefined) {
    logger.warn(
      { namespace, cluster: clusterName },
      "NaradCluster not found; membership is empty until it exists",
    );
  }
  logger.info(
    { namespace, cluster: clusterName, topics: sorted.length, members: members.length },
    "kubernetes metastore synced",
  );

  return {
    kind: "kubernetes",
    listTopics: () => sorted,
    getTopic: (name) => topics.get(name)?.config,

    async createTopic(topic) {
      const what = `create topic "${topic.name}"`;
      requireReachable(what);
      if (topics.has(topic.name)) throw topicExists(topic.name);
      const attachment =
        topic.parent === undefined ? undefined : attachmentFor(topic, parentUid(topic.parent));
      // A child from birth: its parent keeps a register first (step 1), the
      // new object is the child's side, then the parent registers it (step 3).
      if (attachment !== undefined) await ensureRegister(attachment.parent, what);
      let created: NaradTopic;
      try {
        created = await api.createTopic(naradTopicFor(topic, namespace, clusterName, attachment));
      } catch (err) {
        if (apiStatus(err) === 409) throw topicExists(topic.name);
        throw writeError(err, what, timing.retryAfterSeconds);
      }
      if (attachment !== undefined) {
        let refused: string | undefined;
        try {
          await waitForReplica(
            () => topics.get(topic.name)?.config.uid === created.metadata.uid,
            timing.replicaWaitMs,
          );
          refused = await registerLink(attachment, topic.name, what);
        } catch (err) {
          await deleteCreated(created);
          throw err;
        }
        if (refused !== undefined) {
          // Refused on the parent's side: no topic, as a refused create-as-child leaves none.
          await deleteCreated(created);
          throw conflict(refused);
        }
      }
      const assigned = await waitForReplica(() => fullyAssigned(topic.name), timing.assignmentWaitMs);
      if (!assigned) {
        logger.warn(
          { topic: topic.name, object: created.metadata.name, waitedMs: timing.assignmentWaitMs },
          "topic created but the operator has not assigned its partitions yet; produce works once it does",
        );
      }
      return topics.get(topic.name)?.config ?? topicConfigOf(created);
    },

    async updateTopic(name, patch: TopicPatch) {
      const what = `update topic "${name}"`;
      const current = topics.get(name);
      if (current === undefined) throw topicNotFound(name);
      requireReachable(what);
      // A link change (attach: parent and epoch; detach: parent undefined)
      // writes spec.parent, spec.delayMs and the attachment record at once.
      const link = !("parent" in patch)
        ? undefined
        : patch.parent === undefined
          ? null
          : attachmentFor(patch, parentUid(patch.parent));
      if (link === undefined && "parent" in patch)
        throw new NaradError("INTERNAL", `${what}: a link needs its attach epoch`);
      let updated: NaradTopic;
      if (link != null) {
        // Attach: both sides, each a conditional write (kube/link-registry.ts).
        await ensureRegister(link.parent, what);
        const child = await writeChildLink(name, patch, link, what);
        const refused = await registerLink(link, name, what);
        if (refused !== undefined) {
          await takeBack(child.written, child.before, link.epoch);
          throw conflict(refused);
        }
        updated = child.written;
      } else {
        try {
          updated = await api.patchTopicSpec(current.kubeName, topicMergePatch(patch, link));
        } catch (err) {
          if (apiStatus(err) === 404) throw topicNotFound(name);
          throw writeError(err, what, timing.retryAfterSeconds);
        }
        // Detach: the parent's register drops the child (best effort: a dead entry is pruned later).
        const from = current.link.attachment?.parent;
        if (link === null && from !== undefined) await deregisterLink(from, name);
      }
      const generation = updated.metadata.generation ?? 0;
      // Read-your-writes for the next GET /v1/topics/{t} on this broker (an
      // attach of a link spec already declared changes no spec: the link is awaited).
      await waitForReplica(() => {
        const e = topics.get(name);
        if (e === undefined || e.generation < generation) return false;
        return link === undefined || e.config.attach_epoch === (link === null ? undefined : link.epoch);
      }, timing.replicaWaitMs);
      return topicConfigOf(updated);
    },

    async deleteTopic(name) {
      const what = `delete topic "${name}"`;
      const current = topics.get(name);
      if (current === undefined) throw topicNotFound(name);
      requireReachable(what);
      try {
        await api.deleteTopic(current.kubeName);
      } catch (err) {
        if (apiStatus(err) === 404) throw topicNotFound(name);
        throw writeError(err, what, timing.retryAfterSeconds);
      }
      await waitForReplica(() => !topics.has(name), timing.replicaWaitMs);
    },

    async confirmTopicDeleted(name, uid) {
      // With a uid the question is whether that incarnation is gone: a live
      // namesake with another uid is a different topic and keeps nothing alive.
      const alive = (config: TopicConfig | undefined): boolean =>
        config !== undefined && (uid === undefined || config.uid === uid);
      if (alive(topics.get(name)?.config)) return false;
      if (!topicReflector.caughtUp()) return false;
      // A quorum LIST rather than a GET by object name: a NaradTopic applied
      // with kubectl may carry this topic in spec.name under any object name.
      let fresh: NaradTopic[];
      try {
        fresh = (await api.listTopics()).items;
      } catch (err) {
        logger.debug({ topic: name, err: String(err) }, "confirmTopicDeleted: quorum read failed");
        return false;
      }
      const present = fresh.some((t) => {
        if (t.spec?.cluster !== clusterName || t.metadata?.deletionTimestamp !== undefined) return false;
        if (uid !== undefined) return t.metadata?.uid === uid;
        try {
          return topicName(t) === name;
        } catch {
          return false;
        }
      });
      return !present && !alive(topics.get(name)?.config);
    },

    declaredLinks,

    async completeLink(child, epoch) {
      const what = `complete the fan-out link of "${child}"`;
      const a = topics.get(child)?.link;
      if (a?.attachment?.epoch !== epoch || !a.pending) return;
      requireReachable(what);
      const refused = await registerLink(a.attachment, child, what);
      if (refused !== undefined) throw conflict(refused);
      await waitForReplica(() => topics.get(child)?.config.attach_epoch === epoch, timing.replicaWaitMs);
    },

    async settleDeclaredLink(child, problem, dropAdmission) {
      const current = topics.get(child);
      if (current === undefined) return;
      requireReachable(`settle the declared link of "${child}"`);
      // Conditional on the version decided from: a change meanwhile (a user's
      // edit, an attach) wins with 409, and the next pass decides again.
      const annotations: Record<string, string | null> = { [LINK_PROBLEM_ANNOTATION]: problem ?? null };
      if (dropAdmission && current.config.parent === undefined) annotations[ATTACHMENT_ANNOTATION] = null;
      try {
        await api.patchTopicSpec(current.kubeName, {
          metadata: { resourceVersion: current.resourceVersion, annotations },
        });
      } catch (err) {
        if (apiStatus(err) === 409 || apiStatus(err) === 404) return;
        throw writeError(err, `settle the declared link of "${child}"`, timing.retryAfterSeconds);
      }
      await waitForReplica(
        () => (topics.get(child)?.resourceVersion ?? current.resourceVersion) !== current.resourceVersion,
        timing.replicaWaitMs,
      );
    },

    ownerOf: (topic, partition) => topics.get(topic)?.owners.get(partition) ?? "",

    replicaAssignment: (topic, partition) => {
      const r = topics.get(topic)?.replicas.get(partition);
      return r === undefined
        ? undefined
        : { ...r, replicas: [...r.replicas], isr: r.isr.map((m) => ({ ...m })) };
    },

    recordIsr,

    moves(): ClusterMove[] {
      const byKubeName = new Map<string, string>();
      for (const e of topics.values()) byKubeName.set(e.kubeName, e.config.name);
      return movesInFlight(scaleMoves, (kubeName) => byKubeName.get(kubeName));
    },

    async authoritativeOwner(topic, partition, uid) {
      // A quorum LIST, as confirmTopicDeleted: the object name need not be the topic's.
      let fresh: NaradTopic[];
      try {
        fresh = (await api.listTopics()).items;
      } catch (err) {
        logger.debug({ topic, err: String(err) }, "authoritativeOwner: quorum read failed");
        return { kind: "unknown" };
      }
      const named = fresh.filter((o) => {
        if (o.spec?.cluster !== clusterName || o.metadata?.deletionTimestamp !== undefined) return false;
        try {
          return topicName(o) === topic;
        } catch {
          return false;
        }
      });
      // With a uid, that incarnation (several objects may carry one topic name);
      // without one, the one the replica picks: the oldest, then by object name.
      const rank = (o: NaradTopic) =>
        [isoTime(o.metadata?.creationTimestamp), o.metadata?.name ?? ""] as const;
      const t =
        uid !== undefined
          ? named.find((o) => o.metadata?.uid === uid)
          : named.sort((a, b) => {
              const [ca, na] = rank(a);
              const [cb, nb] = rank(b);
              return ca < cb ? -1 : ca > cb ? 1 : na < nb ? -1 : na > nb ? 1 : 0;
            })[0];
      if (t === undefined) return { kind: "gone" };
      return { kind: "owner", node: assignmentsOf(t).get(partition) ?? "" };
    },
    members: () => members,
    membershipEpoch: () => epoch,
    caughtUp,
    resync: () => {
      topicReflector.resync();
      clusterReflector.resync();
    },
    onChange: (l) => {
      listeners.push(l);
    },
    close: async () => {
      await Promise.all([topicReflector.stop(), clusterReflector.stop()]);
    },
  };
}
