// A real broker's /metrics as Prometheus sees it: the standard process and
// Node.js names without a prefix, narad_build_info, the scrape-time gauges,
// and Prometheus's own conventions check over the whole exposition (promlint,
// as `promtool check metrics` runs it, through tools/metricslint, built on
// first use by scripts/metricslint.ts).

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkMetrics, ensureMetricslint, METRICSLINT_BUILD_TIMEOUT_MS } from "../../scripts/metricslint.ts";
import { NARAD_VERSION } from "../src/metrics.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

let narad: RunningNarad;
let text: string;
let metricslint: string | undefined;
beforeAll(async () => {
  metricslint = await ensureMetricslint((line) => console.log(`metrics.test.ts: ${line}`));
}, METRICSLINT_BUILD_TIMEOUT_MS);

beforeAll(async () => {
  narad = await startNarad();
  // Some traffic, so the labelled series exist.
  await fetch(`${narad.url}/v1/topics`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "m", partitions: 1 }),
  });
  await fetch(`${narad.url}/v1/topics/m/produce`, { method: "POST", body: "x" });
  text = await (await fetch(`${narad.url}/metrics`)).text();
});

afterAll(async () => {
  await narad?.stop();
});

const value = (name: string): number | undefined => {
  const line = text.split("\n").find((l) => l.startsWith(name + " ") || l.startsWith(name + "{"));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
};

describe("/metrics of a running broker", () => {
  it("has the standard process_* and nodejs_* names, and no double prefix", () => {
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    expect(text).toMatch(/^process_resident_memory_bytes /m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    expect(text).not.toMatch(/^narad_process_/m);
  });

  it("narad_build_info names the version", () => {
    expect(text).toContain(
      `narad_build_info{version="${NARAD_VERSION}",node_version="${process.version}"} 1`,
    );
  });

  it("readiness, members and disk are read at scrape", () => {
    expect(value("narad_ready")).toBe(1);
    expect(text).toMatch(/^narad_cluster_members\{state="Active"\} 1$/m);
    expect(text).toMatch(/^narad_cluster_members\{state="Down"\} 0$/m);
    const available = value("narad_disk_available_bytes")!;
    const capacity = value("narad_disk_capacity_bytes")!;
    expect(capacity).toBeGreaterThan(0);
    expect(available).toBeGreaterThan(0);
    expect(available).toBeLessThanOrEqual(capacity);
  });

  it("promtool's check metrics finds no problem in Narad's own metrics", (ctx) => {
    if (metricslint === undefined) return ctx.skip("metricslint cannot be built here (see the log above)");
    const r = checkMetrics(metricslint, text);
    // prom-client's standard Node.js gauges
    // nodejs_active_{handles,requests,resources}_total carry a _total suffix
    // promlint objects to; they keep the names every Node.js exporter uses.
    // Anything else is a problem.
    const problems = r.problems.filter(
      (l) => !/^nodejs_active_(handles|requests|resources)_total non-counter metrics/.test(l),
    );
    expect(problems).toEqual([]);
    // Exit 3 (lint problems) only for those exceptions; never 1 (unparsable).
    expect(r.code).toBe(r.problems.length === 0 ? 0 : 3);
    expect(text).toMatch(/^narad_/m);
  });
});

describe("consumer lag after a restart", () => {
  it("narad_consumer_lag_messages has the stored group's lag from the first scrape", async () => {
    const first = await startNarad({ keepData: true });
    const url = first.url;
    const post = (path: string, body: string, type = "application/json") =>
      fetch(`${url}${path}`, { method: "POST", headers: { "content-type": type }, body });
    expect((await post("/v1/topics", JSON.stringify({ name: "lag", partitions: 1 }))).status).toBe(201);
    for (let i = 0; i < 6; i++) expect((await post("/v1/topics/lag/produce", `m${i}`)).status).toBe(202);
    // Consume and ack two: the group's committed frontier is 2, its lag 4.
    let acked = 0;
    const deadline = Date.now() + 10_000;
    while (acked < 2 && Date.now() < deadline) {
      const r = await fetch(`${url}/v1/topics/lag/consume?group=g&wait=200ms`);
      if (r.status !== 200) continue;
      const handle = ((await r.json()) as { receipt_handle: string }).receipt_handle;
      const a = await fetch(`${url}/v1/topics/lag/ack?receipt_handle=${encodeURIComponent(handle)}`, {
        method: "POST",
      });
      expect(a.status).toBe(204);
      acked++;
    }
    expect(acked).toBe(2);
    await first.stop();

    const second = await startNarad({ dataDir: first.dataDir });
    try {
      const scraped = await (await fetch(`${second.url}/metrics`)).text();
      const line = scraped
        .split("\n")
        .find((l) => l.startsWith("narad_consumer_lag_messages{") && l.includes('group="g"'));
      expect(
        line,
        scraped
          .split("\n")
          .filter((l) => l.includes("consumer_lag"))
          .join("\n"),
      ).toBeDefined();
      expect(Number(line!.slice(line!.lastIndexOf(" ") + 1))).toBe(4);
    } finally {
      await second.stop();
    }
  });
});
