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
  #next = 1;

  create(topic: string, uid: number, ingress: string): Ghost {
    const g: Ghost = { id: `r${this.#next++}`, topic, uid, ingress, acked: false, discarded: false };
    this.all.set(g.id, g);
    return g;
  }

  get(id: string): Ghost | undefined {
    return this.all.get(id);
  }
}
