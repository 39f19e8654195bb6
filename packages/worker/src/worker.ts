import { availableParallelism } from 'node:os';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { describeValue } from '@edl/common';
import type { DataReader } from '@edl/data';
import {
  GradientStatus,
  MasterRpcError,
  type NamedTensor,
  type TaskAssignment,
  type TaskRangeRef,
  taskKindOf,
} from '@edl/proto';
import { tf } from '../hooks/tfjs-commonjs.mjs';
import { taskErrorText, WorkerError } from './errors.js';
import { LiveStats } from './live-stats.js';
import { silentLogger, type WorkerLogger } from './logger.js';
import type { MasterConnection } from './master-connection.js';
import { MasterWatch } from './master-watch.js';
import { minibatchSize, minibatchTensors, sliceMinibatch } from './minibatch-slice.js';
import type { Minibatch, Mode, ModelDefinition, PredictionOutputsProcessor } from './model-definition.js';
import { ModelReplica } from './model-replica.js';
import { ModelRunner, type StepResult } from './model-runner.js';
import { JsonLinesPredictionWriter } from './prediction-writer.js';
import { prefetch } from './prefetch.js';
import { type RecordSlice, TaskFeed } from './task-feed.js';
import { Timers, type TimersReport } from './timers.js';

/** Options of {@link runWorker}. */
export interface WorkerOptions<TRecord> {
  readonly workerId: string;
  readonly master: MasterConnection;
  readonly modelDefinition: ModelDefinition<TRecord>;
  /** Reader of training tasks' records (and of the others when they have none of their own). */
  readonly reader: DataReader<TRecord>;
  /** Reader of evaluation tasks' records (`--validation-data`). */
  readonly evaluationReader?: DataReader<TRecord>;
  /** Reader of prediction tasks' records. */
  readonly predictionReader?: DataReader<TRecord>;
  /** Records per minibatch, handed to `datasetFn`. */
  readonly minibatchSize: number;
  /** Pull the model every this many training steps (default 1, as ElasticDL). */
  readonly getModelSteps?: number;
  /** Minibatches prepared ahead of compute (default 2; 0 gives the serialized loop of July 2019). */
  readonly prefetch?: number;
  /**
   * Threads for input preparation, passed to `datasetFn` as `metadata.inputWorkers` (default: 0 with
   * `prefetch: 0`, the serialized loop; else the available cores - 1, at least 1).
   */
  readonly inputWorkers?: number;
  /** Name of the compute backend in use, reported with heartbeats (default: tfjs's backend). */
  readonly backend?: string;
  /** Heartbeat period in milliseconds (default 2000). */
  readonly heartbeatMs?: number;
  /** JSON-lines file for prediction outputs, when the model has no `predictionOutputsProcessor`. */
  readonly predictionOutput?: string;
  /** Recomputations of a minibatch after STALE answers before its task fails (default: no limit, as ElasticDL). */
  readonly maxStaleRetries?: number;
  readonly logger?: WorkerLogger;
  /** Called after every minibatch. */
  readonly onProgress?: (progress: WorkerProgress) => void;
  /** Timers to fill (default: new ones). */
  readonly timers?: Timers;
  /**
   * Run for the TRAIN_END_CALLBACK task, after training, with the worker's model pulled to the
   * final version (e.g. save the non-trainable weights next to the checkpoint, export the model).
   */
  readonly onTrainEnd?: (runner: ModelRunner) => void | Promise<void>;
  /** Non-trainable weights to start from (batch-norm statistics saved after training). */
  readonly nonTrainableWeights?: readonly NamedTensor[];
  /** Train on NaN or infinite losses and gradients instead of failing the job (default false). */
  readonly allowNonFinite?: boolean;
  /**
   * Push ahead (default false): send step n's gradient and compute step n+1 while the master
   * applies it, so that the round trip overlaps compute; each gradient is then computed on a model
   * one of this worker's own updates older, which costs accuracy on short runs (measured: MNIST, 2
   * workers, 2 epochs: 89.9-92.7% against 93.4-94.2% waiting; a 12-step CIFAR-10-like run: 27%
   * against 58%). Only for bounded-staleness async training; 'auto' pushes ahead until a master
   * refuses such a gradient as STALE (sync mode), then stops, after recomputing that minibatch and
   * the one computed meanwhile.
   */
  readonly pushAhead?: boolean | 'auto';
  /**
   * Mirror the master's updates (default true): hold a replica of the master's model and optimizer
   * state, apply each own gradient to it with the master's optimizer code, and compute the next
   * step on it while the master applies the same gradient. When the master says the gradient was
   * the whole update onto the version it was computed on (a worker training alone), its answer
   * carries a checksum instead of the model, and the step computed meanwhile is on exactly the
   * master's model: the round trip leaves the critical path at no cost in accuracy. Otherwise the
   * answer brings the model as without mirroring, and a step computed meanwhile is computed again.
   */
  readonly mirrorUpdates?: boolean;
}

