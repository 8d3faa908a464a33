// The README's five-minute tour, run as a reader runs it: every curl line of
// its first shell block after "A five-minute tour", in order, against a real
// broker process (the port swapped for a free one, the placeholder receipt
// handle for the one the consume before it returned). A tour line that stops
// working, or answers something other than what its comment promises, fails
// here instead of in a newcomer's terminal.

import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNarad, startNarad } from "./harness/process.ts";

const hasCurl = spawnSync("curl", ["--version"]).status === 0;
if (!hasCurl) console.warn("readme-tour.test.ts: no curl on PATH; skipping the tour");

/** The curl lines of the tour's first shell block. */
function tourCommands(readme: string): string[] {
  const from = readme.indexOf("## A five-minute tour");
  if (from < 0) throw new Error('README has no "## A five-minute tour" section');
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(from));
  if (block === null) throw new Error("the tour has no sh block");
  return (block[1] ?? "")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.startsWith("curl "));
}

/** The reader's line as typed, plus what a test needs: no progress meter, the status on the last line. */
function run(command: string): { status: number; body: string } {
  const out = execFileSync("bash", ["-c", command.replace(/^curl /, "curl -sS -w '\\n%{http_code}' ")], {
    encoding: "utf8",
    timeout: 30_000,
  });
  const cut = out.lastIndexOf("\n");
  return { status: Number(out.slice(cut + 1)), body: out.slice(0, cut) };
}

let narad: RunningNarad;

beforeAll(async () => {
  narad = await startNarad();
});

afterAll(async () => {
  await narad?.stop();
});

describe("the README tour", () => {
  it.skipIf(!hasCurl)("runs line by line against a real broker", () => {
    const readme = readFileSync(join(import.meta.dirname, "..", "..", "README.md"), "utf8");
    const commands = tourCommands(readme);
    expect(commands.length).toBeGreaterThanOrEqual(5);
    const port = new URL(narad.url).port;
    let receiptHandle: string | undefined;
    const answers: Array<{ command: string; status: number; body: string }> = [];
    for (const line of commands) {
      let command = line.replaceAll("localhost:7942", `127.0.0.1:${port}`);
      if (command.includes("<receipt_handle>")) {
        expect(receiptHandle, "the tour acks before it consumed a message").toBeDefined();
        command = command.replace("<receipt_handle>", encodeURIComponent(receiptHandle!));
      }
      // A produce is visible shortly after its 202 (the dispatcher commits it
      // to the partition's owner): a read right after it may see nothing yet,
      // so a read line is repeated for up to 3 s (Narad's own visibility bound).
      const readsRecord = /\/records\?|\/consume\?partition=/.test(line);
      const deadline = Date.now() + 3_000;
      let status: number;
      let body: string;
      for (;;) {
        ({ status, body } = run(command));
        if (!readsRecord || body.includes("book") || Date.now() > deadline) break;
      }
      answers.push({ command: line, status, body });
      if (line.includes("/consume?wait="))
        receiptHandle = (JSON.parse(body) as { receipt_handle: string }).receipt_handle;
    }
    const summary = answers.map((a) => `${a.status} ${a.command}`).join("\n");
    for (const a of answers) expect(a.status, summary).toBeLessThan(300);
    // What the comments promise: 201 for the topic, 202 for the produce, the
    // record read back from partition 1 (where key user-1 lands), 204 for the ack.
    expect(answers[0]?.status, summary).toBe(201);
    expect(answers[1]?.status, summary).toBe(202);
    const records = answers.find((a) => a.command.includes("/records?"));
    expect(records?.body ?? "", summary).toContain("book");
    expect(answers.at(-1)?.status, summary).toBe(204);
  });

  it("finds the tour's commands", () => {
    const readme = readFileSync(join(import.meta.dirname, "..", "..", "README.md"), "utf8");
    expect(tourCommands(readme).some((c) => c.includes("/produce?key=user-1"))).toBe(true);
  });
});
