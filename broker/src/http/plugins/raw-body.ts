// Produce bodies as one Buffer, read straight into a buffer of the announced
// Content-Length. Fastify's own `parseAs: "buffer"` keeps every socket chunk
// until the end and then concatenates them, so a body briefly takes twice
// its size; here each chunk is copied in as it arrives and dropped, so a
// body costs its size once (the produce memory budget counts it once). A
// chunked body (no Content-Length) is collected and joined as before.
// A body that arrives slower than the minimum rate (body-rate.ts) is cut off
// with 408 and its connection closed, so a slow client gives back its share
// of the produce memory budget instead of holding it.

import type { FastifyInstance, FastifyRequest } from "fastify";
import { NaradError } from "../../errors.ts";
import { type BodyRateOptions, bodyRateVerdict } from "../body-rate.ts";

export interface RawBodyOptions extends BodyRateOptions {
  /** Called when a body is cut off for being too slow (a metric). */
  onTooSlow?: () => void;
}

const noRateCheck: RawBodyOptions = { minBytesPerSecond: 0, graceMs: 0 };

const empty = Buffer.alloc(0);

function readBody(
  request: FastifyRequest,
  payload: NodeJS.ReadableStream,
  done: (err: Error | null, body?: Buffer) => void,
  rate: RawBodyOptions,
): void {
  const limit = request.routeOptions.bodyLimit ?? Number.MAX_SAFE_INTEGER;
  const header = request.headers["content-length"];
  const length = header === undefined ? Number.NaN : Number(header);
  if (length > limit) {
    done(new NaradError("PAYLOAD_TOO_LARGE", "request body too large"));
    return;
  }
  if (length === 0) {
    payload.resume();
    done(null, empty);
    return;
  }
  const known = Number.isSafeInteger(length) && length > 0;
  // allocUnsafe: every byte is overwritten before use (a short body is refused below).
  const target = known ? Buffer.allocUnsafe(length) : undefined;
  const chunks: Buffer[] = [];
  let received = 0;
  let finished = false;
  let timer: NodeJS.Timeout | undefined;
  const startMs = Date.now();
  const finish = (err: Error | null, body?: Buffer) => {
    if (finished) return;
    finished = true;
    if (timer !== undefined) clearTimeout(timer);
    payload.removeListener("data", onData);
    payload.removeListener("end", onEnd);
    payload.removeListener("error", onError);
    done(err, body);
  };
  const onData = (chunk: Buffer | string) => {
    const c = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    if (received + c.length > limit || (target !== undefined && received + c.length > target.length)) {
      finish(
        target !== undefined && received + c.length <= limit
          ? new NaradError("BAD_REQUEST", "request body is longer than its content-length")
          : new NaradError("PAYLOAD_TOO_LARGE", "request body too large"),
      );
      return;
    }
    if (target !== undefined) c.copy(target, received);
    else chunks.push(c);
    received += c.length;
  };
  const onEnd = () => {
    if (target !== undefined) {
      if (received !== target.length) {
        finish(new NaradError("BAD_REQUEST", "request body is shorter than its content-length"));
        return;
      }
      finish(null, target);
      return;
    }
    finish(null, chunks.length === 0 ? empty : Buffer.concat(chunks, received));
  };
  // The client went away mid-body (ECONNRESET "aborted") or a preParsing
  // stream failed: a client-side problem unless it already carries a status.
  const onError = (err: Error) =>
    finish(err instanceof NaradError ? err : new NaradError("BAD_REQUEST", `request body: ${err.message}`));
  const checkRate = () => {
    timer = undefined;
    if (finished) return;
    const verdict = bodyRateVerdict(received, Date.now() - startMs, rate);
    if (verdict.ok) {
      if (Number.isFinite(verdict.recheckInMs)) {
        timer = setTimeout(checkRate, verdict.recheckInMs);
        timer.unref();
      }
      return;
    }
    rate.onTooSlow?.();
    const socket = request.raw.socket;
    finish(
      new NaradError(
        "REQUEST_TIMEOUT",
        `request body arrived slower than ${rate.minBytesPerSecond} bytes/s (${received} bytes in ${Date.now() - startMs} ms); send it faster`,
      ),
    );
    // The error handler writes the 408 now; then the connection goes, so the
    // rest of the trickle is not read (and no reservation waits on it).
    // `destroy` is looked up, not assumed: under `app.inject()` the socket is
    // a stand-in without it, and a throw in this timer would be uncaught.
    setTimeout(() => {
      if (typeof socket?.destroy === "function") socket.destroy();
    }, 1000).unref();
  };
  payload.on("data", onData);
  payload.on("end", onEnd);
  payload.on("error", onError);
  payload.resume();
  checkRate();
}

/** Replaces the plugin's content-type parsers with one that yields any body as a Buffer. */
export function registerRawBody(app: FastifyInstance, rate: RawBodyOptions = noRateCheck): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (request, payload, done) => readBody(request, payload, done, rate));
}
