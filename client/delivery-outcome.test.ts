import { describe, expect, it } from "vitest";
import { attemptOutcome, flagged } from "./delivery-outcome.ts";
import {
  BadRequestError,
  errorFromResponse,
  FencedProducerError,
  OutOfOrderSequenceError,
  UnavailableError,
} from "./errors.ts";

const answer = (status: number, code?: string) => errorFromResponse(status, "x", undefined, {}, code);

describe("attemptOutcome", () => {
  it("no answer, commit_timeout, unavailable, an uncoded 503 and other 5xx are in doubt", () => {
    expect(attemptOutcome(new UnavailableError("reset", { status: 0 }))).toBe("unknown");
    expect(attemptOutcome(new DOMException("t", "TimeoutError"))).toBe("unknown");
    expect(attemptOutcome(answer(503, "commit_timeout"))).toBe("unknown");
    expect(attemptOutcome(answer(503, "unavailable"))).toBe("unknown");
    expect(attemptOutcome(answer(503))).toBe("unknown");
    expect(attemptOutcome(answer(500, "internal"))).toBe("unknown");
    expect(attemptOutcome(answer(504, "forward_in_doubt"))).toBe("unknown");
  });

  it("a 4xx but 429 and the codes answered before the WAL are not stored", () => {
    expect(attemptOutcome(answer(400, "bad_request"))).toBe("not_stored");
    expect(attemptOutcome(answer(409, "out_of_order_sequence"))).toBe("not_stored");
    expect(attemptOutcome(answer(409, "producer_fenced"))).toBe("not_stored");
    expect(attemptOutcome(answer(410, "topic_deleted"))).toBe("not_stored");
    expect(attemptOutcome(answer(413))).toBe("not_stored");
    for (const code of ["rate_limited", "draining", "not_ready", "producer_registry_stale", "disk_full"])
      expect(
        attemptOutcome(answer(code === "rate_limited" ? 429 : code === "disk_full" ? 507 : 503, code)),
      ).toBe("not_stored");
    expect(attemptOutcome(answer(429))).toBe("unknown"); // no code: a proxy's limit says nothing
  });
});

describe("flagged", () => {
  it("sets one flag; an error already flagged otherwise is copied, keeping its class", () => {
    const fenced = new FencedProducerError("fenced");
    expect(flagged(fenced, false)).toBe(fenced);
    expect(fenced.notStored).toBe(true);
    const copy = flagged(fenced, true) as FencedProducerError;
    expect(copy).not.toBe(fenced);
    expect(copy).toBeInstanceOf(FencedProducerError);
    expect(copy.message).toBe("fenced");
    expect([copy.inDoubt, copy.notStored]).toEqual([true, false]);
    expect([fenced.inDoubt, fenced.notStored]).toEqual([false, true]);
    const e = new OutOfOrderSequenceError("gap");
    expect(flagged(flagged(e, true), true)).toBe(e);
    expect((flagged(new BadRequestError("b"), false) as BadRequestError).notStored).toBe(true);
  });
});
