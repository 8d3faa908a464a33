import { describe, expect, it } from "vitest";
import { buildHttp } from "./http.ts";
import { OperatorMetrics } from "./metrics.ts";

describe("operator http", () => {
  it("serves metrics, liveness and readiness", async () => {
    const m = new OperatorMetrics();
    let synced = false;
    const app = buildHttp(m, {
      alive: () => true,
      ready: () => ({ ready: synced, detail: { pods: synced } }),
    });
    m.observeReconcile("NaradCluster", 0.01, "success");
    m.observeReconcile("NaradCluster", 0.02, "error");
    m.leader.set(1);
    const metrics = await app.inject({ url: "/metrics" });
    expect(metrics.body).toContain('narad_operator_reconcile_total{kind="NaradCluster",result="success"} 1');
    expect(metrics.body).toContain('narad_operator_reconcile_errors_total{kind="NaradCluster"} 1');
    expect(metrics.body).toContain("narad_operator_reconcile_duration_seconds_bucket");
    expect(metrics.body).toContain("narad_operator_queue_depth 0");
    expect(metrics.body).toContain("narad_operator_leader 1");
    expect((await app.inject({ url: "/healthz" })).statusCode).toBe(200);
    expect((await app.inject({ url: "/readyz" })).statusCode).toBe(503);
    synced = true;
    const ready = await app.inject({ url: "/readyz" });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ ready: true, informers: { pods: true } });
    await app.close();
  });
});
