// Closing the HTTP server without waiting out the keep-alive timeout.
//
// Node closes the connections that are idle when server.close() runs. A
// connection whose request is still in flight then (a body still arriving, a
// handler still awaiting) is not closed once it is answered: it sits idle
// until keepAliveTimeout (fastify's default: 72 s) unless its client sends
// another request (which fastify answers with Connection: close). A client
// that goes quiet after that last answer therefore held app.close(), and so a
// SIGTERM's exit, for 72 s: past the pod's termination grace, into SIGKILL,
// skipping the consumer-frontier flush and the WAL close that follow.
// Reaping idle connections for as long as the close runs ends such a
// connection right after its answer; a request in flight is never cut.

import type { FastifyInstance } from "fastify";

/** How often idle connections are closed while the server closes. */
const idleReapIntervalMs = 50;

export async function closeHttp(app: FastifyInstance): Promise<void> {
  const reaper = setInterval(() => app.server.closeIdleConnections(), idleReapIntervalMs);
  try {
    await app.close();
  } finally {
    clearInterval(reaper);
  }
}
