// Ghost state: what the sim knows about every produced record that the
// system itself does not record (which topic incarnation it was produced
// into, whether the client got its 202). The record's payload is its id, so
// a copy anywhere (a reroute, a move, a duplicate) is recognisable.

export interface Ghost {
  id: string;
  topic: string;
  /** Topic incarnation (uid) the ingress node's view had when it accepted the record. */
  uid: number;
  ingress: string;
  acked: boolean;
  /** Discarded by a dispatcher after a confirmed topic deletion. */
  discarded: boolean;
}

export class Ghosts {
  readonly all = new Map<string, Ghost>();
  /** Records an expired in-doubt hold let through: documented as possibly stored twice. */
  readonly mayBeTwice = new Set<string>();
  /** Records whose in-doubt state a crash of their dispatcher forgot: the other documented seam. */
  readonly forgottenDoubt = new Set<string>();
  /**
   * Records whose seq only the dispatcher's in-memory skip-set marked done
   * when it crashed: after the restart they are dispatched again, and if the
   * owner is Down by then (or the record had been rerouted) the new copy goes
   * to a sibling under a new seq that no dedup can see (finding F1,
   * docs/simulation.md).
   */
  readonly skipForgotten = new Set<string>();
  /** Undone records whose in-doubt marks were pruned (known bug; excused while flag inDoubtPrune is off). */
  readonly prunedDoubt = new Set<string>();
  excusePrunedDoubt = true;
  /** Whether skipForgotten duplicates are excused (flag skipSetCrash off) or violations. */
  excuseSkipForgotten = true;
  #next = 1;

  /** Whether a duplicate of this record is one of the documented seams (counted, not a violation). */
  excused(id: string): boolean {
    return (
      this.mayBeTwice.has(id) ||
      this.forgottenDoubt.has(id) ||
      (this.excuseSkipForgotten && this.skipForgotten.has(id)) ||
      (this.excusePrunedDoubt && this.prunedDoubt.has(id))
    );
  }

  create(topic: string, uid: number, ingress: string): Ghost {
    const g: Ghost = { id: `r${this.#next++}`, topic, uid, ingress, acked: false, discarded: false };
    this.all.set(g.id, g);
    return g;
  }

  get(id: string): Ghost | undefined {
    return this.all.get(id);
  }
}
