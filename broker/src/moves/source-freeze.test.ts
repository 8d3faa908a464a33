// The move source's freeze across a restart, a lapse and a stale handoff
// (found by sim/: seeds 10108, 10941, 25485, 29314, 35121 lost acknowledged
// records, 25289 and 34501 stalled a live partition).
//
// - A destination that cannot reach the source installs while the freeze is
//   known to hold. A source killed and restarted inside that window used to
//   come back unfrozen and take commits the installed copy never got: the
//   freeze is now on disk and restored for a whole ttl.
// - A freeze that lapses while the source's view lags the owner swap used to
//   reopen the given-away copy: the lapse now asks the authority.
// - A handoff of a stale move (the partition moved back and was installed
//   afresh here) used to freeze the live partition for good: it is refused.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freezeWorld, removeTempDirs, until } from "../testing/move-source-world.ts";

afterEach(removeTempDirs);

const world = (deleteDelayMs = 60_000) => freezeWorld({ tmpPrefix: "narad-source-freeze-", deleteDelayMs });

describe("move source freeze", () => {
  it("is on disk before the freeze is answered, and a restarted source holds it again under the same token", async () => {
    const w = await world();
    const first = await w.start();
    await first.freeze("t", 0, "move-a", 1_000);
    expect(JSON.parse(readFileSync(join(w.dir, "move-freeze"), "utf8"))).toMatchObject({ token: "move-a" });
    // kill -9: the process and its memory are gone, the disk is not.
    first.close();
    w.state.frozen = false;
    const second = await w.start();
    expect(w.state.frozen).toBe(true);
    expect(second.frozen("t", 0)).toBe(true);
    // The destination's renewals carry on; another move's freeze is refused.
    await second.freeze("t", 0, "move-a", 1_000);
    await expect(second.freeze("t", 0, "move-b", 1_000)).rejects.toMatchObject({ code: "CONFLICT" });
    // Not renewed: it lapses, the authority still names this node, commits resume and the mark goes.
    await until(() => !w.state.frozen, 4_000);
    expect(second.frozen("t", 0)).toBe(false);
    await until(() => !existsSync(join(w.dir, "move-freeze")));
    second.close();
  });

  it("a lapse while the view lags the swap keeps the copy frozen until the authority says otherwise", async () => {
    const w = await world(200);
    const source = await w.start();
    await source.freeze("t", 0, "move-a", 1_000);
    w.setAuthority({ kind: "owner", node: "n1" });
    await until(() => existsSync(join(w.dir, "moved-away")), 4_000);
    expect(w.state.frozen).toBe(true);
    expect(source.heldCopies()).toBe(1);
    // The view still names this node: neither the deletion pass (every 200 ms
    // here) nor a restart may take that for a move back (sim seed 7890).
    await new Promise((r) => setTimeout(r, 700));
    expect(w.state.frozen).toBe(true);
    source.close();
    w.state.frozen = false;
    const restarted = await w.start();
    expect(w.state.frozen).toBe(true);
    // The swap undone (the authority names this node again): the copy is served.
    w.setAuthority({ kind: "owner", node: "n0" });
    await until(() => !w.state.frozen, 4_000);
    restarted.close();
  });

  it("a lapse whose owner cannot be confirmed stays frozen until the authority answers", async () => {
    const w = await world();
    const source = await w.start();
    await source.freeze("t", 0, "move-a", 1_000);
    w.setAuthority(new Error("API server unreachable"));
    await new Promise((r) => setTimeout(r, 1_500));
    expect(w.state.frozen).toBe(true);
    w.setAuthority({ kind: "owner", node: "n0" });
    await until(() => !w.state.frozen, 2_000);
    source.close();
  });

  it("a handoff with no freeze held (a stale move's) is refused and freezes nothing", async () => {
    const w = await world();
    const source = await w.start();
    await expect(source.freeze("t", 0, "old-move", 1_000, true)).rejects.toMatchObject({ code: "CONFLICT" });
    expect(w.state.frozen).toBe(false);
    expect(source.frozen("t", 0)).toBe(false);
    source.close();
  });

  it("a handoff is answered only once its moved-away mark is on disk", async () => {
    const w = await world();
    const source = await w.start();
    await source.freeze("t", 0, "move-a", 1_000);
    await source.freeze("t", 0, "move-a", 1_000, true);
    expect(readFileSync(join(w.dir, "moved-away"), "utf8")).toBe("handoff");
    source.close();
  });
});
