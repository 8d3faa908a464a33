// Hostile input on the fan-out routes against a real broker process: wrong
// types, huge values, odd names, self-parent, cycles, a child of a child,
// the 109th child. Each is a 4xx with a JSON error body, and afterwards the
// links and the records are what they were.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTopic, readAll, waitFor } from "./harness/client.ts";
import { type RunningNarad, startNarad } from "./harness/process.ts";

let b: RunningNarad;
beforeAll(async () => {
  b = await startNarad();
});
afterAll(async () => {
  await b?.stop();
});

async function send(method: string, path: string, body?: string) {
  const res = await fetch(`${b.url}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.text();
  return { status: res.status, text };
}

/** A refusal: 4xx and a JSON body with a non-empty error. */
function expectRefused(what: string, r: { status: number; text: string }, status?: number): void {
  expect({ what, inRange: r.status >= 400 && r.status < 500 }).toEqual({ what, inRange: true });
  if (status !== undefined) expect({ what, status: r.status }).toEqual({ what, status });
  const body = JSON.parse(r.text) as { error?: unknown };
  expect(typeof body.error === "string" && body.error.length > 0).toBe(true);
}

describe("fan-out routes under hostile input", () => {
  it("answers every bad attach and create-as-child with a JSON 4xx and changes nothing", async () => {
    await createTopic(b.url, "hp", 2);
    await createTopic(b.url, "hc", 2);
    await createTopic(b.url, "hx", 2);
    expect((await send("POST", "/v1/topics/hp/children", JSON.stringify({ child: "hc" }))).status).toBe(200);
    for (let i = 0; i < 10; i++)
      expect((await send("POST", `/v1/topics/hp/produce?key=k${i}`, JSON.stringify({ i }))).status).toBe(202);
    await waitFor("copied", 20_000, async () =>
      (await readAll(b.url, "hc")).length >= 10 ? true : undefined,
    );

    const attach: Array<[string, string, number?]> = [
      ["array body", "[]", 400],
      ["string body", '"hx"', 400],
      ["not JSON", "{child:", 400],
      ["child a number", JSON.stringify({ child: 5 }), 400],
      ["child null", JSON.stringify({ child: null }), 400],
      ["child empty", JSON.stringify({ child: "" }), 400],
      ["unknown field", JSON.stringify({ child: "hx", parent: "hc" }), 400],
      ["delay a string", JSON.stringify({ child: "hx", delay_ms: "100" }), 400],
      ["delay fractional", JSON.stringify({ child: "hx", delay_ms: 1.5 }), 400],
      ["delay huge", '{"child":"hx","delay_ms":1e300}', 400],
      ["delay unsafe int", JSON.stringify({ child: "hx", delay_ms: 2 ** 60 }), 400],
      ["delay negative", JSON.stringify({ child: "hx", delay_ms: -1 }), 400],
      ["delay over a year", JSON.stringify({ child: "hx", delay_ms: 365 * 86_400_000 + 1 }), 400],
      ["delay an object", JSON.stringify({ child: "hx", delay_ms: { n: 1 } }), 400],
      ["child path-like", JSON.stringify({ child: "../hx" }), 404],
      ["child with spaces", JSON.stringify({ child: "h x" }), 404],
      ["child too long", JSON.stringify({ child: "h".repeat(10_000) }), 404],
      ["child unicode", JSON.stringify({ child: "hé\u0000" }), 404],
      ["self-parent", JSON.stringify({ child: "hp" }), 400],
      ["cycle: parent under its child", JSON.stringify({ child: "hp" }), 409],
      ["attached twice", JSON.stringify({ child: "hc" }), 409],
    ];
    for (const [what, body, status] of attach) {
      // The cycle attempt goes through the child's route.
      const path = what.startsWith("cycle") ? "/v1/topics/hc/children" : "/v1/topics/hp/children";
      expectRefused(what, await send("POST", path, body), status);
    }
    // A child of a child.
    expectRefused(
      "grandchild",
      await send("POST", "/v1/topics/hc/children", JSON.stringify({ child: "hx" })),
      409,
    );
    // Odd parent names in the path.
    expectRefused(
      "parent unknown",
      await send("POST", "/v1/topics/nope/children", JSON.stringify({ child: "hx" })),
      404,
    );
    expectRefused(
      "parent encoded slash",
      await send("POST", "/v1/topics/h%2Fp/children", JSON.stringify({ child: "hx" })),
    );
    expectRefused("detach unknown", await send("DELETE", "/v1/topics/hp/children/h%20x"), 404);
    expectRefused("detach not a child", await send("DELETE", "/v1/topics/hp/children/hx"), 404);
    expectRefused("detach reversed", await send("DELETE", "/v1/topics/hc/children/hp"), 404);

    const create: Array<[string, unknown, number?]> = [
      ["parent a number", { name: "hn1", parent: 7 }, 400],
      ["parent an object", { name: "hn2", parent: { name: "hp" } }, 400],
      ["parent self", { name: "hn3", parent: "hn3" }, 400],
      ["parent unknown", { name: "hn4", parent: "nope" }, 404],
      ["parent is a child", { name: "hn5", parent: "hc" }, 409],
      ["delay without parent", { name: "hn6", fanout_delay_ms: 5 }, 400],
      ["delay a string", { name: "hn7", parent: "hp", fanout_delay_ms: "5" }, 400],
      ["delay negative", { name: "hn8", parent: "hp", fanout_delay_ms: -5 }, 400],
      ["delay huge", { name: "hn9", parent: "hp", fanout_delay_ms: Number.MAX_VALUE }, 400],
      ["name taken", { name: "hx", parent: "hp" }, 409],
      ["bad name", { name: "h/../x", parent: "hp" }, 400],
      ["partitions a string", { name: "hn10", parent: "hp", partitions: "2" }, 400],
    ];
    for (const [what, body, status] of create)
      expectRefused(`create: ${what}`, await send("POST", "/v1/topics", JSON.stringify(body)), status);

    // Nothing changed: one link, no half-created topics, the records intact.
    const topics = (await (await fetch(`${b.url}/v1/topics?limit=1000`)).json()) as {
      topics: Array<{ name: string; role: string; parent?: string }>;
    };
    expect(topics.topics.map((t) => [t.name, t.role, t.parent ?? ""])).toEqual([
      ["hc", "child", "hp"],
      ["hp", "parent", ""],
      ["hx", "standalone", ""],
    ]);
    expect((await readAll(b.url, "hp")).length).toBe(10);
    expect((await readAll(b.url, "hc")).length).toBe(10);
  });

  it("refuses the 109th child with 409, on attach and on create-as-child", async () => {
    await createTopic(b.url, "mp", 1);
    for (let i = 0; i < 108; i++) {
      const r = await send("POST", "/v1/topics", JSON.stringify({ name: `mc${i}`, parent: "mp" }));
      expect({ i, status: r.status }).toEqual({ i, status: 201 });
    }
    await createTopic(b.url, "mc-extra", 1);
    expectRefused(
      "109th attach",
      await send("POST", "/v1/topics/mp/children", JSON.stringify({ child: "mc-extra" })),
      409,
    );
    expectRefused(
      "109th create",
      await send("POST", "/v1/topics", JSON.stringify({ name: "mc108", parent: "mp" })),
      409,
    );
    expect((await send("GET", "/v1/topics/mc108")).status).toBe(404);
    const list = JSON.parse((await send("GET", "/v1/topics/mp/children")).text) as { children: unknown[] };
    expect(list.children).toHaveLength(108);
  });
});
