import { topicName, withTopicDefaults } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type { NaradTopic, NaradTopicStatus } from "../../../../packages/api/src/v1alpha1/types.ts";
import {
  API_GROUP_VERSION,
  FINALIZER_TOPIC_DATA,
  REQUEUE_WAITING_MS,
  TOPIC_KIND,
  TOPIC_PLURAL,
} from "../../constants.ts";
import type { ReconcileResult } from "../../kube/workers.ts";
import { assignPartitions } from "../../plan/assignment.ts";
import { type ConditionInput, setCondition } from "../../plan/conditions.ts";
import { activeMemberIds } from "../../plan/members.ts";
import { type ReconcileDeps, splitKey } from "../deps.ts";
import { deleteTopicData } from "./delete-data.ts";
import { writeTopicStatus } from "./status.ts";

// NaradTopic reconcile:
//   - not deleting: make sure our finalizer is on (the data on every broker
//     must be removed before the object goes), then place partitions on
//     Active members (sticky, balanced) in status.assignments;
//   - deleting: ask every member to remove its local files of the topic and
//     drop the finalizer only when all have confirmed.

export async function reconcileTopic(key: string, deps: ReconcileDeps): Promise<ReconcileResult> {
  const { namespace, name } = splitKey(key);
  const log = deps.log.child({ topic: key });
  const cached = deps.caches.topics.get(namespace, name);
  if (cached === undefined) {
    log.debug("NaradTopic not found (deleted)");
    return {};
  }
  let topic: NaradTopic = { ...cached, apiVersion: API_GROUP_VERSION, kind: TOPIC_KIND };
  const ref = { plural: TOPIC_PLURAL, namespace, name };

  if (topic.metadata.deletionTimestamp) {
    if (!(topic.metadata.finalizers ?? []).includes(FINALIZER_TOPIC_DATA)) {
      log.debug("NaradTopic deleting without our finalizer; nothing to do");
      return {};
    }
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

  const spec = withTopicDefaults(topic.spec);
  const prev = topic.status ?? {};
  const cluster = deps.caches.clusters.get(namespace, spec.cluster);
  const generation = topic.metadata.generation ?? 0;
  const now = new Date(deps.clock.now()).toISOString();

  let next: NaradTopicStatus;
  let requeueAfterMs: number | undefined;
  if (cluster === undefined || cluster.metadata.deletionTimestamp) {
    const message = `NaradCluster ${spec.cluster} not found in namespace ${namespace}`;
    next = waiting(prev, generation, "Pending", { reason: "ClusterNotFound", message }, now);
    requeueAfterMs = REQUEUE_WAITING_MS;
    log.info(`not assigning: ${message}`);
  } else {
    const members = (cluster.status?.members ?? []).filter((m) => m.state !== "Removed");
    const result = assignPartitions({
      topic: topicName(topic),
      partitions: spec.partitions,
      previous: prev.assignments ?? [],
      memberIds: members.map((m) => m.id),
      activeIds: activeMemberIds(members),
    });
    if (!result.ok) {
      next = waiting(
        prev,
        generation,
        "Assigning",
        { reason: "NoActiveMembers", message: result.reason },
        now,
      );
      requeueAfterMs = REQUEUE_WAITING_MS;
      log.info(`not assigning: ${result.reason}`);
    } else {
      next = {
        ...prev,
        observedGeneration: generation,
        phase: "Ready",
        assignments: result.assignments,
        assignmentEpoch: (prev.assignmentEpoch ?? 0) + (result.changed ? 1 : 0),
        conditions: setCondition(
          prev.conditions,
          {
            type: "Ready",
            status: "True",
            reason: "Assigned",
            message: `${spec.partitions} partition(s) assigned over ${new Set(result.assignments.map((a) => a.owner)).size} member(s)`,
            observedGeneration: generation,
          },
          now,
        ),
      };
      if (result.changed) {
        const msg = `assigned ${result.placed} partition(s); epoch ${next.assignmentEpoch}`;
        log.info({ assignments: result.assignments }, msg);
        deps.recorder.record(topic, "Normal", "Assigned", msg);
      }
    }
  }
  await writeTopicStatus(topic, prev, next, deps, log);
  return requeueAfterMs === undefined ? {} : { requeueAfterMs };
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
