import { Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { NaradError } from "../errors.ts";
import { CommitNotSentError, commitNeverApplied, fromRpcError, PartialCommitError } from "./status.ts";

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
