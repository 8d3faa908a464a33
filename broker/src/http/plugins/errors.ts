// Maps every failure to a JSON body {"error": "..."} (and a `code` when the
// error carries one) with the right status.
// Client mistakes are 4xx with a message that says what to fix; anything
// unexpected is a logged 500 that does not leak internals.

import type { FastifyError, FastifyInstance } from "fastify";
import { NaradError } from "../../errors.ts";
import { createRouteTable } from "../route-table.ts";

interface CodedError {
  code?: unknown;
  message: string;
}

/** Errors raised below the HTTP layer that carry a code meaning something to clients. */
function fromStorage(err: CodedError): NaradError | undefined {
  switch (err.code) {
    case "WAL_POISONED":
      return new NaradError(
        "UNAVAILABLE",
        "the ingress WAL failed a write or fsync; this node refuses produce",
        {
          retryAfterSeconds: 5,
        },
      );
    case "DISK_FULL":
    case "ENOSPC":
    case "EDQUOT":
      // A full disk is not the client's mistake but not a bug either: say so
      // plainly, with a retry hint; nothing of the request was stored.
      return new NaradError("INSUFFICIENT_STORAGE", "disk full: this node cannot store the request now", {
        retryAfterSeconds: 5,
      });
    case "RECORD_TOO_LARGE":
      return new NaradError("PAYLOAD_TOO_LARGE", err.message);
    case "OFFSET_EXPIRED":
      return new NaradError("OFFSET_EXPIRED", err.message);
    case "TOPIC_DELETED":
      // A read or consume that raced the topic's deletion.
      return new NaradError("NOT_FOUND", err.message);
    case "PARTITION_FROZEN":
    case "PARTITION_MOVING":
      // A partition move is in its brief freeze or install: retry shortly.
      return new NaradError("UNAVAILABLE", err.message, { retryAfterSeconds: 1 });
    case "TOO_MANY_OPEN_LOGS":
      return new NaradError("UNAVAILABLE", err.message, { retryAfterSeconds: 5 });
    default:
      return undefined;
  }
}

function fromFastify(err: FastifyError): NaradError | undefined {
  if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE")
    return new NaradError("PAYLOAD_TOO_LARGE", "request body too large");
  if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE")
    return new NaradError("UNSUPPORTED_MEDIA_TYPE", err.message);
  if (err.code === "FST_ERR_CTP_EMPTY_JSON_BODY")
    return new NaradError("BAD_REQUEST", "request body must not be empty");
  if (err.code === "FST_ERR_CTP_INVALID_CONTENT_LENGTH") return new NaradError("BAD_REQUEST", err.message);
  if (err.validation !== undefined) return new NaradError("BAD_REQUEST", err.message);
  if (typeof err.statusCode === "number" && err.statusCode >= 400 && err.statusCode < 500) {
    return new NaradError(err.statusCode === 413 ? "PAYLOAD_TOO_LARGE" : "BAD_REQUEST", err.message);
  }
  return undefined;
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const mapped = error instanceof NaradError ? error : (fromStorage(error) ?? fromFastify(error));
    if (mapped === undefined) {
      request.log.error({ err: error }, "unexpected error");
      return reply.code(500).send({ error: "internal error" });
    }
    if (mapped.retryAfterSeconds !== undefined) reply.header("retry-after", String(mapped.retryAfterSeconds));
    if (mapped.status >= 500) request.log.warn({ code: mapped.code }, mapped.message);
    return reply
      .code(mapped.status)
      .send(
        mapped.wireCode === undefined
          ? { error: mapped.message }
          : { error: mapped.message, code: mapped.wireCode },
      );
  });
  // Every route registered after this point is recorded, so a known path
  // asked with the wrong method gets 405 and `Allow` (as Narad answers)
  // instead of 404.
  const routes = createRouteTable();
  app.addHook("onRoute", (route) => routes.add(route.method, route.url));
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0] ?? "";
    const allowed = routes.methodsFor(path);
    if (allowed.length > 0) {
      reply.header("allow", allowed.join(", "));
      return reply.code(405).send({ error: `method ${request.method} not allowed for ${path}` });
    }
    return reply.code(404).send({ error: `no route for ${request.method} ${path}` });
  });
}
