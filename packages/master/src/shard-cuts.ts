import { ShardRpcError, type WorkerLastPush } from '@edl/proto';
import { type Checkpoint, type DensePlacement, loadLatestCheckpoint, writeCheckpoint } from './checkpoint.js';
import { MasterStateError } from './errors.js';
import type { MasterLogger } from './logger.js';
import type { PushBarrier, PushOnTheWay } from './push-barrier.js';

/**
 * The job's parameter-server shards as the master's checkpoints and roll-backs reach them (an
 * EmbeddingClient of @edl/proto is one).
 */
export interface ShardCheckpointWriter {
  readonly numShards: number;
  /** Resolves once every shard wrote its part of the checkpoint of `version` in `dir`. */
  saveShards(version: number, dir: string): Promise<unknown>;
  /**
   * Has every shard replace its rows by its share of the checkpoint of `version` in `dir`, or, with
   * `version` undefined, empty its tables (rows start from the initializer again). Dense variables
   * on the shards take version `denseVersion`.
   */
  restoreShards(version: number | undefined, dir: string, denseVersion?: number): Promise<number[]>;
  /**
   * What each shard, in shard order, applied of `workerId`'s last step (EmbeddingClient.lastPushes):
   * undefined where it remembers none, an error where it could not be asked.
   */
  lastPushes(workerId: string): Promise<(WorkerLastPush | undefined | Error)[]>;
}

/** What {@link ShardCuts} needs of the master. */
export interface ShardCutsHost {
  readonly logger: MasterLogger;
  /** Pushes not confirmed within this long are given up on (the task lease). */
  leaseMs(): number;
  /** The master's state now, taken synchronously. */
  snapshot(): Checkpoint;
  /** Where the job's dense variables are, recorded in each checkpoint; undefined: not known. */
  readonly denseOn: DensePlacement | undefined;
  /** The cut before any checkpoint: the state before the first step was applied, if one was. */
  startCut(): Checkpoint | undefined;
  /** The model version a roll-back starts from: above every version handed out before it. */
  rollBackVersion(): number;
  /** Puts the master back to `cut` at model `version`; returns the training records this undid. */
  applyCut(cut: Checkpoint, version: number): { recordsRolledBack: number; modelVersion: number };
  /** A roll-back finished (for the job's `--stats` and status). */
  rolledBack?(rollBack: ShardRollBack): void;
}

/**
 * A job-wide roll-back: after a parameter-server shard was relaunched, or after a worker was lost
 * with its last step's rows push missing at a shard.
 */
export interface ShardRollBack {
  /** The shard relaunched, or the first shard the lost worker's push is missing at. */
  readonly shardIndex: number;
  /** Why, as the log says it. */
  readonly cause: string;
  /** The checkpoint rolled back to; null for the job's start (no checkpoint committed yet). */
  readonly checkpoint: string | null;
  readonly cutVersion: number;
  /** The model version after the roll-back (above every version handed out before it). */
  readonly modelVersion: number;
  /** Training records done before the roll-back and not in the cut: they are trained again. */
  readonly recordsRolledBack: number;
}

/** A checkpoint committed by {@link ShardCuts.checkpoint}. */
export interface CommittedCut {
  readonly path: string;
  readonly version: number;
  /** Milliseconds steps were paused: from the pause until every shard wrote its files. */
  readonly pausedMs: number;
}

/**
 * The cuts of a job with parameter-server shards (docs/master.md): checkpoints taken behind the
 * exact barrier, and the job-wide roll-back to the last one when a shard is relaunched. Both run in
 * a pause of step acceptance ({@link PushBarrier}), one after another.
 */
export class ShardCuts {
  readonly #writer: ShardCheckpointWriter;
  readonly #onCommitted: (version: number) => void;
  readonly #pushes: PushBarrier;
  readonly #host: ShardCutsHost;
  #pauses: Promise<unknown> = Promise.resolve();
  /** A shard died and the job has not rolled back yet: no checkpoint may commit meanwhile. */
  #rollbackPending = false;

