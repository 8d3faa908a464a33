// Node administration for the operator (and people): status with WAL
// progress, drain and its cancellation, the preStop hook, and removal of a
// deleted topic's local data. Not part of the Narad v1 API.

import type { FastifyInstance } from "fastify";
import { validTopicName } from "../../core/topic-spec.ts";
import { badRequest, conflict } from "../../errors.ts";
import type { BrokerServices } from "../../services.ts";
import { parseOptionalInt } from "../params.ts";
import { querySchema, topicParams } from "../query-schema.ts";
import { moveRoutes } from "./moves.ts";

export function adminRoutes(s: BrokerServices) {
  /** Partitions the metastore replica says this node owns (a decommission waits for 0). */
  const ownedPartitions = (): number => {
    let n = 0;
    for (const t of s.metastore.listTopics())
      for (let p = 0; p < t.partitions; p++) if (s.metastore.ownerOf(t.name, p) === s.nodeId) n++;
    return n;
  };

  const status = () => {
    const wal = s.ingress.stats();
    // Parked records left the WAL's books but are not dispatched: a node is drained only without them.
    const parked = s.dispatch?.stats().parkedRecords ?? 0;
    const stalled = s.dispatch?.stalledLanes() ?? [];
    return {
      nodeId: s.nodeId,
      memberState: s.metastore.members().find((m) => m.id === s.nodeId)?.state ?? null,
      ownedPartitions: ownedPartitions(),
      // Moved-away partitions still kept here (the new owner has not installed them yet): keep the volume.
      movedAwayCopies: s.moves?.heldCopies() ?? 0,
      // The volume identity (replication, ADR 0007): "created" on a volume's first start, "foreign" never served once wired.
      ...(s.volume === undefined
        ? {}
        : {
            volume:
              s.volume.kind === "foreign"
                ? { state: "foreign", reason: s.volume.reason, uuid: s.volume.found?.uuid ?? null }
                : {
                    state: s.volume.kind,
                    uuid: s.volume.identity.uuid,
                    memberId: s.volume.identity.memberId,
                  },
          }),
      // Replication: how many replicated partitions this node leads, follows, or holds idle.
      ...(s.replicas === undefined ? {} : { replicas: replicaCounts(s.replicas.roles()) }),
      ready: s.lifecycle.ready(),
      draining: s.lifecycle.draining(),
      drained: wal.pendingRecords + parked === 0,
      wal: {
        incarnation: wal.incarnation,
        pendingRecords: wal.pendingRecords + parked,
        checkpoint: wal.checkpoint,
        nextSeq: wal.nextSeq,
        segments: wal.segments,
        diskBytes: wal.diskBytes,
        corruptFrames: wal.corruptFrames,
        poisoned: wal.poisoned,
      },
      dispatch: {
        parkedRecords: parked,
        stalledRecords: stalled.reduce((n, l) => n + l.records, 0),
        oldestStalledAgeMs: stalled.reduce((n, l) => Math.max(n, l.oldestAgeMs), 0),
        stalledLanes: stalled,
      },
    };
  };

  return async (app: FastifyInstance): Promise<void> => {
    const admin = (summary: string, description: string, query: Record<string, string> = {}) => ({
      schema: { tags: ["admin"], summary, description, querystring: querySchema(query) },
    });
    app.get(
      "/admin/v1/status",
      admin("Node status", "WAL progress, owned partitions, readiness and drain state of this node."),
      async () => status(),
    );
    await app.register(moveRoutes(s, s.moves));

    // Starts a drain; with ?wait_ms=N also waits (bounded) for the WAL to empty.
    app.post<{ Querystring: { wait_ms?: string } }>(
      "/admin/v1/drain",
      admin("Start a drain", "Stops taking produce here; answers the status (after waiting, with wait_ms).", {
        wait_ms: "wait up to this many ms for the WAL to empty (0-3600000)",
      }),
      async (request) => {
        // Validate first: a refused request (400) must not have started a drain.
        const waitMs = parseOptionalInt(request.query.wait_ms, "wait_ms", 0, 3_600_000) ?? 0;
        s.lifecycle.startDrain("admin request");
        // An admin's bounded wait may outlast the idle timeout (--idle-timeout-ms): not idleness.
        // (inject() in tests hands a socket stand-in without setTimeout.)
        const socket = request.raw.socket as { setTimeout?: (ms: number) => unknown } | undefined;
        if (waitMs > 0 && typeof socket?.setTimeout === "function") socket.setTimeout(0);
        if (waitMs > 0) await s.lifecycle.waitDrained(waitMs);
        return status();
      },
    );

    app.delete(
      "/admin/v1/drain",
      admin("Cancel a drain", "Takes produce again; answers the status."),
      async () => {
        s.lifecycle.cancelDrain();
        return status();
      },
    );

    // Kubernetes preStop hooks can only GET: drain and wait, bounded by the
    // configured drain timeout (below terminationGracePeriodSeconds).
    app.get(
      "/admin/v1/prestop",
      admin(
        "Kubernetes preStop hook",
        "Drains and waits (bounded by the drain timeout); answers the status.",
      ),
      async () => {
        s.lifecycle.startDrain("preStop hook");
        await s.lifecycle.waitDrained(s.config.drainTimeoutMs);
        return status();
      },
    );

    app.delete<{ Params: { topic: string } }>(
      "/admin/v1/topics/:topic/data",
      {
        schema: {
          ...admin(
            "Remove a deleted topic's local data",
            "204; 409 conflict while the metastore still has the topic.",
          ).schema,
          params: topicParams,
        },
      },
      async (request, reply) => {
        const name = request.params.topic;
        if (!validTopicName(name, s.config.topicDefaults.namePattern)) throw badRequest("invalid topic name");
        // Only data of a topic the metastore no longer knows may be removed.
        if (s.metastore.getTopic(name) !== undefined) throw conflict(`topic "${name}" still exists here`);
        await s.logs.deleteTopic(name);
        await s.metrics.forgetTopic(name);
        request.log.info({ topic: name }, "removed local data of a deleted topic");
        return reply.code(204).send();
      },
    );
  };
}

function replicaCounts(roles: ReadonlyArray<{ role: "lead" | "follow" | "idle" }>) {
  const counts = { leading: 0, following: 0, idle: 0 };
  for (const r of roles) {
    if (r.role === "lead") counts.leading++;
    else if (r.role === "follow") counts.following++;
    else counts.idle++;
  }
  return counts;
}
