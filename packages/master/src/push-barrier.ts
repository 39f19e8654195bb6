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
 * or, having lost it, learnt from the shards whether the push arrived (ShardCuts.lostPush). While paused the master accepts no step; once no push is on the way, every push of
 * every accepted step has reached the shards, and none of a later step can: the shards' rows and
 * the master's state are one cut.
 */
/** The step whose rows push a worker has on the way ({@link PushBarrier.onTheWay}). */
export interface PushOnTheWay {
  /** The model version the step was computed at: the version its pushes name. */
  readonly modelVersion: number;
  /**
   * The worker's step before it was accepted at the same version (the master aggregates several
   * gradients per version): a shard's record of that version may be of the earlier step.
   */
  readonly repeatsVersion: boolean;
}

export class PushBarrier {
  /** Workers with a push on the way, and the step's version. */
  readonly #onTheWay = new Map<string, PushOnTheWay>();
  /** Each worker's last two accepted steps' versions (kept after the confirmation, for repeatsVersion). */
  readonly #versions = new Map<string, { readonly last: number; readonly before: number | undefined }>();
  #drained: (() => void) | undefined;
  #paused = false;

  /** Whether steps are refused now (a pause began and has not been lifted). */
  get paused(): boolean {
    return this.#paused;
  }

  /**
   * The master accepted a step of `workerId` computed at `modelVersion` (or answered a `resent` one
   * ALREADY_APPLIED: its first answer was lost, so no push of it went out): its push follows.
   */
  accepted(workerId: string, modelVersion: number, resent = false): void {
    const known = this.#versions.get(workerId);
    // A resent step is the step accepted last: the one before it stays the one before.
    const before = resent && known?.last === modelVersion ? known.before : known?.last;
    this.#versions.set(workerId, { last: modelVersion, before });
    this.#onTheWay.set(workerId, { modelVersion, repeatsVersion: before === modelVersion });
  }

  /** The step whose push `workerId` has on the way, if it has one. */
  onTheWay(workerId: string): PushOnTheWay | undefined {
    return this.#onTheWay.get(workerId);
  }

  /** `workerId` sent its next report: the push of its last accepted step was answered. */
  confirmed(workerId: string): void {
    if (this.#onTheWay.delete(workerId)) this.#check();
  }

  /** `workerId` is gone: whatever its push was, it is settled now. */
  forget(workerId: string): void {
    this.#versions.delete(workerId);
    this.confirmed(workerId);
  }

  /** Pauses step acceptance; resolves once no push is on the way, or after `timeoutMs`. */
  pause(timeoutMs: number): Promise<DrainedPushes> {
    this.#paused = true;
    const startedAt = performance.now();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#drained = undefined;
        resolve({ waitedMs: performance.now() - startedAt, unconfirmed: [...this.#onTheWay.keys()] });
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
