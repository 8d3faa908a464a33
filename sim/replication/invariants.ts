// The invariants of replication (ADR 0007), checked against the truth of
// the replication world after every step:
// - at its acknowledgement a record is durable on ≥ min_insync_replicas
//   replicas and on every member the record's ISR vouches for;
// - every acknowledged record stays on every volume that held it then,
//   unless that volume was destroyed: nothing acknowledged is truncated;
// - every acknowledged record is on every ISR member the record vouches for
//   (names-only mode: every member named; volume mode: every member on the
//   volume its entry names), and on at least one surviving volume;
// - no two brokers acknowledge in the same epoch of a partition;
// - what any replica exposes (below its HWM) never exceeds the highest
//   HWM a leader computed, and agrees between replicas (one committed log);
// - a returning replica is never asked to truncate below its HWM.
// After the faults stop, the cluster must converge: a leader per
// partition, every replica in the ISR, every replica's log identical to the
// leader's, every acknowledged record on it.

import type { AckEvent, ReplicationWorld, Versioned } from "./world.ts";

export interface Violation {
  kind:
    | "ack-under-min-insync"
    | "ack-missing-on-isr"
    | "acked-truncated"
    | "acked-missing-on-isr"
    | "acked-lost"
    | "two-leaders-one-epoch"
    | "exposed-above-hwm"
    | "divergent-committed"
    | "truncation-below-hwm"
    | "not-converged"
    /** The model or the decision code threw (e.g. an epoch history out of order). */
    | "model-error";
  message: string;
}

export class ReplicationInvariants {
  readonly acks: AckEvent[] = [];
  readonly violations: Violation[] = [];
  readonly #ackerOfEpoch = new Map<string, string>();

  readonly w: ReplicationWorld;
  /** Judge only what a user sees: loss, truncation, divergence, convergence (not the ISR's promises). */
  readonly absoluteOnly: boolean;

  constructor(w: ReplicationWorld, absoluteOnly = false) {
    this.w = w;
    this.absoluteOnly = absoluteOnly || !w.s.volumeIdentity;
  }

