import { Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { NaradError, topicNotFound } from "../errors.ts";
import {
  CommitNotSentError,
  commitNeverApplied,
  fromRpcError,
  PartialCommitError,
  toRpcFailure,
  toServiceError,
} from "./status.ts";

function serviceError(code: status, details: string): ServiceError {
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata: new Metadata() });
}

/** What the dispatcher sees: the client turns a gRPC failure into a NaradError. */
const failed = (code: status, details: string) =>
  fromRpcError(serviceError(code, details), "10.0.0.2:7943", 1);

describe("commitNeverApplied: which failed commits may have landed at the owner", () => {
  it("an owner's refusal or no connection at all: nothing landed", () => {
    expect(commitNeverApplied(failed(status.FAILED_PRECONDITION, "NOT_OWNER: a/1 is owned by n2"))).toBe(
      true,
    );
    expect(commitNeverApplied(failed(status.UNAVAILABLE, "PARTITION_FROZEN: a/1 is being moved"))).toBe(true);
    expect(commitNeverApplied(failed(status.UNAUTHENTICATED, "bad cluster secret"))).toBe(true);
    expect(
      commitNeverApplied(
        failed(
          status.UNAVAILABLE,
          "No connection established. Last error: connect ECONNREFUSED 10.0.0.2:7943",
        ),
      ),
    ).toBe(true);
    expect(commitNeverApplied(new CommitNotSentError("UNAVAILABLE", "n2 has no address"))).toBe(true);
  });

  it("a timeout, a dropped connection, an internal error or a partial success: in doubt", () => {
    expect(commitNeverApplied(failed(status.DEADLINE_EXCEEDED, "Deadline exceeded"))).toBe(false);
    expect(commitNeverApplied(failed(status.UNAVAILABLE, "Connection dropped"))).toBe(false);
    expect(commitNeverApplied(failed(status.UNAVAILABLE, "read ECONNRESET"))).toBe(false);
    expect(commitNeverApplied(failed(status.INTERNAL, "fsync failed"))).toBe(false);
    expect(commitNeverApplied(new Error("anything else"))).toBe(false);
    const partial = new PartialCommitError("UNAVAILABLE", "after 1 of 2 requests", {
      cause: serviceError(status.FAILED_PRECONDITION, "NOT_OWNER"),
    });
    expect(commitNeverApplied(partial)).toBe(false);
    expect(commitNeverApplied(new NaradError("UNAVAILABLE", "no cause"))).toBe(false);
  });
});

describe("a peer's HTTP error code crosses the cluster RPC", () => {
  const roundTrip = (err: unknown) => {
    const sent = toServiceError(toRpcFailure(err));
    const received = Object.assign(new Error(sent.details), sent) as ServiceError;
    return fromRpcError(received, "10.0.0.2:7943", 1);
  };

  it("keeps topic_not_found (thrown, or a read that raced the deletion) and the kind's status", () => {
    const thrown = roundTrip(topicNotFound("t"));
    expect({ code: thrown.code, apiCode: thrown.apiCode }).toEqual({
      code: "NOT_FOUND",
      apiCode: "topic_not_found",
    });
    const raced = roundTrip(Object.assign(new Error("TOPIC_DELETED: t"), { code: "TOPIC_DELETED" }));
    expect(raced.apiCode).toBe("topic_not_found");
  });

  it("falls back to the kind's default without one, and for one of another status", () => {
    expect(roundTrip(new NaradError("NOT_FOUND", "group g not found")).apiCode).toBe("not_found");
    expect(failed(status.NOT_FOUND, "old peer").apiCode).toBe("not_found");
    // 413 travels as INVALID_ARGUMENT: a 400 here, so payload_too_large is dropped.
    expect(roundTrip(new NaradError("PAYLOAD_TOO_LARGE", "big")).apiCode).toBe("bad_request");
  });
});
