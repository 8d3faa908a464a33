import type { V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  topicName,
  withClusterDefaults,
  withTopicDefaults,
} from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type {
  NaradCluster,
  NaradTopic,
  NaradTopicStatus,
} from "../../../../packages/api/src/v1alpha1/types.ts";
import {
  API_GROUP_VERSION,
  FINALIZER_TOPIC_DATA,
  LABEL_CLUSTER,
  PREFERRED_LEADER_MAX_PER_PASS,
  PREFERRED_LEADER_SETTLE_MS,
  REPLICATION_RECHECK_MS,
  REPLICATION_WAITING_MS,
  REQUEUE_WAITING_MS,
  STATUS_CONFLICT_REQUEUE_MS,
  TOPIC_KIND,
  TOPIC_PLURAL,
  TOPIC_STATUS_CAS_ATTEMPTS,
} from "../../constants.ts";
import { httpStatus } from "../../kube/api.ts";
import type { ReconcileResult } from "../../kube/workers.ts";
import { assignPartitions } from "../../plan/assignment.ts";
import { type ConditionInput, setCondition, setConditions } from "../../plan/conditions.ts";
import { activeMemberIds } from "../../plan/members.ts";
import { podView } from "../../plan/pods.ts";
import {
  effectiveReplication,
  planReplicatedTopic,
  type ReplicaMemberView,
  type ReplicatedTopicPlan,
  replicaMemberView,
} from "../../plan/topic-replication.ts";
import { resourceNames } from "../../specs/labels.ts";
import { type ReconcileDeps, splitKey } from "../deps.ts";
import { deleteTopicData } from "./delete-data.ts";
import { writeTopicStatus } from "./status.ts";

// NaradTopic reconcile:
//   - not deleting: make sure our finalizer is on (the data on every broker
//     must be removed before the object goes), then place partitions in
//     status.assignments: single-copy topics on Active members (sticky,
//     balanced; plan/assignment.ts), replicated ones with replicas, leader,
//     ISR and leader epoch, elections and reassignment
//     (plan/topic-replication.ts);
//   - deleting: ask every member to remove its local files of the topic and
//     drop the finalizer only when all have confirmed.
//
// The status write is a compare-and-swap on resourceVersion (brokers write
// the ISR of the same records): on a conflict the topic is read again from
// the API server and the decision made again from it, never written over.

export async function reconcileTopic(key: string, deps: ReconcileDeps): Promise<ReconcileResult> {
  const { namespace, name } = splitKey(key);
  const log = deps.log.child({ topic: key });
  const cached = deps.caches.topics.get(namespace, name);
  if (cached === undefined) {
    log.debug("NaradTopic not found (deleted)");
    forgetGauges(key, deps);
    return {};
  }
  let topic: NaradTopic = { ...cached, apiVersion: API_GROUP_VERSION, kind: TOPIC_KIND };
  const ref = { plural: TOPIC_PLURAL, namespace, name };

  if (topic.metadata.deletionTimestamp) {
    if (!(topic.metadata.finalizers ?? []).includes(FINALIZER_TOPIC_DATA)) {
      log.debug("NaradTopic deleting without our finalizer; nothing to do");
      return {};
    }
    forgetGauges(key, deps);
    return deleteTopicData(topic, deps, log);
  }

  if (!(topic.metadata.finalizers ?? []).includes(FINALIZER_TOPIC_DATA)) {
    const finalizers = [...(topic.metadata.finalizers ?? []), FINALIZER_TOPIC_DATA];
    const updated = await deps.api.setFinalizers<NaradTopic>(
      ref,
      finalizers,
      topic.metadata.resourceVersion ?? "",
    );
    log.info(`added finalizer ${FINALIZER_TOPIC_DATA}`);
    topic = { ...topic, metadata: { ...topic.metadata, ...updated.metadata } };
  }

  for (let attempt = 1; ; attempt++) {
    const decision = await decide(topic, key, deps, log);
    try {
      await writeTopicStatus(topic, topic.status ?? {}, decision.next, deps, log);
    } catch (err) {
      if (httpStatus(err) !== 409) throw err;
      // Someone wrote the topic since we read it (a broker's ISR change, a
      // user): decide again from the API server's copy, never over it.
      if (attempt >= TOPIC_STATUS_CAS_ATTEMPTS) {
        log.info(`status write conflicted ${attempt} time(s); reconciling again shortly`);
        return { requeueAfterMs: STATUS_CONFLICT_REQUEUE_MS };
      }
      const fresh = await deps.api.getTopic(namespace, name);
      if (fresh === undefined || fresh.metadata.deletionTimestamp) return {};
      log.debug({ attempt }, "status write conflicted; deciding again from the API server's copy");
      topic = { ...fresh, apiVersion: API_GROUP_VERSION, kind: TOPIC_KIND };
      continue;
    }
    // Events and metrics only for what was written.
    decision.effects();
    return decision.requeueAfterMs === undefined ? {} : { requeueAfterMs: decision.requeueAfterMs };
  }
}

