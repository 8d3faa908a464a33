// Offsets of the most recently committed records by (incarnation, seq), so a
// re-sent record the (incarnation, seq) dedup drops can still be answered
// with the offset it got (acks=all). Bounded, in memory, oldest out first;
// a miss only means the answer carries no offset.

export class RecentOffsets {
  readonly #max: number;
  readonly #map = new Map<string, number>();

  constructor(max = 4096) {
    this.#max = max;
  }

  set(incarnation: string, seq: number, offset: number): void {
    const k = `${incarnation}:${seq}`;
    this.#map.delete(k);
    this.#map.set(k, offset);
    while (this.#map.size > this.#max) {
      const first = this.#map.keys().next().value;
      if (first === undefined) break;
      this.#map.delete(first);
    }
  }

  get(incarnation: string, seq: number): number | undefined {
    return this.#map.get(`${incarnation}:${seq}`);
  }
}
