import { GradientStatus, type NamedTensor } from '@edl/proto';
import type { ParameterServerRows } from '../embedding/parameter-server-rows.js';
import { WorkerError } from '../errors.js';
import type { WorkerLogger } from '../logger.js';
import type { MasterConnection } from '../master-connection.js';
import type { Mode } from '../model-definition.js';
import { ModelReplica } from '../model-replica.js';
import type { ModelRunner } from '../model-runner.js';
import type { RecordSlice } from '../task-feed.js';
import type { Timers } from '../timers.js';
import type { DenseOnShards } from './dense-on-shards.js';
import { toRangeRef } from './reports.js';

/** Answers in a row that show a worker alone (its gradient was the whole next version) before it mirrors again. */
const SOLO_ANSWERS_BEFORE_MIRRORING = 8;

/** The master's answer to a gradient. */
export type GradientAnswer = Awaited<ReturnType<MasterConnection['reportGradient']>>;

/** A gradient on its way to the master. */
export interface SentGradient {
  readonly response: ReturnType<MasterConnection['reportGradient']>;
  /** The gradient was applied to the replica as it was sent (see `WorkerOptions.mirrorUpdates`). */
  readonly mirrored: boolean;
}

/** What {@link MirroredModel} needs of the worker. */
export interface MirroredModelOptions {
  readonly master: MasterConnection;
  readonly workerId: string;
  readonly runner: ModelRunner;
  readonly timers: Timers;
  readonly logger: WorkerLogger;
  /** Pull the model every this many training steps. */
  readonly getModelSteps: number;
  /** Mirror the master's updates (see `WorkerOptions.mirrorUpdates`). */
  readonly mirrorUpdates: boolean;
  /**
   * The dense variables on the parameter-server shards (the master then arbitrates steps only):
   * pulls read them from the shards, gradients go to the master without their tensors.
   */
  readonly dense?: { readonly shards: DenseOnShards; readonly servers: ParameterServerRows };
}

/**
 * The worker's model as the master's updates leave it: pulls (every `getModelSteps` steps), models
 * that come back with gradients' answers, and the mirrored strategy, a replica of the master's
 * model and optimizer that each own gradient is applied to as it leaves, so that the next step can
 * be computed while the master applies the same gradient. The master's answers confirm the replica
 * (a checksum) or refute it (a model, or none: a pull).
 */
export class MirroredModel {
  readonly #o: MirroredModelOptions;
  #stepsSincePull = Number.POSITIVE_INFINITY;
  /** The master's model and optimizer as this worker's mirrored updates left them. */
  #replica: ModelReplica | undefined;
  /** False once mirroring is off for good: by option, a master that cannot be mirrored, a checksum mismatch. */
  #mirroring: boolean;
  /** Replicas dropped so far: a step computed on a replica that was then dropped is computed again. */
  #replicasDropped = 0;
  /** Answers in a row whose version was the pushed one + 1: no other worker's update in between. */
  #soloAnswers = 0;
  /**
   * Whether the master has confirmed the replica at least once: until then each step waits for its
   * answer, so that a worker that is not alone (its first answer not mirrored) computes nothing
   * on a replica in vain.
   */
  #replicaConfirmed = false;

  constructor(options: MirroredModelOptions) {
    this.#o = options;
    this.#mirroring = options.mirrorUpdates;
  }

  /** Replicas dropped so far; a change tells a step computed on the replica to be computed again. */
  get replicasDropped(): number {
    return this.#replicasDropped;
  }

  /** Whether a replica the master has confirmed is held: steps may then run ahead of their answers. */
  get replicaConfirmed(): boolean {
    return this.#replica !== undefined && this.#replicaConfirmed;
  }

  /** Whether the next training step must pull the model first. */
  get pullDue(): boolean {
    return this.#stepsSincePull >= this.#o.getModelSteps;
  }

  /** Makes the next training step pull the latest model (after evaluating an older snapshot). */
  duePull(): void {
    this.#stepsSincePull = Number.POSITIVE_INFINITY;
  }