  #fail(kind: Violation["kind"], message: string): void {
    if (this.violations.length < 20) this.violations.push({ kind, message });
  }

  /**
   * The members the ISR vouches for. None when judging absolute invariants
   * only, and always in names-only mode (the first design): by name a member
   * back on an empty volume is "in sync" by definition, so that mode is
   * judged on loss, truncation, divergence and convergence.
   */
  #vouched(v: Versioned): string[] {
    if (this.absoluteOnly) return [];
    return v.rec.isr.filter((m) => this.w.broker(m.member).volumeId === m.volumeId).map((m) => m.member);
  }

  #has(broker: string, p: number, offset: number, id: number): boolean {
    const r = this.w.broker(broker).replicas.get(p);
    return r !== undefined && offset < r.durable && r.log[offset]?.id === id;
  }

  onAck(e: AckEvent): void {
    this.acks.push(e);
    const k = `${e.partition}/${e.epoch}`;
    const prev = this.#ackerOfEpoch.get(k);
    if (prev !== undefined && prev !== e.leader)
      this.#fail(
        "two-leaders-one-epoch",
        `p${e.partition} epoch ${e.epoch}: acked by ${prev} and ${e.leader}`,
      );
    this.#ackerOfEpoch.set(k, e.leader);
    // Copies destroyed with a volume after the HWM passed the record (and
    // before the answer) count: the record was committed on them. Survival
    // after that is the acked-lost check.
    const lost = this.w.lostCopies.get(`${e.partition}/${e.offset}/${e.id}`) ?? 0;
    if (e.holders.length + lost < this.w.s.minInsync)
      this.#fail(
        "ack-under-min-insync",
        `r${e.id} (p${e.partition}@${e.offset}) acked by ${e.leader} with ${e.holders.length} durable copies (${lost} lost with a volume)`,
      );
    const v = this.w.store.get(e.partition) as Versioned;
    for (const m of this.#vouched(v))
      if (!this.#has(m, e.partition, e.offset, e.id))
        this.#fail(
          "ack-missing-on-isr",
          `r${e.id} (p${e.partition}@${e.offset}) acked, not on ISR member ${m}`,
        );
  }

  onTruncationRefused(broker: string, p: number, reason: string): void {
    this.#fail("truncation-below-hwm", `${broker} p${p}: ${reason}`);
  }

  #seenChanges = -1;
  #checks = 0;

  /**
   * After every step. The per-record checks re-run only when something
   * that can remove a record or change an ISR happened (world.changes), and
   * every 25 steps anyway; the exposure checks every step.
   */
  check(): void {
    const w = this.w;
    this.#checks++;
    if (w.changes !== this.#seenChanges || this.#checks % 25 === 0) {
      this.#seenChanges = w.changes;
      this.#checkAcked();
    }
    this.#checkExposed();
  }

  #checkAcked(): void {
    const w = this.w;
    for (const e of this.acks) {
      for (const h of e.holders) {
        const b = w.broker(h.broker);
        if (b.volumeId !== h.volumeId) continue;
        if (!this.#has(h.broker, e.partition, e.offset, e.id))
          this.#fail(
            "acked-truncated",
            `r${e.id} (p${e.partition}@${e.offset}) gone from ${h.broker} (volume ${h.volumeId} intact)`,
          );
      }
      // Copies made since (a new replica catching up) count as well.
      if (!w.brokers.some((b) => this.#has(b.id, e.partition, e.offset, e.id)))
        this.#fail("acked-lost", `r${e.id} (p${e.partition}@${e.offset}) is on no surviving volume`);
      const v = w.store.get(e.partition) as Versioned;
      for (const m of this.#vouched(v))
        if (!this.#has(m, e.partition, e.offset, e.id))
          this.#fail(
            "acked-missing-on-isr",
            `r${e.id} (p${e.partition}@${e.offset}) not on ${m}, in the recorded ISR ${JSON.stringify(v.rec.isr.map((x) => x.member))} (v${v.version})`,
          );
    }
  }

  #checkExposed(): void {
    const w = this.w;
    for (let p = 0; p < w.s.partitions; p++) {
      const max = w.maxHwm.get(p) ?? 0;
      const exposed: Array<{ id: string; hwm: number; log: readonly { id: number }[] }> = [];
      for (const b of w.brokers) {
        const r = b.replicas.get(p);
        if (r === undefined) continue;
        if (r.hwm > max)
          this.#fail("exposed-above-hwm", `${b.id} p${p} exposes ${r.hwm}, leaders' HWM ≤ ${max}`);
        exposed.push({ id: b.id, hwm: Math.min(r.hwm, r.log.length), log: r.log });
      }
      for (let i = 0; i < exposed.length; i++)
        for (let j = i + 1; j < exposed.length; j++) {
          const a = exposed[i]!;
          const b = exposed[j]!;
          const n = Math.min(a.hwm, b.hwm);
          for (let o = 0; o < n; o++)
            if (a.log[o]?.id !== b.log[o]?.id) {
              this.#fail(
                "divergent-committed",
                `p${p}@${o}: ${a.id} exposes r${a.log[o]?.id}, ${b.id} r${b.log[o]?.id}`,
              );
              break;
            }
        }
    }
  }

  /** After the quiet phase: one leader, a full ISR, identical logs holding every acknowledged record. */
  checkConverged(): void {
    const w = this.w;
    for (let p = 0; p < w.s.partitions; p++) {
      const v = w.store.get(p) as Versioned;
      const leader = v.rec.leader;
      if (leader === null) {
        this.#fail("not-converged", `p${p} offline (isr ${JSON.stringify(v.rec.isr)})`);
        continue;
      }
      const lr = w.broker(leader).replicas.get(p);
      if (lr === undefined) {
        this.#fail("not-converged", `p${p}: leader ${leader} hosts no replica`);
        continue;
      }
      const inIsr = new Set(
        w.s.volumeIdentity
          ? v.rec.isr.filter((m) => w.broker(m.member).volumeId === m.volumeId).map((m) => m.member)
          : v.rec.isr.map((m) => m.member),
      );
      for (const m of v.rec.replicas) {
        if (!inIsr.has(m)) this.#fail("not-converged", `p${p}: ${m} not back in the ISR`);
        const r = w.broker(m).replicas.get(p);
        const same =
          r !== undefined &&
          r.durable === lr.durable &&
          r.log.slice(0, r.durable).every((e, i) => e.id === lr.log[i]?.id && e.epoch === lr.log[i]?.epoch);
        if (!same) this.#fail("not-converged", `p${p}: ${m}'s log differs from leader ${leader}'s`);
      }
    }
    for (const e of this.acks) {
      const leader = w.store.get(e.partition)?.rec.leader ?? null;
      if (leader !== null && !this.#has(leader, e.partition, e.offset, e.id))
        this.#fail("acked-lost", `r${e.id} (p${e.partition}@${e.offset}) not on the final leader`);
    }
  }
}
