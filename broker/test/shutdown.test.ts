// SIGTERM on the real process: produce is refused with 503 + Retry-After
// while the WAL is dispatched into the partition logs, then exit 0 with
// nothing left pending; the data is all there after a restart.

import { readdirSync, rmSync, statSync } from "node:fs";
import { Agent, request } from "node:http";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createTopic, highWatermarks, readAll } from "./harness/client.ts";
import { startNarad } from "./harness/process.ts";

function walBytes(dataDir: string): number {
  const dir = join(dataDir, "ingress", "produce");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".wal"))
    .reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
}

describe("SIGTERM drain", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("drains the WAL into the logs and exits 0", async () => {
    // A long idle poll keeps records in the WAL until the drain forces them out.
    const broker = await startNarad({ keepData: true, args: ["--dispatch-idle-poll-ms", "60000"] });
    dirs.push(broker.dataDir);
    await createTopic(broker.url, "t", 2);
    const n = 200;
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        fetch(`${broker.url}/v1/topics/t/produce?key=k${i}`, { method: "POST", body: `m${i}` }).then((r) => {
          expect(r.status).toBe(202);
        }),
      ),
    );
    const exit = new Promise<number | null>((ok) => broker.child.once("exit", (code) => ok(code)));
    broker.child.kill("SIGTERM");
    const code = await exit;
    expect(code).toBe(0);

    const again = await startNarad({ dataDir: broker.dataDir, keepData: true });
    const status = (await (await fetch(`${again.url}/admin/v1/status`)).json()) as {
      wal: { pendingRecords: number };
    };
    expect(status.wal.pendingRecords).toBe(0);
    expect((await highWatermarks(again.url, "t")).reduce((a, b) => a + b, 0)).toBe(n);
    expect(new Set((await readAll(again.url, "t")).map((m) => m.payload)).size).toBe(n);
    // A fully dispatched WAL keeps only a small active segment.
    expect(walBytes(again.dataDir)).toBeLessThan(4 * 1024 * 1024);
    await again.stop();
  });

  it("answers 503 with Retry-After to produce during the drain", async () => {
    const broker = await startNarad({ keepData: true });
    dirs.push(broker.dataDir);
    await createTopic(broker.url, "t", 1);
    const drain = await fetch(`${broker.url}/admin/v1/drain`, { method: "POST" });
    expect(drain.status).toBe(200);
    const refused = await fetch(`${broker.url}/v1/topics/t/produce`, { method: "POST", body: "x" });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(((await refused.json()) as { error: string }).error).toMatch(/draining/);
    await broker.stop();
  });

  it("exits promptly when a request was still in flight as the HTTP server closed and its client went quiet", async () => {
    // That request's kept-alive connection, idle once answered, used to hold
    // the close (and the exit) for fastify's 72 s keep-alive timeout.
    const broker = await startNarad({ keepData: true });
    dirs.push(broker.dataDir);
    await createTopic(broker.url, "t", 1);
    const agent = new Agent({ keepAlive: true });
    const body = JSON.stringify({ id: "slow" });
    const slow = request(`${broker.url}/v1/topics/t/produce`, {
      method: "POST",
      agent,
      headers: { "content-length": String(body.length) },
    });
    const answered = new Promise<number | undefined>((ok, fail) => {
      slow.once("error", fail);
      slow.once("response", (res) => {
        res.resume();
        res.once("end", () => ok(res.statusCode));
      });
    });
    // Headers and half the body now: the request is in flight through the SIGTERM.
    slow.write(body.slice(0, 5));
    await new Promise((r) => setTimeout(r, 300));
    const exit = new Promise<number | null>((ok) => broker.child.once("exit", (code) => ok(code)));
    const sigterm = Date.now();
    broker.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 1_500));
    slow.end(body.slice(5));
    // 503 draining (the drain began before the body was complete); the client sends nothing more.
    expect(await answered).toBe(503);
    const code = await exit;
    const exitMs = Date.now() - sigterm;
    agent.destroy();
    expect(code).toBe(0);
    // Without reaping the idle connection: about 72 s.
    expect(exitMs).toBeLessThan(20_000);
  });
});
