// The one table of the machine-readable codes the HTTP API answers in every
// error body, {"error": "<message>", "code": "<code>"}: each code with its
// status and what it means. Clients branch on the code, never on the message
// (messages stay as Narad v1 words them and may change). A code, once
// published, keeps its spelling and status; docs/http-api.md ("Errors")
// lists every row (a unit test holds the two together).

export const apiErrors = {
  // 400: the request is wrong; fix it before retrying.
  bad_request: { status: 400, meaning: "the request is malformed; the message says what to fix" },
  invalid_query_parameter: {
    status: 400,
    meaning: "a query parameter has a value out of its range or format",
  },
  unknown_query_parameter: {
    status: 400,
    meaning: "a query parameter this route does not know (often a typo); nothing was done",
  },
  invalid_acks: { status: 400, meaning: "acks is not 0, wal or all" },
  acks_all_required: {
    status: 400,
    meaning: "an idempotent produce (narad-producer-* headers) needs acks=all",
  },
  unknown_producer_id: {
    status: 400,
    meaning: "the producer id was not issued by this cluster; get one with POST /v1/producers",
  },
  invalid_producer_epoch: { status: 400, meaning: "the producer epoch is above the one the registry issued" },
  schema_violation: {
    status: 400,
    meaning: "a message does not match its topic's JSON Schema (a batch is refused whole)",
  },
  schema_incompatible: {
    status: 400,
    meaning: "a new schema version removes a property, changes a type or adds a required field",
  },
  schema_invalid: { status: 400, meaning: "the schema is not a JSON Schema this broker can compile" },
  invalid_replication_factor: { status: 400, meaning: "replication_factor is not an integer from 1 to 5" },
  replication_factor_above_brokers: {
    status: 400,
    meaning: "replication_factor is above the number of brokers that can hold a replica",
  },
  invalid_min_insync_replicas: {
    status: 400,
    meaning: "min_insync_replicas is not an integer from 1 to the topic's replication_factor",
  },
  replication_not_enabled: {
    status: 400,
    meaning: "replication_factor above 1 while the broker runs with --replication off (the default)",
  },
  replication_factor_immutable: {
    status: 400,
    meaning: "a PATCH names a replication_factor other than the topic's; it is fixed at creation",
  },
  // 401/403: who is asking.
  unauthenticated: {
    status: 401,
    meaning: "credentials are missing, malformed or wrong (the answer carries WWW-Authenticate)",
  },
  forbidden: { status: 403, meaning: "the user's grants do not allow this action on this topic or group" },
  privilege_escalation: {
    status: 403,
    meaning: "the grants asked for exceed the caller's own, or name admin and the caller is not root",
  },
  not_topic_owner: {
    status: 403,
    meaning: "only the topic's owner (its creator) or an admin may alter or delete it",
  },
  // 404/405: what is asked for.
  route_not_found: { status: 404, meaning: "no route has this path" },
  topic_not_found: { status: 404, meaning: "the topic does not exist" },
  not_found: { status: 404, meaning: "the group, move or member named does not exist" },
  user_not_found: { status: 404, meaning: "the user does not exist (in the users file or the Users API)" },
  method_not_allowed: { status: 405, meaning: "the path exists but not with this method (see Allow)" },
  request_timeout: {
    status: 408,
    meaning: "the request (head or body) arrived too slowly; the connection is closed",
  },
  // 409/410: the state does not allow it.
  conflict: { status: 409, meaning: "the request conflicts with the current state (the message says which)" },
  topic_exists: { status: 409, meaning: "a topic of this name already exists" },
  user_exists: { status: 409, meaning: "a user of this name already exists" },
  user_read_only: {
    status: 409,
    meaning: "the user comes from the operator's users file, which the API cannot change; edit the file",
  },
  producer_fenced: {
    status: 409,
    meaning: "a newer epoch of this producer exists; this instance must stop producing",
  },
  out_of_order_sequence: {
    status: 409,
    meaning: "a record's sequence is not the next one of its producer at its partition; nothing stored",
  },
  offset_expired: {
    status: 410,
    meaning: "the offset was removed by retention; read from the oldest offset",
  },
  stale_receipt: {
    status: 410,
    meaning: "the receipt handle has no live lease (expired, settled, or from before a restart)",
  },
  topic_deleted: { status: 410, meaning: "the topic was deleted while the produce waited for its commit" },
  // 413/414/415/431: the request's size or type.
  payload_too_large: { status: 413, meaning: "the body, a record or the batch is over its limit" },
  uri_too_long: { status: 414, meaning: "a path segment is longer than the router accepts" },
  unsupported_media_type: { status: 415, meaning: "the body's Content-Type is not one this route reads" },
  header_too_large: { status: 431, meaning: "the request head is larger than the server accepts" },
  // 429/5xx: retry later (most carry Retry-After).
  rate_limited: {
    status: 429,
    meaning:
      "a rate limit, the produce memory budget or the login throttle refused it; retry after Retry-After",
  },
  internal: {
    status: 500,
    meaning: "an unexpected failure in the broker (logged); the message says nothing more",
  },
  not_implemented: {
    status: 501,
    meaning: "this deployment cannot carry out the route (the message says what to do)",
  },
  users_api_unavailable: {
    status: 501,
    meaning: "the Users API cannot write here: authentication is off (--auth off)",
  },
  unavailable: {
    status: 503,
    meaning: "this node or the partition's owner cannot serve it now; retry after Retry-After",
  },
  draining: { status: 503, meaning: "this node is draining; retry on another node" },
  not_ready: { status: 503, meaning: "GET /readyz: the node is starting or draining" },
  acks_all_unavailable: { status: 503, meaning: "acks=all cannot be served on this node now" },
  commit_timeout: {
    status: 503,
    meaning: "acks=all: records are durable in the WAL but were not committed in time; they still will be",
  },
  not_enough_replicas: {
    status: 503,
    meaning:
      "acks=all on a replicated partition whose recorded ISR is below min_insync_replicas: nothing is answered on fewer copies; retry after Retry-After (an acks=wal produce is kept in the WAL until the ISR recovers)",
  },
  users_unavailable: {
    status: 503,
    meaning:
      "the API users' store (the kubernetes metastore's Secret) was not read within --users-max-staleness-ms: logins of API users and the Users API refuse until it is; users-file users are unaffected",
  },
  registry_unavailable: { status: 503, meaning: "this node has no producer registry" },
  producer_registry_stale: {
    status: 503,
    meaning:
      "this node's producer-registry view is past its fence lease and the registry cannot be read; nothing stored",
  },
  forward_in_doubt: {
    status: 504,
    meaning: "a draining node's forward to a peer failed after the peer may have stored the records",
  },
  disk_full: { status: 507, meaning: "the disk is full; nothing of the request was stored" },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ApiErrorCode = keyof typeof apiErrors;

/** The codes whose status is `S`: a NaradError of one status cannot carry another status's code. */
export type ApiErrorCodeWithStatus<S extends number> = {
  [C in ApiErrorCode]: (typeof apiErrors)[C]["status"] extends S ? C : never;
}[ApiErrorCode];

export function isApiErrorCode(code: string): code is ApiErrorCode {
  return Object.hasOwn(apiErrors, code);
}

/** The JSON body of every error answer. */
export interface ApiErrorBody {
  error: string;
  code: ApiErrorCode;
}

export function errorBody(code: ApiErrorCode, message: string): ApiErrorBody {
  return { error: message, code };
}
