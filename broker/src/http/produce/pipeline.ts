// One produce pipeline for both produce routes (routes/produce.ts): each route
// only parses its input shape into records and renders its answer. The steps,
// in the order a client sees their refusals:
//
//   open:   admit (draining / poisoned WAL) → acks and producer identity
//           (headers, registry fence) → forwardable → topic → delay child
//   (the route parses its records: partition, key, payload or batch decode)
//   finish: producer sequences → rate limits → schema → WAL append → answer
//
// Decisions are pure (decisions.ts); the append and the answer are the I/O
// edge (append.ts). The order of the steps is the API contract: keep it.

import type { FastifyReply, FastifyRequest } from "fastify";
import { AdmissionBudget } from "../../admission/budget.ts";
import { choosePartition, createRotator, generateKey } from "../../core/partitioner.ts";
import type { WalRecordInput } from "../../core/records.ts";
import { badRequest, draining, NaradError } from "../../errors.ts";
import { directProduceProblem } from "../../fanout/rules.ts";
import type { TopicConfig } from "../../meta/types.ts";
import type { BrokerServices } from "../../services.ts";
import { RateLimits } from "../plugins/rate-limit.ts";
import { type Acks, implicitAcks, type RecordResult } from "../produce-acks.ts";
import { type ProducerHeader, stampRecords } from "../producer-headers.ts";
import { requireTopic } from "../routes/topics.ts";
import { SchemaGate } from "../schema-validation.ts";
import { createAppender } from "./append.ts";
import {
  admissionRoute,
  forwardableRoute,
  lacksStablePartition,
  perPartitionCounts,
  type Route,
} from "./decisions.ts";
import { identifyProducer } from "./identity.ts";

/** What the open steps established for one request. */
export interface OpenProduce {
  topic: TopicConfig;
  producer: ProducerHeader | undefined;
  acks: Acks;
  /** The request named no acks: its answer keeps Narad's 202 shape whatever the mode. */
  implicitAcks: boolean;
  route: Route;
}

/** How a route renders its answers; `kind` names the records in a schema refusal. */
export interface AnswerShape {
  kind: "message" | "batch";
  /** The 202 body (acks=0 and acks=wal). */
  accepted(count: number): unknown;
  /** The 200 body (acks=all). */
  committed(results: RecordResult[]): unknown;
}

export type ProducePipeline = ReturnType<typeof createProducePipeline>;