/** Where a worker stands, after each minibatch. */
export interface WorkerProgress {
  readonly mode: Mode;
  readonly taskId: number;
  readonly epoch: number;
  readonly records: number;
  readonly steps: number;
  readonly loss: number | undefined;
  readonly modelVersion: number;
}

/** What a worker did. */
export interface WorkerResult {
  readonly steps: number;
  readonly records: Readonly<Record<Mode, number>>;
  readonly tasksDone: number;
  readonly tasksFailed: number;
  readonly lastLoss: number | undefined;
  /** Non-empty when the master ended the job as failed. */
  readonly jobError: string;
  readonly timers: TimersReport;
}

/** A training step's gradient sent ahead, with what it takes to count or redo it. */
interface InFlightPush {
  /** The step's minibatch, kept until the answer: a STALE one is computed again. */
  readonly batch: Minibatch;
  readonly slice: RecordSlice;
  readonly loss: number;
  readonly response: ReturnType<MasterConnection['reportGradient']>;
  /** The gradient was applied to the replica as it was sent (see {@link WorkerOptions.mirrorUpdates}). */
  readonly mirrored: boolean;
  /** The model version the gradient was computed on. */
  readonly modelVersion: number;
  /** The slice ends its task: report the task once the gradient is applied. */
  finishesTask: boolean;
}

/** Answers in a row that show a worker alone (its gradient was the whole next version) before it mirrors again. */
const SOLO_ANSWERS_BEFORE_MIRRORING = 8;

function toRangeRef(slice: RecordSlice): TaskRangeRef {
  return { taskId: slice.task.id, rangeStart: slice.rangeStart, rangeEnd: slice.rangeEnd };
}

function checkPositiveInteger(value: unknown, name: string, allowZero = false): void {
  if (!Number.isSafeInteger(value) || (value as number) < (allowZero ? 0 : 1)) {
    throw new RangeError(
      `Expected a ${allowZero ? 'non-negative' : 'positive'} integer for ${name} but received ${describeValue(value)}`,
    );
  }
}

/**
 * Runs one worker until the master says the job is over (ElasticDL's worker loop): a shared dataset fed by
 * get_task, `datasetFn` over it, minibatches prefetched ahead of compute, each minibatch attributed
 * to the tasks its records came from, gradients pushed per task range, and each task reported when
 * its last record is consumed.
 */
export async function runWorker<TRecord>(options: WorkerOptions<TRecord>): Promise<WorkerResult> {
  checkPositiveInteger(options.minibatchSize, 'minibatchSize');
  checkPositiveInteger(options.getModelSteps ?? 1, 'getModelSteps');
  checkPositiveInteger(options.prefetch ?? 2, 'prefetch', true);
  if (options.inputWorkers !== undefined) checkPositiveInteger(options.inputWorkers, 'inputWorkers', true);
  // A worker whose master is gone ends itself (EDL_MASTER_PID / EDL_MASTER_LEASE_MS; see master-watch).
  const watch = MasterWatch.fromEnvironment(process.env, options.logger);
  const loop = new WorkerLoop(watch ? { ...options, master: watch.wrap(options.master) } : options);
  try {
    return await loop.run();
  } finally {
    watch?.stop();
  }
}

