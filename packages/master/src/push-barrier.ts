/** How a pause of {@link PushBarrier} ended. */
export interface DrainedPushes {
  /** Milliseconds from the pause to the last confirmation (or the timeout). */
  readonly waitedMs: number;
  /** Workers whose push was still unconfirmed at the timeout (empty: the cut is exact). */
  readonly unconfirmed: readonly string[];
}

/**
 * The exact cut of a job with parameter-server shards (docs/master.md). A worker pushes a step's
 * rows gradient to the shards after the master accepted the step, and sends its next report
 * (gradient, evaluation metrics or task result) only once that push was answered: its steps run
 * one after another (mirroring and pushing ahead are off for a model with distributed embeddings).
 * So a worker whose step was accepted has its push on the way until the master hears from it again,
 * or loses it. While paused the master accepts no step; once no push is on the way, every push of
 * every accepted step has reached the shards, and none of a later step can: the shards' rows and
 * the master's state are one cut.
 */
export class PushBarrier {
  readonly #onTheWay = new Set<string>();
  #drained: (() => void) | undefined;
  #paused = false;

  /** Whether steps are refused now (a pause began and has not been lifted). */
  get paused(): boolean {
    return this.#paused;
  }

  /** The master accepted a step of `workerId` (or answered a resent one ALREADY_APPLIED): its push follows. */
  accepted(workerId: string): void {
    this.#onTheWay.add(workerId);
  }

  /** `workerId` sent its next report: the push of its last accepted step was answered. */
  confirmed(workerId: string): void {
    if (this.#onTheWay.delete(workerId)) this.#check();
  }

  /** Pauses step acceptance; resolves once no push is on the way, or after `timeoutMs`. */
  pause(timeoutMs: number): Promise<DrainedPushes> {
    this.#paused = true;
    const startedAt = performance.now();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#drained = undefined;
        resolve({ waitedMs: performance.now() - startedAt, unconfirmed: [...this.#onTheWay] });
      };
      // A worker that hangs between its push and its next report holds the pause until then.
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      this.#drained = done;
      this.#check();
    });
  }

  /** Lifts the pause: steps are accepted again. */
  resume(): void {
    this.#paused = false;
  }

  #check(): void {
    if (this.#onTheWay.size === 0) this.#drained?.();
  }
}