interface Decision {
  next: NaradTopicStatus;
  requeueAfterMs: number | undefined;
  /** Events and metrics of the decision, run once it is written. */
  effects: () => void;
}

async function decide(topic: NaradTopic, key: string, deps: ReconcileDeps, log: Logger): Promise<Decision> {
  const namespace = topic.metadata.namespace ?? "";
  const spec = withTopicDefaults(topic.spec);
  const prev = topic.status ?? {};
  const cluster = deps.caches.clusters.get(namespace, spec.cluster);
  const generation = topic.metadata.generation ?? 0;
  const now = new Date(deps.clock.now()).toISOString();
  const none = () => {};

  if (cluster === undefined || cluster.metadata.deletionTimestamp) {
    const message = `NaradCluster ${spec.cluster} not found in namespace ${namespace}`;
    log.info(`not assigning: ${message}`);
    return {
      next: waiting(prev, generation, "Pending", { reason: "ClusterNotFound", message }, now),
      requeueAfterMs: REQUEUE_WAITING_MS,
      effects: none,
    };
  }
  // The default factor depends on the cluster's declared size, not on how
  // many members happen to be up at this moment.
  const settings = effectiveReplication(spec, prev, withClusterDefaults(cluster.spec).replicas);
  if (!settings.ok) {
    log.info(`not assigning: ${settings.message}`);
    return {
      next: waiting(
        prev,
        generation,
        "Assigning",
        { reason: settings.reason, message: settings.message },
        now,
      ),
      requeueAfterMs: REQUEUE_WAITING_MS,
      effects: none,
    };
  }
  const recorded = {
    replicationFactor: settings.replicationFactor,
    minInsyncReplicas: settings.minInsyncReplicas,
  };
  if (settings.replicationFactor > 1)
    return decideReplicated(topic, key, cluster, { ...settings, problem: settings.problem }, deps, log);

  // One copy: today's placement, unchanged.
  const members = (cluster.status?.members ?? []).filter((m) => m.state !== "Removed");
  const avoid = parentOwners(topic, deps);
  const result = assignPartitions({
    topic: topicName(topic),
    partitions: spec.partitions,
    previous: prev.assignments ?? [],
    memberIds: members.map((m) => m.id),
    activeIds: activeMemberIds(members),
    ...(avoid !== undefined ? { avoid } : {}),
  });
  if (!result.ok) {
    log.info(`not assigning: ${result.reason}`);
    return {
      next: {
        ...waiting(prev, generation, "Assigning", { reason: "NoActiveMembers", message: result.reason }, now),
        ...((prev.assignments?.length ?? 0) > 0 ? recorded : {}),
      },
      requeueAfterMs: REQUEUE_WAITING_MS,
      effects: none,
    };
  }
  const next: NaradTopicStatus = {
    ...prev,
    ...recorded,
    observedGeneration: generation,
    phase: "Ready",
    assignments: result.assignments,
    assignmentEpoch: (prev.assignmentEpoch ?? 0) + (result.changed ? 1 : 0),
    conditions: setCondition(
      prev.conditions,
      settings.problem !== undefined
        ? { type: "Ready", status: "False", ...settings.problem, observedGeneration: generation }
        : {
            type: "Ready",
            status: "True",
            reason: "Assigned",
            message: `${spec.partitions} partition(s) assigned over ${new Set(result.assignments.map((a) => a.owner)).size} member(s)`,
            observedGeneration: generation,
          },
      now,
    ),
  };
  return {
    next,
    requeueAfterMs: undefined,
    effects: () => {
      if (!result.changed) return;
      const msg = `assigned ${result.placed} partition(s); epoch ${next.assignmentEpoch}`;
      log.info({ assignments: result.assignments }, msg);
      deps.recorder.record(topic, "Normal", "Assigned", msg);
    },
  };
}

