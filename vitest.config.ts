import { defineConfig } from "vitest/config";

// Projects: fast unit tests beside the code, integration tests that start
// real broker processes, e2e suites against a real Kubernetes API (the local
// platform, or kind through e2e/harness), and `kind`: suites that need Docker
// and real containers (e2e/kind/*.kind.test.ts, `npm run e2e:kind`).
// `vitest run` (npm test) runs all four, in groups (sequence.groupOrder):
// unit first, then integration and e2e one file at a time, then kind one file
// at a time. Nothing of kind (dockerd, a kind cluster, Go builds) ever runs
// beside the timing-sensitive crash tests on a 2-core machine. The Docker
// engine is started by the kind suites' own beforeAll, so a run without kind
// files (`npm run test:unit`, a single file) never installs or starts it.

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: [
            "broker/src/**/*.test.ts",
            "operator/src/**/*.test.ts",
            "client/**/*.test.ts",
            "packages/**/*.test.ts",
            "scripts/**/*.test.ts",
            "e2e/**/*.unit.test.ts",
            "sim/**/*.test.ts",
            "compat/**/*.test.ts",
            "bench/**/*.test.ts",
          ],
          testTimeout: 20_000,
          // Every core (vitest's default leaves one for itself: a single
          // worker on a 2-core CI machine). The unit group runs alone, before
          // the timing-sensitive groups; 2 workers halved it there (262 s →
          // 138 s on a loaded 2-core machine).
          maxWorkers: "100%",
        },
      },
      {
        test: {
          name: "integration",
          include: ["broker/test/**/*.test.ts"],
          testTimeout: 180_000,
          hookTimeout: 120_000,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: "e2e",
          include: ["e2e/**/*.e2e.test.ts"],
          testTimeout: 600_000,
          hookTimeout: 3_600_000,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: "kind",
          include: ["e2e/kind/**/*.kind.test.ts"],
          globalSetup: ["e2e/kind/global-setup.ts"],
          testTimeout: 900_000,
          hookTimeout: 3_600_000,
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