export function createProducePipeline(s: BrokerServices) {
  const rotator = createRotator();
  let keyCounter = 0;
  // Admission control and rate limits (docs: overload protection).
  const m = s.metrics;
  m.admissionBudgetBytes.set(s.config.admission.budgetBytes);
  const budget = new AdmissionBudget({
    capacityBytes: s.config.admission.budgetBytes,
    timeoutMs: s.config.admission.timeoutMs,
    sink: {
      state: (used, waiters) => {
        m.admissionUsedBytes.set(used);
        m.admissionWaiters.set(waiters);
      },
      waited: (seconds) => m.admissionWaitSeconds.observe(seconds),
      rejected: (reason) => {
        m.admissionRejected.inc({ reason });
        m.produceRejected.inc({ reason: reason === "timeout" ? "admission_timeout" : "admission_too_large" });
      },
    },
  });
  // JSON Schema of the topic, checked before the WAL append (schema-validation.ts).
  const schemas = new SchemaGate({
    onViolation: () => m.produceRejected.inc({ reason: "schema_violation" }),
  });
  const limits = new RateLimits({
    ...s.config.rateLimits,
    onLimited: (scope) => {
      m.rateLimited.inc({ scope });
      m.produceRejected.inc({ reason: `rate_limit_${scope}` });
    },
  });

  const refuseDraining = (): never => {
    m.produceRejected.inc({ reason: "draining" });
    throw draining("this node is draining; retry on another node");
  };

  /** Where this request's records may go, or a refusal (draining, poisoned WAL). */
  const admit = (): Route => {
    const route = admissionRoute({
      draining: s.lifecycle.draining(),
      canForward: s.forwardProduce !== undefined,
      walPoisoned: () => s.ingress.stats().poisoned,
    });
    if (route === "draining") return refuseDraining();
    if (route === "wal_poisoned") {
      m.produceRejected.inc({ reason: "wal_poisoned" });
      throw new NaradError(
        "UNAVAILABLE",
        "the ingress WAL failed a write or fsync; this node refuses produce",
        {
          retryAfterSeconds: 5,
        },
      );
    }
    return route;
  };

  const forwardable = (route: Route, acks: Acks, idempotent: boolean): Route => {
    const r = forwardableRoute(route, acks, idempotent);
    return r === "draining" ? refuseDraining() : r;
  };

  const accepted = (topic: string, records: readonly WalRecordInput[]): void => {
    // Counted per (topic, partition), as Narad labels them.
    for (const [p, c] of perPartitionCounts(records)) {
      const labels = { topic, partition: String(p) };
      m.producedMessages.inc(labels, c.messages);
      m.producedBytes.inc(labels, c.bytes);
    }
  };

  const appender = createAppender({
    s,
    admitAgain: (acks, idempotent) => forwardable(admit(), acks, idempotent),
    accepted,
  });

  /** The shared first steps: admission, identity, route, topic. */
  const open = async (
    request: FastifyRequest,
    topicName: string,
    acksParam: unknown,
  ): Promise<OpenProduce> => {
    const admitted = admit();
    const given = await identifyProducer(s, request.headers, acksParam);
    const { producer } = given;
    const topic = requireTopic(s, topicName);
    const acks = given.acksGiven
      ? given.acks
      : implicitAcks(s.config.defaultAcks, topic.replication_factor ?? 1, admitted === "forward");
    const route = forwardable(admitted, acks, producer !== undefined);
    // A delay child's timeline comes only from its parent (409, as Narad).
    const linked = directProduceProblem(topic);
    if (linked !== undefined) throw linked;
    return { topic, producer, acks, implicitAcks: !given.acksGiven, route };
  };

  /** The shared last steps: sequences, limits, schema, append, answer. */
  const finish = async (
    request: FastifyRequest,
    reply: FastifyReply,
    o: OpenProduce,
    records: WalRecordInput[],
    shape: AnswerShape,
  ): Promise<FastifyReply> => {
    const idempotent = o.producer !== undefined;
    if (o.producer !== undefined) {
      const stamps = stampRecords(
        o.producer,
        records.map((r) => r.partition),
      );
      for (let i = 0; i < records.length; i++) records[i]!.producer = stamps[i];
    }
    if (limits.enabled) limits.check(request, o.topic.name, records.length);
    if (shape.kind === "message") schemas.checkMessage(o.topic, records[0]!.payload);
    else schemas.checkBatch(o.topic, records);
    if (o.acks === "0") {
      reply.code(202).send(shape.accepted(records.length));
      await appender.appendUnanswered(request, records, o.topic.name, o.route, idempotent);
      return reply;
    }
    const res = await appender.appendAndAnswer(request, o.topic, records, o.acks, idempotent, o.route);
    accepted(o.topic.name, records);
    if (res.status === 202 || o.implicitAcks) return reply.code(202).send(shape.accepted(records.length));
    return reply.code(200).send(shape.committed(res.results));
  };

  return {
    budget,
    open,
    finish,
    /** A key for an unkeyed record (spreads them like Narad's generated keys). */
    generatedKey: (): Buffer => Buffer.from(generateKey(++keyCounter), "latin1"),
    /** The record's partition: pinned (>= 0), by key, or round-robin; 400 when out of range. */
    partitionFor: (topic: TopicConfig, key: Buffer | undefined, pinned: number): number => {
      const choice = choosePartition(
        { pinned: pinned >= 0 ? pinned : undefined, key },
        topic.partitions,
        rotator,
      );
      if (!choice.ok) throw badRequest(choice.reason);
      return choice.partition;
    },
    /** 400 for an idempotent record whose partition could change on a retry. */
    requireStablePartition: (o: OpenProduce, keyed: boolean, pinned: number): void => {
      if (lacksStablePartition(o.producer !== undefined, keyed, pinned))
        throw badRequest(
          "an idempotent produce needs a key or an explicit partition for every record, so a retry lands on the same partition",
        );
    },
  };
}
