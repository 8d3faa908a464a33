// Maps every failure to a JSON body {"error": "...", "code": "..."} with the
// right status: `error` is the message (worded as Narad v1 words it), `code`
// the stable machine-readable code of api-errors.ts. Client mistakes are 4xx
// with a message that says what to fix; anything unexpected is a logged 500
// that does not leak internals.

import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type ApiErrorCode, errorBody } from "../../api-errors.ts";
import { coded, NaradError } from "../../errors.ts";
import { queryValidationError } from "../query-schema.ts";
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
      return coded("NOT_FOUND", "topic_not_found", err.message);
    case "PARTITION_FROZEN":
    case "PARTITION_MOVING":
      // A partition move is in its brief freeze or install: retry shortly.
      return new NaradError("UNAVAILABLE", err.message, { retryAfterSeconds: 1 });
    case "TOO_MANY_OPEN_LOGS":
      return new NaradError("UNAVAILABLE", err.message, { retryAfterSeconds: 5 });
    case "NOT_LEADER":
    case "REPLICATION_TIMEOUT":
      // Replication: a leader change in progress, or replicas slow to copy.
      return new NaradError("UNAVAILABLE", err.message, { retryAfterSeconds: 1 });
    case "NOT_ENOUGH_REPLICAS":
      return coded("UNAVAILABLE", "not_enough_replicas", err.message, { retryAfterSeconds: 1 });
    default:
      return undefined;
  }
}

function fromFastify(err: FastifyError, request: FastifyRequest): NaradError | undefined {
  if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE")
    return new NaradError("PAYLOAD_TOO_LARGE", "request body too large");
  if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE")
    return new NaradError("UNSUPPORTED_MEDIA_TYPE", err.message);
  if (err.code === "FST_ERR_CTP_EMPTY_JSON_BODY")
    return new NaradError("BAD_REQUEST", "request body must not be empty");
  if (err.code === "FST_ERR_CTP_INVALID_CONTENT_LENGTH") return new NaradError("BAD_REQUEST", err.message);
  if (err.validation !== undefined) {
    if (err.validationContext === "querystring") return queryValidationError(err.validation, request);
    return new NaradError("BAD_REQUEST", err.message);
  }
  if (typeof err.statusCode === "number" && err.statusCode >= 400 && err.statusCode < 500) {
    return new NaradError(err.statusCode === 413 ? "PAYLOAD_TOO_LARGE" : "BAD_REQUEST", err.message);
  }
  return undefined;
}

/** The answer for any error a handler, hook or fastify raised. */
export function answerError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const mapped = error instanceof NaradError ? error : (fromStorage(error) ?? fromFastify(error, request));
  if (mapped === undefined) {
    request.log.error({ err: error }, "unexpected error");
    return reply.code(500).send(errorBody("internal", "internal error"));
  }
  if (mapped.retryAfterSeconds !== undefined) reply.header("retry-after", String(mapped.retryAfterSeconds));
  if (mapped.status >= 500) request.log.warn({ code: mapped.code }, mapped.message);
  return reply.code(mapped.status).send(errorBody(mapped.apiCode, mapped.message));
}

/** Codes of the errors Node's HTTP parser reports before a request exists (fastify's clientError). */
function clientErrorAnswer(err: { code?: string }): { status: number; code: ApiErrorCode; message: string } {
  if (err.code === "ERR_HTTP_REQUEST_TIMEOUT")
    return { status: 408, code: "request_timeout", message: "Client Timeout" };
  if (err.code === "HPE_HEADER_OVERFLOW")
    return { status: 431, code: "header_too_large", message: "Exceeded maximum allowed HTTP header size" };
  return { status: 400, code: "bad_request", message: "Client Error" };
}

/**
 * fastify's clientErrorHandler, with the same answer as fastify's default
 * (its `error`, `message` and `statusCode`) plus our `code`: a request whose
 * head is malformed, too large, or too slow (--headers-timeout-ms,
 * --request-timeout-ms) never reaches the error handler.
 */
export function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const a = clientErrorAnswer(err);
  const body = JSON.stringify({
    error: STATUS_CODES[a.status],
    code: a.code,
    message: a.message,
    statusCode: a.status,
  });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${a.status} ${STATUS_CODES[a.status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/**
 * fastify's frameworkErrors (a URL that does not decode, a path segment over
 * maxParamLength): fastify's default body, with our code in place of its
 * FST_ERR_* one.
 */
export function answerFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  const status = error.statusCode ?? 400;
  const code: ApiErrorCode = status === 414 ? "uri_too_long" : "bad_request";
  // fastify's own answers say "Bad Request" for both.
  return reply.code(status).send({ error: "Bad Request", code, message: error.message, statusCode: status });
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(answerError);
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
      return reply
        .code(405)
        .send(errorBody("method_not_allowed", `method ${request.method} not allowed for ${path}`));
    }
    return reply.code(404).send(errorBody("route_not_found", `no route for ${request.method} ${path}`));
  });
}
