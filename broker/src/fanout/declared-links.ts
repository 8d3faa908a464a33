// Links declared outside the broker's API (kubernetes: a NaradTopic's
// spec.parent written with kubectl or by GitOps). The broker admits each
// under the same rules as an attach (rules.ts), with a fresh attach epoch;
// refuses one that breaks them (the reason recorded on the child, the link
// ignored); and ends an admission that no longer holds (the declaration
// changed, or the parent incarnation is gone). One node decides, so two
// declarations are never admitted against the same state by two nodes.

import type { Logger } from "pino";
import type { DeclaredLink, Member, Metastore, TopicConfig } from "../meta/types.ts";
import { attachChild, linkChanges } from "./links.ts";
import { attachProblem } from "./rules.ts";

export type DeclaredLinkAction =
  /** `resume`: a link admitted on the child's side only, completed with its own epoch. */
  | {
      kind: "attach";
      child: string;
      parent: string;
      delayMs: number;
      resume?: { epoch: string; attachedAtMs: number };
    }
  /** The parent incarnation is gone: the child becomes standalone, as after a parent delete through the API. */
  | { kind: "unlink"; child: string }
  | { kind: "settle"; child: string; problem: string | undefined; dropAdmission: boolean };

/**
 * What to do about each declaration, in order. Pure. Each admission counts
 * for the decisions after it (so a chain or a 109th child declared at once
 * is refused as an attach one after the other would be).
 */
export function declaredLinkActions(
  topics: readonly TopicConfig[],
  declared: readonly DeclaredLink[],
): DeclaredLinkAction[] {
  const state = topics.map((t) => ({ ...t }));
  const out: DeclaredLinkAction[] = [];
  for (const d of declared) {
    if (d.inEffect) {
      if (d.reported !== undefined)
        out.push({ kind: "settle", child: d.child, problem: undefined, dropAdmission: false });
      continue;
    }
    if (d.ended === "parent-gone") {
      out.push({ kind: "unlink", child: d.child });
      continue;
    }
    const dropAdmission = d.ended !== "none";
    if (d.parent === undefined) {
      if (dropAdmission || d.reported !== undefined)
        out.push({ kind: "settle", child: d.child, problem: undefined, dropAdmission });
      continue;
    }
    const problem = attachProblem(state, d.parent, d.child, d.delayMs);
    if (problem === undefined) {
      out.push({
        kind: "attach",
        child: d.child,
        parent: d.parent,
        delayMs: d.delayMs,
        ...(d.pending !== undefined ? { resume: d.pending } : {}),
      });
      const c = state.find((t) => t.name === d.child);
      if (c !== undefined) {
        c.parent = d.parent;
        c.fanout_delay_ms = d.delayMs > 0 ? d.delayMs : undefined;
      }
      continue;
    }
    if (problem.message !== d.reported || dropAdmission)
      out.push({ kind: "settle", child: d.child, problem: problem.message, dropAdmission });
  }
  return out;
}

/** The node that decides: the first Active member by id (every node computes the same one). */
export function decidingMember(members: readonly Member[]): string | undefined {
  return members
    .filter((m) => m.state === "Active")
    .map((m) => m.id)
    .sort()[0];
}

export interface DeclaredLinksOptions {
  nodeId: string;
  metastore: Metastore;
  logger: Logger;
  nowMs: () => number;
  /** Pause after a failed write before deciding again. */
  retryMs?: number;
}

/** Runs declaredLinkActions on the deciding node after each metastore change (FanoutEngine calls poke). */
export class DeclaredLinks {
  readonly #o: Required<DeclaredLinksOptions>;
  #running = false;
  #again = false;
  #notBeforeMs = 0;

  constructor(opts: DeclaredLinksOptions) {
    this.#o = { retryMs: 5_000, ...opts };
  }

  poke(): void {
    const ms = this.#o.metastore;
    if (ms.declaredLinks === undefined) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (this.#o.nowMs() < this.#notBeforeMs) return;
    if (decidingMember(ms.members()) !== this.#o.nodeId || ms.caughtUp?.() === false) return;
    this.#running = true;
    void linkChanges
      .run("links", () => this.#pass())
      .catch((err: unknown) => {
        this.#notBeforeMs = this.#o.nowMs() + this.#o.retryMs;
        this.#o.logger.warn({ err }, "declared fan-out link: write failed; deciding again later");
      })
      .finally(() => {
        this.#running = false;
        if (this.#again) {
          this.#again = false;
          this.poke();
        }
      });
  }

  async #pass(): Promise<void> {
    const ms = this.#o.metastore;
    const actions = declaredLinkActions(ms.listTopics(), ms.declaredLinks?.() ?? []);
    // In order, stopping at the first failure: later decisions counted on earlier admissions.
    for (const a of actions) {
      if (a.kind === "attach") {
        if (a.resume !== undefined && ms.completeLink !== undefined) {
          await ms.completeLink(a.child, a.resume.epoch);
          this.#o.logger.info(
            { child: a.child, parent: a.parent, epoch: a.resume.epoch },
            "pending fan-out link completed",
          );
          continue;
        }
        const t = await attachChild(ms, a.parent, a.child, a.delayMs, this.#o.nowMs());
        this.#o.logger.info(
          { child: a.child, parent: a.parent, delayMs: a.delayMs, epoch: t.attach_epoch },
          "declared fan-out link admitted",
        );
      } else if (a.kind === "unlink") {
        await ms.updateTopic(a.child, {
          parent: undefined,
          fanout_delay_ms: undefined,
          attach_epoch: undefined,
          attached_at_ms: undefined,
        });
        this.#o.logger.info({ child: a.child }, "fan-out link ended: its parent incarnation is gone");
      } else {
        if (a.problem !== undefined)
          this.#o.logger.warn(
            { child: a.child, problem: a.problem },
            "declared fan-out link refused: ignored until its declaration or the other topics change",
          );
        await ms.settleDeclaredLink?.(a.child, a.problem, a.dropAdmission);
      }
    }
  }
}
