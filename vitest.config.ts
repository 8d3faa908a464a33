import { defineConfig } from "vitest/config";

// Three projects: fast unit tests beside the code, integration tests that
// start real broker processes, and e2e suites against a real Kubernetes API
// (the local platform, or kind). `vitest run` runs all of them.
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
            "scripts/**/*.test.ts",
            "e2e/**/*.unit.test.ts",
            "sim/**/*.test.ts",
          ],
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: "integration",
          include: ["broker/test/**/*.test.ts"],
          testTimeout: 180_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["e2e/**/*.e2e.test.ts"],
          testTimeout: 600_000,
          hookTimeout: 3_600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
