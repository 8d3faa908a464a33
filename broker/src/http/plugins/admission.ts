// Admission control for produce routes: before fastify reads a body, the
// request takes its share of the node's produce memory budget (its
// Content-Length, or the route's body limit capped at the budget when the
// body is chunked) and waits FIFO while the budget is full. The share goes
// back once the response is over AND the handler is done with the bytes
// (the WAL fsynced them, or the request failed), so a client that hangs up
// while its records are staged cannot free memory the WAL still holds.
// Register it only inside the produce plugin: consume, ack and read never wait.

import { Transform } from "node:stream";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { AdmissionBudget, Lease } from "../../admission/budget.ts";
import { NaradError } from "../../errors.ts";

interface Held {
  lease: Lease | undefined;
  /** Parties still using the bytes: the response until it closes, a handler while it works. */
  refs: number;
  /** Bytes this request may send; a chunked body beyond it is cut off with 413. */
  limit: number;
  chunked: boolean;
}

const held = new WeakMap<FastifyRequest, Held>();

function drop(h: Held): void {
  h.refs--;
  if (h.refs <= 0) h.lease?.release();
}

/**
 * Keeps the request's share while the caller works with its bytes; call the
 * returned function when done (after the WAL append settled).
 */
export function holdAdmission(request: FastifyRequest): () => void {
  const h = held.get(request);
  if (h === undefined) return () => {};
  h.refs++;
  let done = false;
  return () => {
    if (done) return;
    done = true;
    drop(h);
  };
}

/** Counts a chunked body's bytes and fails it once it passes what the request reserved. */
function capped(limit: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > limit) {
        cb(
          new NaradError(
            "PAYLOAD_TOO_LARGE",
            `chunked body exceeds ${limit} bytes (the produce memory budget); send a smaller body or a Content-Length`,
          ),
        );
        return;
      }
      cb(null, chunk);
    },
  });
}

export function registerAdmission(app: FastifyInstance, budget: AdmissionBudget): void {
  // Callback style, not async: an immediate grant (the common case) then
  // costs no promise and no extra tick per produce.
  app.addHook("onRequest", (request, reply, done) => {
    let bytes: number;
    let chunked = false;
    try {
      const routeLimit = request.routeOptions.bodyLimit ?? budget.capacityBytes;
      const header = request.headers["content-length"];
      if (header !== undefined) {
        bytes = Number(header);
        if (!Number.isSafeInteger(bytes) || bytes < 0) {
          throw new NaradError("BAD_REQUEST", "content-length must be a non-negative integer");
        }
        // Fastify refuses it anyway; say so before taking any budget.
        if (bytes > routeLimit) throw new NaradError("PAYLOAD_TOO_LARGE", "request body too large");
      } else if (request.headers["transfer-encoding"] !== undefined) {
        chunked = true;
        bytes = Math.min(routeLimit, budget.capacityBytes);
      } else {
        bytes = 0;
      }
    } catch (err) {
      done(err as Error);
      return;
    }
    if (bytes === 0) {
      done();
      return;
    }
    let acquired: ReturnType<AdmissionBudget["acquire"]>;
    try {
      acquired = budget.acquire(bytes);
    } catch (err) {
      done(err as Error);
      return;
    }
    const h: Held = { lease: undefined, refs: 1, limit: bytes, chunked };
    held.set(request, h);
    if ("now" in acquired) {
      h.lease = acquired.now;
      reply.raw.once("close", () => drop(h));
      done();
      return;
    }
    let closed = false;
    const waiting = acquired;
    reply.raw.once("close", () => {
      closed = true;
      if (h.lease === undefined) waiting.cancel();
      else drop(h);
    });
    waiting.wait.then(
      (lease) => {
        h.lease = lease;
        // Granted after the client left: nothing will use the share.
        if (closed) drop(h);
        done();
      },
      (err: Error) => done(err),
    );
  });

  app.addHook("preParsing", async (request, _reply, payload) => {
    const h = held.get(request);
    if (h === undefined || !h.chunked) return payload;
    return payload.pipe(capped(h.limit));
  });
}