/** A topic with more than one copy per partition: placement, elections, reassignment. */
async function decideReplicated(
  topic: NaradTopic,
  key: string,
  cluster: NaradCluster,
  settings: {
    replicationFactor: number;
    minInsyncReplicas: number;
    problem: { reason: string; message: string } | undefined;
  },
  deps: ReconcileDeps,
  log: Logger,
): Promise<Decision> {
  const namespace = topic.metadata.namespace ?? "";
  const spec = withTopicDefaults(topic.spec);
  const prev = topic.status ?? {};
  const generation = topic.metadata.generation ?? 0;
  const now = new Date(deps.clock.now()).toISOString();
  const members = await memberViews(cluster, deps, log);
  const avoidLeaders = parentOwners(topic, deps);
  const busy = clusterBusy(cluster);
  const plan = planReplicatedTopic({
    topic: topicName(topic),
    partitions: spec.partitions,
    replicationFactor: settings.replicationFactor,
    minInsyncReplicas: settings.minInsyncReplicas,
    members,
    previous: prev.assignments ?? [],
    balance: {
      allowed: busy === undefined,
      maxMoves: PREFERRED_LEADER_MAX_PER_PASS,
      nowMs: deps.clock.now(),
      settleMs: PREFERRED_LEADER_SETTLE_MS,
      eligibleSince: deps.memory.preferredEligibleSince.get(key),
    },
    ...(avoidLeaders !== undefined ? { avoidLeaders } : {}),
  });
  const epoch = (prev.assignmentEpoch ?? 0) + (plan.changed ? 1 : 0);
  const complete = plan.assignments.length === spec.partitions;
  const ready: ConditionInput =
    settings.problem !== undefined
      ? { type: "Ready", status: "False", ...settings.problem }
      : !complete
        ? {
            type: "Ready",
            status: "False",
            reason: "WaitingForBrokers",
            message: plan.waiting ?? `${spec.partitions - plan.assignments.length} partition(s) not placed`,
          }
        : {
            type: "Ready",
            status: "True",
            reason: "Assigned",
            message: `${spec.partitions} partition(s) with ${settings.replicationFactor} replicas each (min in sync ${settings.minInsyncReplicas}), led by ${new Set(plan.assignments.map((a) => a.owner).filter((o) => o !== "")).size} member(s)`,
          };
  const next: NaradTopicStatus = {
    ...prev,
    observedGeneration: generation,
    phase: complete ? "Ready" : prev.phase === "Ready" ? "Ready" : "Assigning",
    replicationFactor: settings.replicationFactor,
    minInsyncReplicas: settings.minInsyncReplicas,
    underReplicatedPartitions: plan.underReplicated.length,
    offlinePartitions: plan.offline.length,
    conditions: setConditions(
      prev.conditions,
      [
        { ...ready, observedGeneration: generation },
        { ...degraded(plan), observedGeneration: generation },
      ],
      now,
    ),
  };
  if (plan.assignments.length > 0 || (prev.assignments?.length ?? 0) > 0) {
    next.assignments = plan.assignments;
    next.assignmentEpoch = epoch;
  }
  const unsettled = plan.offline.length > 0 || plan.underReplicated.length > 0 || plan.reassigning.length > 0;
  const balanceMs =
    plan.balanceRecheckMs === undefined
      ? undefined
      : Math.min(Math.max(plan.balanceRecheckMs, REPLICATION_WAITING_MS), REPLICATION_RECHECK_MS);
  const requeueAfterMs =
    plan.waiting !== undefined
      ? REPLICATION_WAITING_MS
      : unsettled
        ? Math.min(REPLICATION_RECHECK_MS, balanceMs ?? REPLICATION_RECHECK_MS)
        : balanceMs;
  if (plan.waiting !== undefined) log.info(`not placing yet: ${plan.waiting}`);
  for (const r of plan.reassigning)
    log.debug(
      { partition: r.partition, leaving: r.leaving },
      `reassignment of partition ${r.partition} waits for ${r.waitingFor}`,
    );

  return {
    next,
    requeueAfterMs,
    effects: () => {
      if (plan.balanceEligible.size === 0) deps.memory.preferredEligibleSince.delete(key);
      else deps.memory.preferredEligibleSince.set(key, plan.balanceEligible);
      const labels = { namespace, cluster: cluster.metadata.name ?? "", topic: topicName(topic) };
      deps.memory.topicGauges.set(key, labels);
      deps.metrics?.underReplicatedPartitions.set(labels, plan.underReplicated.length);
      deps.metrics?.offlinePartitions.set(labels, plan.offline.length);
      if (!plan.changed) return;
      if (plan.placed > 0) {
        const msg = `placed ${plan.placed} partition(s) with ${settings.replicationFactor} replicas each; assignment epoch ${epoch}`;
        log.info({ assignments: plan.assignments }, msg);
        deps.recorder.record(topic, "Normal", "Assigned", msg);
      }
      for (const c of plan.leaderChanges) {
        if (c.to === null) {
          const msg = `partition ${c.partition} is offline (${c.reason}); leader epoch ${c.leaderEpoch}. It gets a leader again when an in-sync replica is back on its volume`;
          log.warn({ partition: c.partition, cause: c.cause }, msg);
          deps.recorder.record(topic, "Warning", "PartitionOffline", msg);
          continue;
        }
        const msg = `partition ${c.partition}: leader ${c.from ?? "(none)"} → ${c.to}, leader epoch ${c.leaderEpoch} (${c.reason})`;
        log.info({ partition: c.partition, cause: c.cause }, msg);
        deps.recorder.record(topic, "Normal", "LeaderElected", msg);
        deps.metrics?.leaderElections.inc({ ...labels, cause: c.cause });
      }
      for (const a of plan.replicasAdded) {
        const msg = `partition ${a.partition}: replica ${a.member} added${a.replacing.length > 0 ? ` to replace ${a.replacing.join(", ")}` : ""}; it joins the ISR once it has caught up with the leader`;
        log.info(msg);
        deps.recorder.record(topic, "Normal", "ReplicaAdded", msg);
      }
      for (const d of plan.replicasDropped) {
        const msg = `partition ${d.partition}: replica(s) ${d.members.join(", ")} removed; their replacements are in sync`;
        log.info(msg);
        deps.recorder.record(topic, "Normal", "ReplicaRemoved", msg);
      }
    },
  };
}

