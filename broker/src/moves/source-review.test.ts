// Review of abc807a (MoveSource: durable freeze mark, lapse asks the
// authority, stale handoff refused). Each test states the behaviour the
// change promises and fails on abc807a. Same harness as source-freeze.test.ts
// (a fake log that only records whether it is frozen; the view and the
// authority are set separately).
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freezeWorld, removeTempDirs, until } from "../testing/move-source-world.ts";

afterEach(removeTempDirs);

const world = () => freezeWorld({ tmpPrefix: "narad-source-review-" });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("review abc807a: the move-freeze mark", () => {
  it("a renewal racing the first freeze (an RPC retried after its deadline) is not answered before the mark is on disk", async () => {
    const w = await world();
    const source = await w.start();
    const first = source.freeze("t", 0, "move-a", 1_000);
    const retry = source.freeze("t", 0, "move-a", 1_000);
    await retry;
    // The destination may now install counting on this freeze; a kill -9 here must find it on disk.
    const onDiskWhenAnswered = existsSync(join(w.dir, "move-freeze"));
    await first;
    expect(onDiskWhenAnswered).toBe(true);
    source.close();
  });

  it("a mark that could not be written (ENOSPC, EIO) leaves no timerless freeze, and a retry writes it before answering", async () => {
    const w = await world();
    const source = await w.start();
    // The write fails: here because the directory is missing, in production ENOSPC/EIO.
    rmSync(w.dir, { recursive: true, force: true });
    await expect(source.freeze("t", 0, "move-a", 1_000)).rejects.toThrow();
    // Well past any ttl: nothing may still hold the partition for move-a.
    await sleep(1_500);
    const heldAfterFailure = source.frozen("t", 0);
    // The disk is back: another move may freeze the partition (nothing holds it)...
    mkdirSync(w.dir, { recursive: true });
    const otherMove = await source.freeze("t", 0, "move-b", 1_000).then(
      () => "accepted",
      (e: { code?: string }) => e.code ?? "error",
    );
    source.unfreeze("t", 0, "move-b");
    await until(() => !existsSync(join(w.dir, "move-freeze")));
    // ...and the destination of move-a, retrying, gets an answer only with its mark on disk.
    const answered = await source.freeze("t", 0, "move-a", 1_000).then(
      () => true,
      () => false,
    );
    const markWhenAnswered = existsSync(join(w.dir, "move-freeze"));
    expect({
      heldAfterFailure,
      otherMove,
      markWhenAnswered: answered ? markWhenAnswered : "not answered",
    }).toEqual({
      heldAfterFailure: false,
      otherMove: "accepted",
      markWhenAnswered: true,
    });
    source.close();
  });

  it("a restart after a lapse that found the owner swapped (view lagging) keeps the partition frozen", async () => {
    const w = await world();
    const first = await w.start();
    await first.freeze("t", 0, "move-a", 1_000);
    // The swap is made (authority: n1) but this node's view still names n0 (seed 25485).
    w.setAuthority({ kind: "owner", node: "n1" });
    await until(() => existsSync(join(w.dir, "moved-away")), 4_000);
    expect(w.state.frozen).toBe(true);
    // kill -9 and restart while the view still lags.
    first.close();
    w.state.frozen = false;
    const second = await w.start();
    // The move-freeze mark is still on disk, and the authority names n1: commits must not resume.
    expect(existsSync(join(w.dir, "move-freeze"))).toBe(true);
    await sleep(1_500);
    expect(w.state.frozen).toBe(true);
    second.close();
  });

  it("a move-freeze mark left beside a dropped moved-away mark does not freeze the live partition on every later restart", async () => {
    const w = await world();
    const first = await w.start();
    await first.freeze("t", 0, "move-a", 1_000);
    // The lapse saw another owner (moved-away, not handed off); then the swap was undone.
    w.setAuthority({ kind: "owner", node: "n1" });
    await until(() => existsSync(join(w.dir, "moved-away")), 4_000);
    w.setAuthority({ kind: "owner", node: "n0" });
    first.close();
    // Restart: this node owns the partition; once any restored hold is over it serves.
    w.state.frozen = false;
    const second = await w.start();
    await until(() => !w.state.frozen, 4_000);
    await sleep(100);
    second.close();
    // Another restart, no move anywhere: the live partition must not be frozen (for a whole ttl) again.
    const third = await w.start();
    const frozenOnThirdStart = w.state.frozen;
    third.close();
    expect(frozenOnThirdStart).toBe(false);
  });

  it("a torn move-freeze mark does not refuse the renewals and handoff of the move that wrote it", async () => {
    const w = await world();
    writeFileSync(join(w.dir, "move-freeze"), '{"token":"move-a","topi');
    const source = await w.start();
    expect(w.state.frozen).toBe(true);
    await expect(source.freeze("t", 0, "move-a", 1_000)).resolves.toBeDefined();
    source.close();
  });
});

describe("review abc807a: the moved-away mark", () => {
  it("a handed-off copy restored after a restart also refuses queue leases and acks (as a restored freeze does)", async () => {
    const w = await world();
    writeFileSync(join(w.dir, "moved-away"), "handoff");
    // The view still names this node (it lags the install): consumers are served here.
    const source = await w.start();
    expect(w.state.frozen).toBe(true);
    expect(w.queueFrozen.has("t/0")).toBe(true);
    source.close();
  });
});
