// Hostile clients against the surface added with the idempotent producer
// (POST /v1/producers, acks=0|wal|all), each against a real broker process.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNarad, startNarad } from "./harness/process.ts";

async function initProducer(
  url: string,
  name: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}/v1/producers`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("producer registry against hostile names (auth off)", () => {
  let broker: RunningNarad;

  beforeAll(async () => {
    broker = await startNarad({ logLevel: "error", args: ["--max-named-producers", "8"] });
  });

  afterAll(async () => {
    await broker?.stop();
  });

  it("gives names that are Object.prototype members a real id and epoch", async () => {
    const seen = new Set<unknown>();
    for (const name of ["constructor", "__proto__", "toString"]) {
      const r = await initProducer(broker.url, name);
      expect(r.status).toBe(201);
      expect(r.body.producer_id).toMatch(/^p-\d+$/);
      expect(r.body.epoch).toBe(0);
      seen.add(r.body.producer_id);
    }
    expect(seen.size).toBe(3);
    const again = await initProducer(broker.url, "constructor");
    expect(again.body.epoch).toBe(1);
  });

  it("refuses a new name beyond --max-named-producers with a 409, and still re-inits a known one", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await initProducer(broker.url, `flood-${i}`)).status);
    // 3 names from the test above + 5 here fill the 8.
    expect(statuses.slice(0, 5)).toEqual([201, 201, 201, 201, 201]);
    expect(statuses.slice(5)).toEqual([409, 409, 409, 409, 409]);
    const refused = await initProducer(broker.url, "one-more");
    expect(refused.status).toBe(409);
    expect(String(refused.body.error)).toContain("--max-named-producers");
    const known = await initProducer(broker.url, "flood-0");
    expect(known.status).toBe(201);
    expect(known.body.epoch).toBe(1);
    // Unnamed ids cost no registry entry: still issued.
    const res = await fetch(`${broker.url}/v1/producers`, { method: "POST" });
    expect(res.status).toBe(201);
  });
});

describe("repeated query parameters (auth off)", () => {
  let broker: RunningNarad;

  beforeAll(async () => {
    broker = await startNarad({ logLevel: "error" });
    const res = await fetch(`${broker.url}/v1/topics`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "rep", partitions: 1 }),
    });
    expect(res.status).toBe(201);
  });

  afterAll(async () => {
    await broker?.stop();
  });

  it("reads the first value of a repeated parameter, as Narad (Go) does, never a 500", async () => {
    const produced = await fetch(`${broker.url}/v1/topics/rep/produce?key=first&key=second&acks=wal&acks=0`, {
      method: "POST",
      body: "m",
    });
    expect(produced.status).toBe(202);
    const consumed = await fetch(`${broker.url}/v1/topics/rep/consume?wait=2s&wait=1s&group=g&group=h`);
    expect(consumed.status).toBe(200);
    const msg = (await consumed.json()) as { key: string; receipt_handle: string };
    expect(msg.key).toBe("first");
    const acked = await fetch(
      `${broker.url}/v1/topics/rep/ack?receipt_handle=${encodeURIComponent(msg.receipt_handle)}&receipt_handle=x`,
      { method: "POST" },
    );
    expect(acked.status).toBe(204);
    const bad = await fetch(`${broker.url}/v1/topics/rep/records?partition=0&partition=zz&offset=0`);
    expect(bad.status).toBeLessThan(500);
  });
});
