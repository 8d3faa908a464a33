import { defineConfig } from "vitest/config";

// Projects: fast unit tests beside the code, integration tests that start
// real broker processes, e2e suites against a real Kubernetes API (the local
// platform, or kind through e2e/harness), and `kind`: suites that need Docker
// and real containers (e2e/kind/*.kind.test.ts, `npm run e2e:kind`). `vitest
// run` (npm test) runs all but `kind`.
// The kind project exists only when asked for (`--project kind`), so a plain
// `vitest run` never starts its globalSetup (which installs/starts dockerd).
const kindSelected = process.argv.some(
  (a, i) => a === "--project=kind" || (a === "--project" && process.argv[i + 1] === "kind"),
);

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
      ...(kindSelected
        ? [
            {
              test: {
                name: "kind",
                include: ["e2e/kind/**/*.kind.test.ts"],
                globalSetup: ["e2e/kind/global-setup.ts"],
                testTimeout: 900_000,
                hookTimeout: 3_600_000,
                fileParallelism: false,
              },
            },
          ]
        : []),
    ],
  },
});