  constructor(
    writer: ShardCheckpointWriter,
    onCommitted: (version: number) => void,
    pushes: PushBarrier,
    host: ShardCutsHost,
  ) {
    this.#writer = writer;
    this.#onCommitted = onCommitted;
    this.#pushes = pushes;
    this.#host = host;
  }

  /**
   * The exact barrier: steps pause until every accepted step's rows push reached the shards, the
   * master's state is snapshot, every shard writes its files of that version, steps resume, and
   * the master's file, written last, commits the cut.
   */
  async checkpoint(dir: string, keep: number): Promise<CommittedCut> {
    return this.#paused(async (resume) => {
      const skipped = (why: string) =>
        new MasterStateError('CHECKPOINT_SKIPPED', `checkpoint skipped: ${why}`);
      if (this.#rollbackPending)
        throw skipped('a parameter-server shard was relaunched and the job rolls back');
      const snapshot = this.#host.snapshot();
      const version = snapshot.store.version;
      await this.#writer.saveShards(version, dir);
      // A shard that died while writing may have answered from its relaunched process.
      if (this.#rollbackPending)
        throw skipped(`a parameter-server shard died while writing version ${version}`);
      const pausedMs = resume();
      const path = await writeCheckpoint(dir, { ...snapshot, ...this.#checkpointShards() }, keep);
      this.#onCommitted(version);
      return { path, version, pausedMs };
    });
  }

  /** What a checkpoint records of the shards that wrote its parts, and of its dense variables. */
  #checkpointShards(): Pick<Checkpoint, 'parameterServers' | 'denseOn'> {
    const { denseOn } = this.#host;
    return {
      parameterServers: { numShards: this.#writer.numShards },
      ...(denseOn === undefined ? {} : { denseOn }),
    };
  }

  /**
   * Rolls every shard and the master back to the last committed checkpoint of `dir` (the job's
   * start without one) once every accepted step's rows push was answered and `ready` resolved;
   * see `Master.onShardRelaunched`. Rejects when the shards cannot be restored.
   */
  rollBack(
    shardIndex: number,
    ready: Promise<unknown>,
    dir: string | undefined,
    cause = `parameter-server shard ${shardIndex} was relaunched`,
  ): Promise<void> {
    this.#rollbackPending = true;
    const { logger } = this.#host;
    logger.warn(`${cause}: the job rolls back to its last cut`);
    const run = this.#paused(async () => {
      this.#rollbackPending = false;
      await ready;
      const found =
        dir === undefined
          ? undefined
          : await loadLatestCheckpoint(dir, (error) => logger.warn(`skipping checkpoint: ${error.message}`));
      const withShardFiles = found?.checkpoint.parameterServers !== undefined;
      // Steps are paused: the version cannot move between here and applyCut.
      const version = this.#host.rollBackVersion();
      const rows = await this.#restoreShards(
        withShardFiles ? found?.checkpoint.store.version : undefined,
        dir ?? '',
        version,
      );
      const cut = found?.checkpoint ?? this.#host.startCut();
      const applied = cut === undefined ? undefined : this.#host.applyCut(cut, version);
      const rollBack: ShardRollBack = {
        shardIndex,
        cause,
        checkpoint: found?.path ?? null,
        cutVersion: found?.checkpoint.store.version ?? 0,
        modelVersion: applied?.modelVersion ?? 0,
        recordsRolledBack: applied?.recordsRolledBack ?? 0,
      };
      this.#host.rolledBack?.(rollBack);
      const { cutVersion, modelVersion, recordsRolledBack } = rollBack;
      logger.warn(
        found === undefined
          ? `job rolled back to its start after ${cause} (no checkpoint was committed yet)`
          : `job rolled back to checkpoint ${found.path} after ${cause}`,
        { shard: shardIndex, cutVersion, modelVersion, recordsRolledBack, rows: rows.join(',') },
      );
    });
    run.catch(() => {
      this.#rollbackPending = false;
    });
    return run;
  }

  /**
   * Settles the rows push `step` of `workerId`, lost with it: the shards are asked what they
   * applied of the worker's last step; if every shard applied all of it the step is whole, else
   * (a shard lacks some, remembers an older step, or cannot be asked) the job rolls back to its
   * last cut, as after a shard relaunch. The push stays on the way until then, so that no
   * checkpoint commits a cut holding the step's dense update without its rows update. Resolves to
   * whether the job rolls back; rejects when the roll-back fails.
   */
  async lostPush(workerId: string, step: PushOnTheWay, dir: string | undefined): Promise<boolean> {
    let missing: { shard: number; why: string } | undefined;
    try {
      const answers = await this.#writer.lastPushes(workerId);
      answers.some((answer, shard) => {
        const why = missingWhy(answer, step);
        if (why !== undefined) missing = { shard, why };
        return why !== undefined;
      });
    } catch (error) {
      missing = { shard: 0, why: `the shards could not be asked (${String(error)})` };
    }
    if (missing === undefined) {
      this.#host.logger.info(
        `worker ${workerId} was lost after its rows push of version ${step.modelVersion} reached every parameter-server shard: no roll-back`,
      );
      this.#pushes.confirmed(workerId);
      return false;
    }
    const cause = `worker ${workerId} was lost with its rows push of version ${step.modelVersion} missing at parameter-server shard ${missing.shard} (${missing.why})`;
    const run = this.rollBack(missing.shard, Promise.resolve(), dir, cause);
    // After rollBack marked the roll-back pending: a checkpoint waiting on this push skips.
    this.#pushes.confirmed(workerId);
    await run;
    return true;
  }

  /** RestoreShard on every shard, retrying while one is UNAVAILABLE (a channel still reconnecting). */
  async #restoreShards(
    version: number | undefined,
    dir: string,
    denseVersion: number,
    timeoutMs = 60_000,
  ): Promise<number[]> {
    const deadline = Date.now() + timeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#writer.restoreShards(version, dir, denseVersion);
      } catch (error) {
        if (!(error instanceof ShardRpcError) || error.code !== 'UNAVAILABLE' || Date.now() >= deadline)
          throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** attempt)));
      }
    }
  }

  /**
   * Runs `fn` after the pauses queued before, in a pause of step acceptance that begins once every
   * accepted step's rows push reached the shards; `resume` lifts the pause early (it gives the
   * milliseconds paused), or it lifts when `fn` settles.
   */
  #paused<T>(fn: (resume: () => number) => Promise<T>): Promise<T> {
    const run = this.#pauses.then(async () => {
      const begin = performance.now();
      const timeoutMs = this.#host.leaseMs();
      const drained = await this.#pushes.pause(timeoutMs);
      if (drained.unconfirmed.length > 0)
        this.#host.logger.warn(
          `parameter-server pause: the rows pushes of ${drained.unconfirmed.join(', ')} were not confirmed within ${timeoutMs} ms; the cut goes on without them`,
        );
      const resume = () => {
        this.#pushes.resume();
        return performance.now() - begin;
      };
      try {
        return await fn(resume);
      } finally {
        resume();
      }
    });
    this.#pauses = run.catch(() => undefined);
    return run;
  }
}

/** Why a shard's record of a worker's last step shows `step` not applied whole there, or undefined. */
function missingWhy(answer: WorkerLastPush | undefined | Error, step: PushOnTheWay): string | undefined {
  if (answer instanceof Error) return `it could not be asked: ${answer.message}`;
  if (answer === undefined) return 'it applied no push of the worker';
  if (answer.modelVersion !== step.modelVersion)
    return `its last push of the worker is of version ${answer.modelVersion}`;
  if (answer.applied < answer.due) return `${answer.applied} of its ${answer.due} pushes applied`;
  // A complete step of this version may be the worker's step before, at the same version.
  if (step.repeatsVersion) return 'the step before was of the same version, and cannot be told apart';
  return undefined;
}
