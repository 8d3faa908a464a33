import { describe, expect, it } from "vitest";
import {
  nextCrashCount,
  RESTART_BACKOFF_BASE_MS,
  RESTART_BACKOFF_CAP_MS,
  RESTART_BACKOFF_RESET_AFTER_MS,
  restartDelayMs,
  shouldRestart,
  shouldRestartInit,
} from "./restart.ts";

describe("restart policy", () => {
  it("follows Always/OnFailure/Never", () => {
    expect(shouldRestart("Always", 0)).toBe(true);
    expect(shouldRestart("OnFailure", 0)).toBe(false);
    expect(shouldRestart("OnFailure", 1)).toBe(true);
    expect(shouldRestart("Never", 1)).toBe(false);
  });
  it("never reruns a successful init container", () => {
    expect(shouldRestartInit("Always", 0)).toBe(false);
    expect(shouldRestartInit("Always", 2)).toBe(true);
    expect(shouldRestartInit("Never", 2)).toBe(false);
  });
});

describe("backoff", () => {
  it("doubles from the base to the cap", () => {
    expect(restartDelayMs(1)).toBe(RESTART_BACKOFF_BASE_MS);
    expect(restartDelayMs(2)).toBe(2 * RESTART_BACKOFF_BASE_MS);
    expect(restartDelayMs(3)).toBe(4 * RESTART_BACKOFF_BASE_MS);
    expect(restartDelayMs(50)).toBe(RESTART_BACKOFF_CAP_MS);
  });
  it("resets after a long run", () => {
    expect(nextCrashCount(5, 100)).toBe(6);
    expect(nextCrashCount(5, RESTART_BACKOFF_RESET_AFTER_MS)).toBe(1);
  });
});
