import { describe, expect, it } from "vitest";
import { benchSummary, etaText, progressBar, progressLine, summaryText } from "./bench-report.ts";

describe("bench report", () => {
  it("ETA extrapolates the rate so far; unknown before the first acknowledgement", () => {
    expect(etaText(Number.NaN)).toBe("?");
    expect(etaText(41.2)).toBe("42s");
    expect(etaText(185)).toBe("3m05s");
    expect(etaText(3720)).toBe("1h02m");
    // 250 of 1,000 in 5 s: 50 msg/s, 750 left: 15 s.
    expect(progressLine({ done: 250, total: 1000, elapsedSeconds: 5 })).toBe(
      "bench: 250/1,000 acknowledged, 50 msg/s, ETA 15s\n",
    );
    expect(progressBar({ done: 500, total: 1000, elapsedSeconds: 10 }, 10)).toBe(
      "[#####.....]  50%  500/1,000  50 msg/s  ETA 10s ",
    );
    expect(progressBar({ done: 0, total: 1000, elapsedSeconds: 1 }, 4)).toContain("ETA ?");
  });

  it("summarises only what ran, and says when it was interrupted", () => {
    const run = {
      topic: "bench-x",
      messages: 1000,
      sent: 400,
      acknowledged: 400,
      failed: 0,
      sizeBytes: 1024,
      concurrency: 2,
      seconds: 2,
      latenciesMs: Float64Array.from([5, 1, 3, 2, 4]),
      interrupted: true,
    };
    const s = benchSummary(run);
    expect(s).toMatchObject({ msgPerSec: 200, p50Ms: 3, p99Ms: 5, maxMs: 5, interrupted: true });
    expect(summaryText(s)).toContain("400 acknowledged (interrupted after 400 of 1,000)");
    expect(summaryText({ ...s, interrupted: false })).not.toContain("interrupted");
    expect(benchSummary({ ...run, latenciesMs: new Float64Array(0) }).p99Ms).toBe(0);
  });
});