class WorkerLoop<TRecord> {
  readonly #o: WorkerOptions<TRecord>;
  readonly #logger: WorkerLogger;
  readonly #timers: Timers;
  readonly #feed: TaskFeed<TRecord>;
  readonly #runner: ModelRunner;
  readonly #processor: PredictionOutputsProcessor | undefined;
  readonly #dropped = new Set<number>();
  readonly #records: Record<Mode, number> = { training: 0, evaluation: 0, prediction: 0 };
  #steps = 0;
  #stepsSincePull = Number.POSITIVE_INFINITY;
  #lastLoss: number | undefined;
  #tasksDone = 0;
  /** Ids of the tasks reported done (a failing segment must not fail them again). */
  readonly #finishedTasks = new Set<number>();
  #tasksFailed = 0;
  #stopRequested = false;
  /** Whether training steps push ahead; 'auto' turns false at the first STALE pushed-ahead gradient. */
  #pushAhead: boolean;
  /** The gradient pushed ahead, not yet answered (at most one). */
  #inFlight: InFlightPush | undefined;
  /** The master's model and optimizer as this worker's mirrored updates left them; see mirrorUpdates. */
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
  readonly #live = new LiveStats();

  constructor(options: WorkerOptions<TRecord>) {
    this.#o = options;
    this.#logger = options.logger ?? silentLogger;
    this.#timers = options.timers ?? new Timers();
    this.#pushAhead = options.pushAhead === true || options.pushAhead === 'auto';
    this.#mirroring = options.mirrorUpdates !== false;
    this.#feed = new TaskFeed({
      master: options.master,
      workerId: options.workerId,
      readerFor: (task) => this.#readerFor(taskKindOf(task)),
      timers: this.#timers,
      logger: this.#logger,
      reuseBatches: options.modelDefinition.reuseRecordMemory === true,
    });
    this.#runner = new ModelRunner(options.modelDefinition as ModelDefinition<unknown>, {
      allowNonFinite: options.allowNonFinite === true,
    });
    if (options.nonTrainableWeights) this.#runner.assignNonTrainable(options.nonTrainableWeights);
    this.#processor =
      options.modelDefinition.predictionOutputsProcessor ??
      (options.predictionOutput === undefined
        ? undefined
        : new JsonLinesPredictionWriter(options.predictionOutput));
  }

  #readerFor(kind: string): DataReader<TRecord> {
    if (kind === 'evaluation') return this.#o.evaluationReader ?? this.#o.reader;
    if (kind === 'prediction') return this.#o.predictionReader ?? this.#o.reader;
    return this.#o.reader;
  }

  #heartbeatTimer: NodeJS.Timeout | undefined;
  #heartbeatPeriod = Number.POSITIVE_INFINITY;

  /** (Re)arms the heartbeat so that it beats at least three times per lease of the tasks held. */
  #armHeartbeat(leaseMs: number): void {
    const period = Math.max(
      20,
      Math.min(this.#o.heartbeatMs ?? 2000, leaseMs > 0 ? Math.floor(leaseMs / 3) : 2000),
    );
    if (period >= this.#heartbeatPeriod) return;
    this.#heartbeatPeriod = period;
    clearInterval(this.#heartbeatTimer);
    this.#heartbeatTimer = setInterval(() => void this.#heartbeat(), period);
    this.#heartbeatTimer.unref();
  }

  async run(): Promise<WorkerResult> {
    this.#armHeartbeat(0);
    try {
      while (!this.#stopRequested) {
        const head = await this.#feed.nextHead();
        if (head === undefined) break;
        this.#armHeartbeat(head.leaseMs);
        if (taskKindOf(head) === 'train-end') {
          try {
            if (this.#o.onTrainEnd) {
              await this.#pull(-1, 'training');
              await this.#o.onTrainEnd(this.#runner);
            }
          } catch (error) {
            if (error instanceof MasterRpcError) throw error;
            await this.#failTask(head, `train-end callback failed: ${(error as Error).message}`);
            continue;
          }
          await this.#finishTask(head, 0);
          continue;
        }
        await this.#runSegment(head);
      }
    } finally {
      clearInterval(this.#heartbeatTimer);
      this.#timers.stop();
      await this.#processor?.close?.();
    }
    if (this.#feed.jobError) this.#logger.warn('job.failed', { error: this.#feed.jobError });
    return {
      steps: this.#steps,
      records: { ...this.#records },
      tasksDone: this.#tasksDone,
      tasksFailed: this.#tasksFailed,
      lastLoss: this.#lastLoss,
      jobError: this.#feed.jobError,
      timers: this.#timers.toJSON(),
    };
  }

  async #heartbeat(): Promise<void> {
    try {
      const stats = this.#live.take({
        backend: this.#o.backend ?? tf.getBackend() ?? '',
        steps: this.#steps,
        records: this.#records,
        lastLoss: this.#lastLoss,
        timers: this.#timers,
      });
      const response = await this.#o.master.heartbeat(this.#o.workerId, stats);
      if (response.shouldStop && !this.#stopRequested) {
        this.#stopRequested = true;
        this.#logger.info('worker.stop_requested', {});
      }
    } catch (error) {
      this.#logger.warn('heartbeat.failed', { error: (error as Error).message });
    }
  }

  async #runSegment(head: TaskAssignment): Promise<void> {
    const mode = taskKindOf(head) as Mode;
    await this.#prepareModel(mode, head);
    const { modelDefinition, minibatchSize: size } = this.#o;
    const records = this.#feed.dataset(head, `TaskFeed(${mode})`);
    let iterator: ReturnType<typeof prefetch<Minibatch>> | undefined;
    try {
      const batches = modelDefinition.datasetFn(records, mode, {
        minibatchSize: size,
        reader: this.#readerFor(mode).metadata,
        inputWorkers:
          this.#o.inputWorkers ?? (this.#o.prefetch === 0 ? 0 : Math.max(1, availableParallelism() - 1)),
      });
      iterator = prefetch(this.#timeInputFn(batches), this.#o.prefetch ?? 2);
      for (;;) {
        if (this.#stopRequested) break;
        const begin = performance.now();
        const next = await iterator.next();
        this.#timers.add('data_wait', performance.now() - begin);
        if (next.done) break;
        await this.#process(mode, next.value);
      }
      // The segment's last gradient must be answered before its tasks are reported.
      await this.#settlePush();
    } catch (error) {
      await iterator?.return(undefined).catch(() => undefined);
      // A step pushed ahead is answered first: its records count if the master applied them.
      await this.#settlePush().catch(() => undefined);
      if (error instanceof MasterRpcError) throw error;
      const message = taskErrorText(error);
      this.#logger.warn('segment.failed', { mode, error: message });
      const failed = this.#feed.drain().map((pending) => pending.task);
      // A datasetFn that failed before reading a record never opened the head task, which this
      // worker holds all the same: unreported, its lease would be renewed by heartbeats forever.
      if (!this.#finishedTasks.has(head.id) && !failed.some((task) => task.id === head.id))
        failed.unshift(head);
      for (const task of failed) await this.#failTask(task, message);
      return;
    }
    await iterator.return(undefined);
    for (const pending of this.#feed.drain()) {
      if (this.#stopRequested) break;
      if (pending.consumed === pending.total) await this.#finishTask(pending.task, pending.total);
      else {
        await this.#failTask(
          pending.task,
          `datasetFn consumed ${pending.consumed} of the ${pending.total} records of task ${pending.task.id}: it must keep every record`,
        );
      }
    }
  }

  /** Measures datasetFn's own time: the wait for each minibatch less the reading done meanwhile. */
  async *#timeInputFn(batches: AsyncIterable<Minibatch>): AsyncGenerator<Minibatch> {
    const iterator = batches[Symbol.asyncIterator]();
    try {
      for (;;) {
        const readBefore = this.#timers.seconds('get_batch') + this.#timers.seconds('get_task');
        const begin = performance.now();
        const next = await iterator.next();
        const readMs =
          (this.#timers.seconds('get_batch') + this.#timers.seconds('get_task') - readBefore) * 1000;
        this.#timers.add('input_fn', Math.max(0, performance.now() - begin - readMs));
        if (next.done) return;
        yield next.value;
      }
    } finally {
      await iterator.return?.();
    }
  }

  async #prepareModel(mode: Mode, head: TaskAssignment): Promise<void> {
    if (mode === 'evaluation') {
      await this.#pull(head.modelVersion, mode);
      // The next training step must start from the latest model, not from this snapshot.
      this.#stepsSincePull = Number.POSITIVE_INFINITY;
    } else if (this.#runner.version < 0) {
      await this.#pull(-1, mode);
    }
  }

  async #pull(version: number, mode: Mode): Promise<void> {
    const { master, workerId } = this.#o;
    await this.#timers.time('get_model', async () => {
      const held = this.#runner.version;
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
        await master.reportVariables(workerId, await this.#runner.readVariables());
        snapshot = await master.getModel(workerId, version, undefined, options);
      }
      this.#runner.assign(snapshot.variables, snapshot.version);
      if (options !== undefined) {
        this.#replica = ModelReplica.fromSnapshot(snapshot);
        this.#soloAnswers = 0;
        this.#replicaConfirmed = false;
        // A master that sent no optimizer applies several gradients per update (sync mode).
        if (this.#replica === undefined) this.#mirroring = false;
        else this.#logger.info('replica.started', { version: snapshot.version });
      } else if (latest && this.#replica?.version !== snapshot.version) this.#dropReplica();
    });
    this.#stepsSincePull = 0;
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

  async #process(mode: Mode, batch: Minibatch): Promise<void> {
    try {
      const slices = this.#feed.take(minibatchSize(batch));
      // A minibatch that spans tasks (a short last task of a shard, a recovered remainder) is one
      // step: one gradient (or metrics report) for all its ranges, which the master applies
      // together or not at all. Only a range the master no longer holds makes it fall back to one
      // step per task.
      const ranged = slices.filter((slice) => slice.count > 0);
      let together = false;
      if (ranged.length > 1 && mode !== 'prediction' && !ranged.some((s) => this.#dropped.has(s.task.id))) {
        await this.#settlePush();
        together =
          mode === 'training' ? await this.#train(batch, ranged) : await this.#evaluate(batch, ranged);
        if (together) for (const slice of ranged) this.#records[mode] += slice.count;
      }
      for (const slice of slices) {
        if (this.#dropped.has(slice.task.id)) continue;
        if (!together && slice.count > 0) {
          const part = slices.length === 1 ? batch : sliceMinibatch(batch, slice.offset, slice.count);
          try {
            if (
              mode === 'training' &&
              (this.#pushAhead || (this.#replica !== undefined && this.#replicaConfirmed))
            ) {
              await this.#trainAhead(part, slice);
            } else {
              if (mode === 'training') await this.#train(part, [slice]);
              else if (mode === 'evaluation') await this.#evaluate(part, [slice]);
              else await this.#predict(part, slice);
              if (!this.#dropped.has(slice.task.id)) this.#records[mode] += slice.count;
            }
          } finally {
            if (part !== batch && this.#inFlight?.batch !== part) tf.dispose(minibatchTensors(part));
          }
        }
        // A task is reported done only once its last gradient is applied: with that gradient still
        // pushed ahead, the report waits for its answer (and compute goes on meanwhile).
        const inFlight = this.#inFlight;
        if (slice.completesTask && inFlight?.slice === slice) inFlight.finishesTask = true;
        else if (slice.completesTask && !this.#dropped.has(slice.task.id)) {
          await this.#finishTask(slice.task, slice.task.end - slice.task.start);
        }
        this.#o.onProgress?.({
          mode,
          taskId: slice.task.id,
          epoch: slice.task.epoch,
          records: this.#records[mode],
          steps: this.#steps,
          loss: this.#lastLoss,
          modelVersion: this.#runner.version,
        });
      }
    } finally {
      if (this.#inFlight?.batch !== batch) tf.dispose(minibatchTensors(batch));
    }
  }

  /** Computes the gradients of one step on the model held now. */
  #computeStep(batch: Minibatch, slices: readonly RecordSlice[]) {
    const [first, ...rest] = slices as [RecordSlice, ...RecordSlice[]];
    return this.#timers.time(
      'compute_loss',
      () =>
        this.#runner.computeGradients(batch, {
          taskId: first.task.id,
          shardName: first.task.shardName,
          rangeStart: first.rangeStart,
          rangeEnd: (rest.at(-1) ?? first).rangeEnd,
        }),
      first.task.id,
    );
  }

  /**
   * Sends one step's gradient; the answer brings the next step's model when one is due. With a
   * replica at `modelVersion`, the gradient is applied to it as it leaves, and the local model
   * moves on to the replica's version at once (`mirrored`): the answer confirms or refutes it.
   */
  #push(slices: readonly RecordSlice[], gradients: readonly NamedTensor[], modelVersion: number) {
    const [first, ...rest] = slices as [RecordSlice, ...RecordSlice[]];
    const replica = this.#replica;
    const mirrored = replica !== undefined && replica.version === modelVersion;
    const response = this.#o.master.reportGradient({
      workerId: this.#o.workerId,
      taskId: first.task.id,
      rangeStart: first.rangeStart,
      rangeEnd: first.rangeEnd,
      modelVersion,
      gradients,
      ...(rest.length > 0 ? { moreRanges: rest.map(toRangeRef) } : {}),
      // The next step pulls (every getModelSteps steps), or this one is computed again; a mirrored
      // answer carries no model all the same.
      wantModel: mirrored || this.#stepsSincePull + 1 >= (this.#o.getModelSteps ?? 1),
      ...(mirrored ? { mirror: true } : {}),
    });
    if (mirrored) {
      replica.apply(gradients);
      this.#runner.assign(replica.copies(), replica.version);
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
  #checkMirror(
    mirrored: boolean,
    modelVersion: number,
    response: Awaited<ReturnType<MasterConnection['reportGradient']>>,
  ): boolean {
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
      this.#logger.warn('replica.mismatch', {
        version: replica.version,
        checksum,
        masterChecksum: response.modelChecksum ?? 0,
      });
    }
    this.#dropReplica();
    if (response.variables !== undefined) {
      this.#adopt(response.variables, response.modelVersion);
      return true;
    }
    // The local variables are the dropped replica's: no version of the master's (a pull must not
    // take them for an unchanged model).
    this.#runner.version = -1;
    this.#stepsSincePull = Number.POSITIVE_INFINITY;
    return false;
  }

  /**
   * One training step pushed ahead: computed on the model held now, while the previous step's
   * gradient is still with the master; then that answer is taken (its model adopted) and this
   * step's gradient goes out unanswered. Its records count once the master accepts it. With a
   * replica the model held now already includes the previous gradient (see `mirrorUpdates`), so
   * the step is exactly the one a worker waiting for the answer would compute.
   */
  async #trainAhead(batch: Minibatch, slice: RecordSlice): Promise<void> {
    const getModelSteps = this.#o.getModelSteps ?? 1;
    if (this.#inFlight === undefined && this.#stepsSincePull >= getModelSteps) {
      await this.#pull(-1, 'training');
    }
    const modelVersion = this.#runner.version;
    const onReplica = this.#inFlight?.mirrored === true;
    const replicasDropped = this.#replicasDropped;
    const step = await this.#computeStep(batch, [slice]);
    await this.#settlePush();
    if (this.#dropped.has(slice.task.id)) return;
    if (onReplica && this.#replicasDropped !== replicasDropped) {
      // Computed on a replica the master turned out not to hold: computed again on its model.
      this.#timers.countGradient(true);
      await this.#train(batch, [slice]);
      if (!this.#dropped.has(slice.task.id)) this.#records.training += slice.count;
      return;
    }
    if (!this.#pushAhead && !(this.#replica !== undefined && this.#replicaConfirmed)) {
      // The previous answer turned pushing ahead off: this step waits for its answer.
      await this.#train(batch, [slice], { step, modelVersion });
      if (!this.#dropped.has(slice.task.id)) this.#records.training += slice.count;
      return;
    }
    // Only the sending (encoding, and the replica's update) is timed here; the wait, if any, is
    // timed when the answer is taken.
    const begin = performance.now();
    const { response, mirrored } = this.#push([slice], step.gradients, modelVersion);
    this.#timers.add('report_gradient', performance.now() - begin, slice.task.id);
    // Settled by #settlePush; until then a failure must not count as unhandled.
    response.catch(() => undefined);
    this.#inFlight = { batch, slice, loss: step.loss, response, mirrored, modelVersion, finishesTask: false };
    // One turn of the event loop before the next step's compute, which does not yield: gRPC hands
    // the request to HTTP/2 a few ticks after the call, and without this turn the gradient left only
    // once the next step was computed (measured: it reached the master 45 ms later, not 3 ms).
    await yieldToEventLoop();
  }

  /** Waits for the gradient pushed ahead, if any, and takes its answer as #train would. */
  async #settlePush(): Promise<void> {
    const pending = this.#inFlight;
    if (pending === undefined) return;
    this.#inFlight = undefined;
    const { batch, slice } = pending;
    try {
      const response = await this.#timers.time('report_gradient', () => pending.response, slice.task.id);
      const modelTaken = this.#checkMirror(pending.mirrored, pending.modelVersion, response);
      const accepted =
        response.status === GradientStatus.ACCEPTED || response.status === GradientStatus.ALREADY_APPLIED;
      this.#timers.countGradient(!accepted);
      if (accepted) {
        this.#stepDone(pending.loss, response, modelTaken);
      } else if (response.status === GradientStatus.STALE) {
        // Computed one own update too old for this master's staleness bound.
        if (this.#o.pushAhead !== true) this.#pushAhead = false;
        if (response.variables === undefined) await this.#pull(-1, 'training');
        else if (!modelTaken) this.#adopt(response.variables, response.modelVersion);
        await this.#train(batch, [slice]);
      } else {
        this.#rejected(slice, response.status, 'gradient');
      }
      if (this.#dropped.has(slice.task.id)) return;
      this.#records.training += slice.count;
      if (pending.finishesTask) await this.#finishTask(slice.task, slice.task.end - slice.task.start);
    } finally {
      tf.dispose(minibatchTensors(batch));
    }
  }

  /**
   * An applied step: counted, its loss kept, the model that came back with it adopted (unless
   * {@link #checkMirror} took it already, or the answer confirmed the replica).
   */
  #stepDone(
    loss: number,
    response: { modelVersion: number; variables?: readonly NamedTensor[] },
    modelTaken: boolean,
  ): void {
    this.#steps++;
    this.#stepsSincePull++;
    this.#lastLoss = loss;
    this.#live.addLoss(loss);
    if (modelTaken) this.#stepsSincePull = 0;
    else if (response.variables !== undefined) this.#adopt(response.variables, response.modelVersion);
    // A worker that now trains alone pulls once more, with the optimizer, to mirror again.
    if (this.#wantsReplica()) this.#stepsSincePull = Number.POSITIVE_INFINITY;
  }

  /**
   * One training step on `batch`, whose records are `slices` (one per task, in order). The push of
   * the gradient brings the next step's model back in the same round trip. Returns false when the
   * master no longer holds one of several ranges: the caller then steps task by task.
   */
  async #train(
    batch: Minibatch,
    slices: readonly RecordSlice[],
    computed?: { readonly step: StepResult; readonly modelVersion: number },
  ): Promise<boolean> {
    const [first] = slices as [RecordSlice, ...RecordSlice[]];
    const taskId = first.task.id;
    const getModelSteps = this.#o.getModelSteps ?? 1;
    if (computed === undefined && this.#stepsSincePull >= getModelSteps) await this.#pull(-1, 'training');
    const retries = this.#o.maxStaleRetries ?? Number.POSITIVE_INFINITY;
    for (let attempt = 0; ; attempt++) {
      const given = attempt === 0 ? computed : undefined;
      const modelVersion = given?.modelVersion ?? this.#runner.version;
      const step = given?.step ?? (await this.#computeStep(batch, slices));
      const begin = performance.now();
      let response: Awaited<ReturnType<MasterConnection['reportGradient']>>;
      let mirrored: boolean;
      try {
        const push = this.#push(slices, step.gradients, modelVersion);
        mirrored = push.mirrored;
        response = await push.response;
      } finally {
        this.#timers.add('report_gradient', performance.now() - begin, taskId);
      }
      const modelTaken = this.#checkMirror(mirrored, modelVersion, response);
      const accepted =
        response.status === GradientStatus.ACCEPTED || response.status === GradientStatus.ALREADY_APPLIED;
      this.#timers.countGradient(!accepted);
      if (accepted) {
        this.#stepDone(step.loss, response, modelTaken);
        return true;
      }
      if (response.status === GradientStatus.STALE && attempt < retries) {
        if (response.variables === undefined) await this.#pull(-1, 'training');
        else if (!modelTaken) this.#adopt(response.variables, response.modelVersion);
        continue;
      }
      if (response.status === GradientStatus.TASK_NOT_HELD && slices.length > 1) return false;
      this.#rejected(first, response.status, 'gradient');
      return true;
    }
  }

  /** Takes a model that came back with a gradient's answer, as a pull would. */
  #adopt(variables: readonly NamedTensor[], version: number): void {
    this.#runner.assign(variables, version);
    this.#stepsSincePull = 0;
  }

  async #evaluate(batch: Minibatch, slices: readonly RecordSlice[]): Promise<boolean> {
    const [first, ...rest] = slices as [RecordSlice, ...RecordSlice[]];
    const taskId = first.task.id;
    const metrics = await this.#timers.time('compute_loss', () => this.#runner.computeMetrics(batch), taskId);
    const response = await this.#timers.time(
      'report_gradient',
      () =>
        this.#o.master.reportEvaluationMetrics({
          workerId: this.#o.workerId,
          taskId,
          rangeStart: first.rangeStart,
          rangeEnd: first.rangeEnd,
          modelVersion: first.task.modelVersion,
          metrics,
          ...(rest.length > 0 ? { moreRanges: rest.map(toRangeRef) } : {}),
        }),
      taskId,
    );
    if (response.status === GradientStatus.ACCEPTED || response.status === GradientStatus.ALREADY_APPLIED) {
      return true;
    }
    if (response.status === GradientStatus.TASK_NOT_HELD && slices.length > 1) return false;
    this.#rejected(first, response.status, 'evaluation metrics');
    return true;
  }

  async #predict(batch: Minibatch, slice: RecordSlice): Promise<void> {
    const outputs = await this.#timers.time(
      'compute_loss',
      () => this.#runner.predict(batch.features),
      slice.task.id,
    );
    try {
      await this.#processor?.process(outputs, {
        workerId: this.#o.workerId,
        taskId: slice.task.id,
        shardName: slice.task.shardName,
        start: slice.rangeStart,
      });
    } finally {
      outputs.dispose();
    }
  }

  #rejected(slice: RecordSlice, status: GradientStatus, what: string): void {
    if (status === GradientStatus.TASK_NOT_HELD) {
      // The master took the task back (lease expired, job over): its records are someone else's now.
      this.#dropped.add(slice.task.id);
      this.#logger.warn('task.dropped', { task: slice.task.id, reason: 'not held by this worker any more' });
      return;
    }
    throw new WorkerError(
      'TASK_FAILED',
      `The master refused the ${what} of task ${slice.task.id} records [${slice.rangeStart}, ${slice.rangeEnd}): ${GradientStatus[status]}`,
    );
  }

  async #finishTask(task: TaskAssignment, recordsDone: number): Promise<void> {
    const response = await this.#o.master.reportTaskResult({
      workerId: this.#o.workerId,
      taskId: task.id,
      recordsDone,
    });
    this.#tasksDone++;
    this.#finishedTasks.add(task.id);
    this.#logger.info('task.done', {
      task: task.id,
      kind: taskKindOf(task),
      records: recordsDone,
      accepted: response.accepted,
    });
  }

  async #failTask(task: TaskAssignment, error: string): Promise<void> {
    this.#tasksFailed++;
    this.#logger.warn('task.failed', { task: task.id, error });
    await this.#o.master.reportTaskResult({ workerId: this.#o.workerId, taskId: task.id, error });
  }
}
