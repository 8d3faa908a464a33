// The operator's exposition, every series present, through Prometheus's
// own conventions checker (promlint via tools/metricslint, built on first use
// by scripts/metricslint.ts; skipped, saying why, only where Go is missing).

import { beforeAll, describe, expect, it } from "vitest";
import { checkMetrics, ensureMetricslint, METRICSLINT_BUILD_TIMEOUT_MS } from "../../scripts/metricslint.ts";
import { OperatorMetrics } from "./metrics.ts";

let metricslint: string | undefined;
beforeAll(async () => {
  metricslint = await ensureMetricslint((line) => console.log(`operator metrics.test.ts: ${line}`));
}, METRICSLINT_BUILD_TIMEOUT_MS);

describe("operator metrics", () => {
  it("follow Prometheus's naming conventions (promlint finds nothing)", async (ctx) => {
    if (metricslint === undefined) return ctx.skip("metricslint cannot be built here (see the log above)");
    const m = new OperatorMetrics();
    m.observeReconcile("NaradTopic", 0.01, "success");
    m.observeReconcile("NaradCluster", 0.2, "error");
    const cluster = { namespace: "ns", cluster: "demo" };
    m.moveAborts.inc({ ...cluster, cause: "unreachable" });
    m.movesStuck.set(cluster, 1);
    const topic = { ...cluster, topic: "orders" };
    m.leaderElections.inc({ ...topic, cause: "leader_down" });
    m.underReplicatedPartitions.set(topic, 2);
    m.offlinePartitions.set(topic, 1);
    const text = await m.registry.metrics();
    for (const name of [
      "narad_operator_leader_elections_total",
      "narad_operator_under_replicated_partitions",
      "narad_operator_offline_partitions",
    ])
      expect(text).toContain(`# TYPE ${name} `);
    const r = checkMetrics(metricslint, text);
    expect(r.problems).toEqual([]);
    expect(r.code).toBe(0);
  });
});