/** The Degraded condition of a replicated topic: offline first, then under-replicated. */
function degraded(plan: ReplicatedTopicPlan): ConditionInput {
  const list = (ps: readonly number[]) =>
    ps.length > 10 ? `${ps.slice(0, 10).join(", ")}, …` : ps.join(", ");
  const waits = plan.reassigning.map(
    (r) => `partition ${r.partition} replaces ${r.leaving.join(", ")}: waiting for ${r.waitingFor}`,
  );
  if (plan.offline.length > 0)
    return {
      type: "Degraded",
      status: "True",
      reason: "PartitionsOffline",
      message: `${plan.offline.length} partition(s) have no live in-sync replica and no leader: ${list(plan.offline)}; they are neither written nor read until one is back on its volume`,
    };
  if (plan.underReplicated.length > 0)
    return {
      type: "Degraded",
      status: "True",
      reason: "UnderReplicated",
      message: [
        `${plan.underReplicated.length} partition(s) have fewer live in-sync replicas than the replication factor: ${list(plan.underReplicated)}`,
        ...waits,
      ].join("; "),
    };
  return {
    type: "Degraded",
    status: "False",
    reason: plan.reassigning.length > 0 ? "Reassigning" : "FullyReplicated",
    message: plan.reassigning.length > 0 ? waits.join("; ") : "every partition has all its replicas in sync",
  };
}

