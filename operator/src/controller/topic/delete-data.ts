import type { V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { topicName } from "../../../../packages/api/src/v1alpha1/defaults.ts";
import type { MemberStatus, NaradTopic } from "../../../../packages/api/src/v1alpha1/types.ts";
import {
  ANNOTATION_FORCE_DELETE,
  FINALIZER_TOPIC_DATA,
  LABEL_CLUSTER,
  REQUEUE_TOPIC_DELETE_MS,
  TOPIC_DELETE_BLOCKED_AFTER_MS,
  TOPIC_PLURAL,
} from "../../constants.ts";
import { apiMessage } from "../../kube/api.ts";
import type { ReconcileResult } from "../../kube/workers.ts";
import { setConditions } from "../../plan/conditions.ts";
import { podView } from "../../plan/pods.ts";
import { resourceNames } from "../../specs/labels.ts";
import type { ReconcileDeps } from "../deps.ts";
import { writeTopicStatus } from "./status.ts";

// A deleted topic's records may sit on any broker: partition logs on the
// owners, and ingress WAL records on whichever node took the produce. So
// EVERY member must confirm that its local files of the topic are gone
// before the finalizer comes off. A member that cannot answer (Down, not
// ready, unreachable) is waited for, never skipped: skipping would leave
// orphaned data that a later topic of the same name would inherit.
// Confirmations are not remembered: each pass asks again (the call is
// idempotent), so an operator restart loses nothing.
//
// Bounded: a deletion still waiting after TOPIC_DELETE_BLOCKED_AFTER_MS
// (timed from this operator's first sight of it) reports Degraded=True,
// reason DeletionBlocked, naming who it waits for. The way out is the
// annotation narad.dev/force-delete=true, which releases the finalizer
// without the members that cannot answer (a Warning Event names them: their
// files stay on their volumes).

export async function deleteTopicData(
  topic: NaradTopic,
  deps: ReconcileDeps,
  log: Logger,
): Promise<ReconcileResult> {
  const namespace = topic.metadata.namespace ?? "";
  const clusterName = topic.spec.cluster;
  const brokerTopic = topicName(topic);
  const cluster = deps.caches.clusters.get(namespace, clusterName);

  if (cluster === undefined) {
    // No brokers are left to ask. Their volumes may be retained (reclaim
    // policy Retain), and the files on them are not removed by anyone.
    const msg = `NaradCluster ${clusterName} is gone: no broker can confirm removal of topic ${brokerTopic}'s data; releasing the topic (files on retained volumes, if any, stay)`;
    log.warn(msg);
    deps.recorder.record(topic, "Warning", "ClusterGone", msg);
    await removeFinalizer(topic, deps, log);
    return {};
  }

  const stsName = resourceNames(clusterName).statefulSet;
  const pods = new Map(
    deps.caches.pods
      .list(namespace)
      .filter((p: V1Pod) => p.metadata?.labels?.[LABEL_CLUSTER] === clusterName)
      .map((p) => podView(p, stsName))
      .filter((v) => v !== undefined)
      .map((v) => [v.name, v]),
  );
  const members: MemberStatus[] = (cluster.status?.members ?? []).filter((m) => m.state !== "Removed");
  const waitingFor: string[] = [];
  await Promise.all(
    members.map(async (m) => {
      const pod = pods.get(m.pod);
      if (m.state === "Down" || pod === undefined || !pod.ready || pod.podIP === undefined) {
        waitingFor.push(
          `${m.id} (${m.state === "Down" ? "Down" : pod === undefined ? "no pod" : "not ready"})`,
        );
        return;
      }
      try {
        const r = await deps.brokers.deleteTopicData({ podIP: pod.podIP, id: m.id }, brokerTopic);
        if (r.done) log.debug({ member: m.id }, "member confirmed topic data removed");
        else waitingFor.push(`${m.id} (${r.reason})`);
      } catch (err) {
        waitingFor.push(`${m.id} (${apiMessage(err)})`);
      }
    }),
  );

  const uid = topic.metadata.uid ?? "";
  if (waitingFor.length === 0) {
    const msg = `all ${members.length} member(s) confirmed topic ${brokerTopic}'s local data is removed`;
    log.info(msg);
    deps.recorder.record(topic, "Normal", "DataDeleted", msg);
    await removeFinalizer(topic, deps, log);
    deps.memory.topicDeletingSince.delete(uid);
    return {};
  }

  waitingFor.sort();
  if (topic.metadata.annotations?.[ANNOTATION_FORCE_DELETE] === "true") {
    const msg = `${ANNOTATION_FORCE_DELETE}=true: releasing topic ${brokerTopic} without ${waitingFor.join(", ")}; their local files of the topic stay on their volumes`;
    log.warn(msg);
    deps.recorder.record(topic, "Warning", "ForcedDeletion", msg);
    await removeFinalizer(topic, deps, log);
    deps.memory.topicDeletingSince.delete(uid);
    return {};
  }
  const now = deps.clock.now();
  const since = deps.memory.topicDeletingSince.get(uid) ?? now;
  deps.memory.topicDeletingSince.set(uid, since);
  const blocked = now - since >= TOPIC_DELETE_BLOCKED_AFTER_MS;
  const msg = `waiting for ${waitingFor.length}/${members.length} member(s) to remove topic ${brokerTopic}'s data: ${waitingFor.join(", ")}`;
  log.info(msg);
  deps.recorder.record(topic, "Warning", "DeletionWaiting", msg);
  const prev = topic.status ?? {};
  const next = {
    ...prev,
    conditions: setConditions(
      prev.conditions,
      [
        { type: "Ready", status: "False", reason: "DeletionPending", message: msg },
        blocked
          ? {
              type: "Degraded",
              status: "True",
              reason: "DeletionBlocked",
              message: `${msg}; waiting for ${Math.round((now - since) / 1000)}s. To release it without them, annotate the NaradTopic ${ANNOTATION_FORCE_DELETE}=true (their files stay on their volumes)`,
            }
          : { type: "Degraded", status: "False", reason: "DeletionPending", message: "deletion in progress" },
      ],
      new Date(now).toISOString(),
    ),
  };
  await writeTopicStatus(topic, prev, next, deps, log);
  return { requeueAfterMs: REQUEUE_TOPIC_DELETE_MS };
}

async function removeFinalizer(topic: NaradTopic, deps: ReconcileDeps, log: Logger): Promise<void> {
  const finalizers = (topic.metadata.finalizers ?? []).filter((f) => f !== FINALIZER_TOPIC_DATA);
  await deps.api.setFinalizers(
    { plural: TOPIC_PLURAL, namespace: topic.metadata.namespace ?? "", name: topic.metadata.name ?? "" },
    finalizers,
    topic.metadata.resourceVersion ?? "",
  );
  log.info(`removed finalizer ${FINALIZER_TOPIC_DATA}`);
}
