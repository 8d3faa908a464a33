// Pure: folds `go test -json` events into per-test outcomes. Only top-level
// tests count (subtests are part of their parent's outcome); a failure's
// reason is the first line the test printed that looks like a t.Fatalf or
// t.Errorf message.

export interface TestEvent {
  Action: string;
  Test?: string;
  Output?: string;
  Elapsed?: number;
}

export interface Summary {
  total: number;
  passed: number;
  failed: number;
  skipped: string[];
  failures: { test: string; reason: string }[];
}

// "    file_test.go:42: message" is how testing prints a failure.
const failureLine = /^\s+\S+_test\.go:\d+: (.*)$/;

export function summarise(events: readonly TestEvent[], skips: Readonly<Record<string, string>>): Summary {
  const outcome = new Map<string, string>();
  const reasons = new Map<string, string>();
  for (const ev of events) {
    if (ev.Test === undefined) continue;
    const top = ev.Test.split("/")[0] ?? ev.Test;
    if (ev.Action === "output" && ev.Output !== undefined && !reasons.has(top)) {
      const m = failureLine.exec(ev.Output.trimEnd());
      if (m?.[1] !== undefined) reasons.set(top, m[1].slice(0, 300));
    }
    if (ev.Test === top && (ev.Action === "pass" || ev.Action === "fail" || ev.Action === "skip")) {
      outcome.set(top, ev.Action);
    }
  }
  const skipped = [...outcome].filter(([, a]) => a === "skip").map(([n]) => n);
  // -skip leaves no event at all; count those too so the total is the suite's size.
  for (const name of Object.keys(skips)) if (!outcome.has(name)) skipped.push(name);
  const failures = [...outcome]
    .filter(([, a]) => a === "fail")
    .map(([test]) => ({ test, reason: reasons.get(test) ?? "(no failure message)" }))
    .sort((a, b) => a.test.localeCompare(b.test));
  const passed = [...outcome.values()].filter((a) => a === "pass").length;
  return {
    total: passed + failures.length + skipped.length,
    passed,
    failed: failures.length,
    skipped: skipped.sort(),
    failures,
  };
}