  /** Pulls model `version` (-1: the latest) for `mode`, and with the latest, a replica when one is wanted. */
  async pull(version: number, mode: Mode): Promise<void> {
    const { master, workerId, runner } = this.#o;
    if (this.#o.dense !== undefined) return this.#pullFromShards(this.#o.dense, mode);
    await this.#o.timers.time('get_model', async () => {
      const held = runner.version;
      const latest = mode === 'training' && version < 0;
      // The optimizer's state (three models' worth for Adam) is asked for only to start a replica.
      const options = latest && this.#wantsReplica() ? { wantOptimizer: true } : undefined;
      let snapshot = await master.getModel(
        workerId,
        version,
        held >= 0 && options === undefined ? held : undefined,
        options,
      );
      if (snapshot.unchanged === true && snapshot.version === held) {
        if (latest && this.#replica?.version !== held) this.#dropReplica();
        return;
      }
      if (!snapshot.initialized) {
        if (mode !== 'training') {
          throw new WorkerError(
            'MASTER_ERROR',
            `The master has no model to use for ${mode}: train first, or start the master from a checkpoint`,
          );
        }
        // The first worker's fresh variables become the model; others' offers are ignored.
        await master.reportVariables(workerId, await runner.readVariables());
        snapshot = await master.getModel(workerId, version, undefined, options);
      }
      runner.assign(snapshot.variables, snapshot.version);
      if (options !== undefined) {
        this.#replica = ModelReplica.fromSnapshot(snapshot);
        this.#soloAnswers = 0;
        this.#replicaConfirmed = false;
        // A master that sent no optimizer applies several gradients per update (sync mode).
        if (this.#replica === undefined) this.#mirroring = false;
        else this.#o.logger.info('replica.started', { version: snapshot.version });
      } else if (latest && this.#replica?.version !== snapshot.version) this.#dropReplica();
    });
    this.#stepsSincePull = 0;
  }

  /**
   * The model from the shards. The first pull takes the master's variables (the first worker's
   * initial values, which the master keeps and never updates) for the shards' declarations. A
   * training pull asks for the latest version the master named; evaluation and prediction read what
   * the shards hold (no version is pinned on the shards: docs/worker.md).
   */
  async #pullFromShards(dense: NonNullable<MirroredModelOptions['dense']>, mode: Mode): Promise<void> {
    const { master, workerId, runner } = this.#o;
    await this.#o.timers.time('get_model', async () => {
      if (!dense.shards.initialized) {
        let snapshot = await master.getModel(workerId, -1);
        if (!snapshot.initialized) {
          if (mode !== 'training')
            throw new WorkerError(
              'MASTER_ERROR',
              `The master has no model to use for ${mode}: train first, or start the master from a checkpoint`,
            );
          await master.reportVariables(workerId, await runner.readVariables());
          snapshot = await master.getModel(workerId, -1);
        }
        dense.shards.setInitial(snapshot.variables, snapshot.version);
      }
      const pulled = await dense.servers.pullDense(dense.shards, mode === 'training');
      runner.assign(pulled.variables, pulled.version);
    });
    this.#stepsSincePull = 0;
  }

  /** Takes a model that came back with a gradient's answer, as a pull would. */
  adopt(variables: readonly NamedTensor[], version: number): void {
    this.#o.runner.assign(variables, version);
    this.#stepsSincePull = 0;
  }

  /**
   * Sends one step's gradient; the answer brings the next step's model when one is due. With a
   * replica at `modelVersion`, the gradient is applied to it as it leaves, and the local model
   * moves on to the replica's version at once (`mirrored`): the answer confirms or refutes it.
   */
  send(
    slices: readonly RecordSlice[],
    gradients: readonly NamedTensor[],
    modelVersion: number,
  ): SentGradient {
    const [first, ...rest] = slices as [RecordSlice, ...RecordSlice[]];
    const replica = this.#replica;
    const mirrored = replica !== undefined && replica.version === modelVersion;
    const onShards = this.#o.dense !== undefined;
    const response = this.#o.master.reportGradient({
      workerId: this.#o.workerId,
      taskId: first.task.id,
      rangeStart: first.rangeStart,
      rangeEnd: first.rangeEnd,
      modelVersion,
      // With dense variables on the shards, the tensors go to them once the master accepted the step.
      gradients: onShards ? [] : gradients,
      ...(rest.length > 0 ? { moreRanges: rest.map(toRangeRef) } : {}),
      // The next step pulls (every getModelSteps steps), or this one is computed again; a mirrored
      // answer carries no model all the same.
      wantModel: !onShards && (mirrored || this.#stepsSincePull + 1 >= this.#o.getModelSteps),
      ...(mirrored ? { mirror: true } : {}),
      ...(onShards ? { wantUpdate: true } : {}),
    });
    if (mirrored) {
      replica.apply(gradients);
      this.#o.runner.assign(replica.copies(), replica.version);
    }
    return { response, mirrored };
  }

  /**
   * Takes what an answer says of the replica, and returns whether the local model is settled by it
   * (confirmed, or replaced by the answer's model). A `mirrored` answer whose checksum matches
   * keeps the replica: the local model is the master's. Any other answer to a mirrored push drops
   * it, and the local model, a replica the master does not hold, is replaced by the answer's model
   * or, without one, marked for a pull.
   */
  checkMirror(mirrored: boolean, modelVersion: number, response: GradientAnswer): boolean {
    this.#o.dense?.shards.sawMasterVersion(response.modelVersion);
    const accepted = response.status === GradientStatus.ACCEPTED;
    if (!mirrored) {
      this.#soloAnswers = accepted && response.modelVersion === modelVersion + 1 ? this.#soloAnswers + 1 : 0;
      return false;
    }
    const replica = this.#replica;
    if (
      accepted &&
      response.mirrored === true &&
      replica !== undefined &&
      response.modelVersion === replica.version
    ) {
      const checksum = replica.checksum();
      if (checksum === response.modelChecksum) {
        this.#replicaConfirmed = true;
        return true;
      }
      // The same gradients through the same optimizer code gave other bits: stop mirroring for good.
      this.#mirroring = false;
      this.#o.logger.warn('replica.mismatch', {
        version: replica.version,
        checksum,
        masterChecksum: response.modelChecksum ?? 0,
      });
    }
    this.#dropReplica();
    if (response.variables !== undefined) {
      this.adopt(response.variables, response.modelVersion);
      return true;
    }
    // The local variables are the dropped replica's: no version of the master's (a pull must not
    // take them for an unchanged model).
    this.#o.runner.version = -1;
    this.#stepsSincePull = Number.POSITIVE_INFINITY;
    return false;
  }

  /**
   * Moves on after an applied step: the model that came back with it adopted (unless
   * {@link checkMirror} took it already, or the answer confirmed the replica).
   */
  stepApplied(
    response: { modelVersion: number; variables?: readonly NamedTensor[] },
    modelTaken: boolean,
  ): void {
    this.#stepsSincePull++;
    if (modelTaken) this.#stepsSincePull = 0;
    else if (response.variables !== undefined) this.adopt(response.variables, response.modelVersion);
    // A worker that now trains alone pulls once more, with the optimizer, to mirror again.
    if (this.#wantsReplica()) this.#stepsSincePull = Number.POSITIVE_INFINITY;
  }

  /**
   * Takes the model a STALE answer brought, or pulls the latest when it brought none, before the
   * step is computed again.
   */
  async refresh(response: GradientAnswer, modelTaken: boolean): Promise<void> {
    if (response.variables === undefined) await this.pull(-1, 'training');
    else if (!modelTaken) this.adopt(response.variables, response.modelVersion);
  }

  /** Whether the next pull of the latest model should start a replica. */
  #wantsReplica(): boolean {
    if (!this.#mirroring || this.#replica !== undefined) return false;
    // After a replica was dropped, only a worker that trains alone again starts a new one.
    return this.#replicasDropped === 0 || this.#soloAnswers >= SOLO_ANSWERS_BEFORE_MIRRORING;
  }

  #dropReplica(): void {
    if (this.#replica === undefined) return;
    this.#replica = undefined;
    this.#replicasDropped++;
    this.#soloAnswers = 0;
  }
}
