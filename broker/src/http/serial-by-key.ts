// Runs async tasks one after another per key (different keys run freely), so
// a read-decide-write sequence on one topic is not interleaved with another
// on the same topic in this process: a PATCH computes the next schema version
// from the current one, and two at once would both claim the same version.

export class SerialByKey {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    // A failed task must not fail the ones queued behind it.
    const result = previous.catch(() => undefined).then(task);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    // Forget the key once its queue is empty, so the map does not grow with every topic ever patched.
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with a task running or queued (for tests). */
  get size(): number {
    return this.tails.size;
  }
}