/** The cluster's members with their recorded volume ids and their nodes' zones. */
async function memberViews(
  cluster: NaradCluster,
  deps: ReconcileDeps,
  log: Logger,
): Promise<ReplicaMemberView[]> {
  const namespace = cluster.metadata.namespace ?? "";
  const clusterName = cluster.metadata.name ?? "";
  const stsName = resourceNames(clusterName).statefulSet;
  const nodeOf = new Map<string, string>();
  for (const p of deps.caches.pods.list(namespace) as V1Pod[]) {
    if (p.metadata?.labels?.[LABEL_CLUSTER] !== clusterName) continue;
    const v = podView(p, stsName);
    if (v !== undefined && p.spec?.nodeName) nodeOf.set(v.name, p.spec.nodeName);
  }
  return Promise.all(
    (cluster.status?.members ?? []).map(async (m) => {
      const node = nodeOf.get(m.pod);
      let zone: string | undefined;
      if (node !== undefined && deps.zones !== undefined) {
        try {
          zone = await deps.zones.zoneOf(node);
        } catch (err) {
          log.debug({ node, err: String(err) }, "node zone unknown");
        }
      }
      return { ...replicaMemberView(m), zone };
    }),
  );
}

/**
 * Why preferred-leader balance waits (a roll or a scale runs), or undefined.
 * Leadership moved now would be moved again by the next restart or the
 * decommission.
 */
function clusterBusy(cluster: NaradCluster): string | undefined {
  const s = cluster.status;
  if (s?.roll?.podInFlight !== undefined) return `${s.roll.podInFlight} in a planned restart`;
  if (s?.scale?.decommissioning !== undefined) return `decommissioning ${s.scale.decommissioning}`;
  if ((s?.scale?.moves?.length ?? 0) > 0) return "partition moves in flight";
  const paused = cluster.spec?.rollout?.paused === true;
  const outdated = (s?.members ?? []).filter(
    (m) =>
      m.state !== "Removed" &&
      s?.updateRevision !== undefined &&
      m.revision !== undefined &&
      m.revision !== s.updateRevision,
  );
  if (!paused && outdated.length > 0) return `${outdated.length} broker(s) to restart`;
  return undefined;
}

/**
 * A fan-out child (spec.parent): partition → the owner (leader) of the
 * parent's matching partition, for placing new partitions away from it.
 * Undefined for a topic without a parent, or a parent not found or not placed.
 */
function parentOwners(topic: NaradTopic, deps: ReconcileDeps): Map<number, string> | undefined {
  const parent = topic.spec.parent;
  if (parent === undefined || parent === "") return undefined;
  const namespace = topic.metadata.namespace ?? "";
  const p = (deps.caches.topics.list(namespace) as NaradTopic[]).find(
    (t) => t.spec?.cluster === topic.spec.cluster && !t.metadata.deletionTimestamp && topicName(t) === parent,
  );
  const owners = new Map<number, string>();
  for (const a of p?.status?.assignments ?? []) if (a.owner !== "") owners.set(a.partition, a.owner);
  return owners.size === 0 ? undefined : owners;
}

function forgetGauges(key: string, deps: ReconcileDeps): void {
  deps.memory.preferredEligibleSince.delete(key);
  const labels = deps.memory.topicGauges.get(key);
  if (labels === undefined) return;
  deps.memory.topicGauges.delete(key);
  deps.metrics?.underReplicatedPartitions.remove(labels);
  deps.metrics?.offlinePartitions.remove(labels);
}

function waiting(
  prev: NaradTopicStatus,
  generation: number,
  phase: "Pending" | "Assigning",
  why: Pick<ConditionInput, "reason" | "message">,
  now: string,
): NaradTopicStatus {
  return {
    ...prev,
    observedGeneration: generation,
    // Keep a Ready topic Ready while its cluster is briefly without Active
    // members: existing assignments stay valid (brokers reroute).
    phase: prev.phase === "Ready" && (prev.assignments?.length ?? 0) > 0 ? "Ready" : phase,
    conditions: setCondition(
      prev.conditions,
      {
        type: "Ready",
        status: prev.phase === "Ready" && (prev.assignments?.length ?? 0) > 0 ? "True" : "False",
        ...why,
        observedGeneration: generation,
      },
      now,
    ),
  };
}
