import { availableParallelism } from 'node:os';
import { describeValue } from '@edl/common';
import type { DataReader } from '@edl/data';
import {
  type DataPipelineReport,
  type EmbeddingClient,
  MasterRpcError,
  type NamedTensor,
  type StorageStatsReport,
  type TaskAssignment,
  taskKindOf,
} from '@edl/proto';
import { tf } from '../hooks/tfjs-commonjs.mjs';
import { taskErrorText, type WorkerError } from './errors.js';
import { silentLogger, type WorkerLogger } from './logger.js';
import type { MasterConnection } from './master-connection.js';
import { MasterWatch } from './master-watch.js';
import { minibatchSize, minibatchTensors, sliceMinibatch } from './minibatch-slice.js';
import type { Minibatch, Mode, ModelDefinition, PredictionOutputsProcessor } from './model-definition.js';
import { ModelRunner } from './model-runner.js';
import { JsonLinesPredictionWriter } from './prediction-writer.js';
import { prefetch } from './prefetch.js';
import type { DensePlacementFunction } from './steps/dense-on-shards.js';
import { stepEmbeddings } from './steps/embedding-rows.js';
import { evaluateStep } from './steps/evaluation-step.js';
import { MirroredModel } from './steps/mirrored-model.js';
import { PlainSteps } from './steps/plain-step.js';
import { predictStep } from './steps/prediction-step.js';
import { PushAhead } from './steps/push-ahead.js';
import type { StepContext } from './steps/step-context.js';
import { TaskAccounting } from './steps/task-accounting.js';
import { TaskFeed } from './task-feed.js';
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
  /**
   * Counters of the remote byte sources the readers read from, sent with every heartbeat so the
   * master's `/metrics` and live view show requests, bytes, retries and latency while the job runs.
   */
  readonly storageStats?: () => readonly StorageStatsReport[];
  /** The data pipeline's tuner (budgets, `'auto'` settings, measured rates), sent with every heartbeat. */
  readonly dataPipelineStats?: () => DataPipelineReport | undefined;
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
  /**
   * The job's parameter-server shards (`--ps-addresses`), required by a model with distributed
   * embedding layers: each training step pulls the rows of its minibatch's ids from them and pushes
   * the rows gradients back once the master has applied the step's dense gradient. Such a model
   * neither mirrors updates nor pushes ahead (see docs/worker.md).
   */
  readonly parameterServers?: EmbeddingClient;
  /**
   * Hold the model's dense variables on the parameter-server shards too, placed by this function
   * (`placeDenseVariables` of @edl/ps), as the job's master and shards do (`--dense-on shards`, the
   * default of a job with `--num-ps`): the master then only arbitrates steps, and each step pushes
   * its dense gradient to the shards with its rows and pulls the next model from them.
   */
  readonly denseOnShards?: DensePlacementFunction;
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

/**
 * The loop of one worker: tasks from the feed, segments of one mode through `datasetFn` and the
 * prefetcher, each minibatch handed to the step strategy of its mode (plain, push-ahead with or
 * without a mirrored model, evaluation, prediction; see steps/), heartbeats meanwhile.
 */
class WorkerLoop<TRecord> {
  readonly #o: WorkerOptions<TRecord>;
  readonly #logger: WorkerLogger;
  readonly #timers: Timers;
  readonly #feed: TaskFeed<TRecord>;
  readonly #runner: ModelRunner;
  readonly #processor: PredictionOutputsProcessor | undefined;
  readonly #tasks: TaskAccounting;
  readonly #model: MirroredModel;
  readonly #stepContext: StepContext;
  readonly #plain: PlainSteps;
  readonly #ahead: PushAhead;
  #stopRequested = false;
  /**
   * Why this worker cannot step (a model with distributed embeddings and no shards): the first
   * task fails with it, and since its code is fatal the master fails the job with this one line
   * instead of restarting the worker.
   */
  #setupError: WorkerError | undefined;

  constructor(options: WorkerOptions<TRecord>) {
    this.#o = options;
    this.#logger = options.logger ?? silentLogger;
    this.#timers = options.timers ?? new Timers();
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
    const { master, workerId } = options;
    const { embeddings, setupError } = stepEmbeddings(this.#runner.model, options, this.#logger);
    this.#setupError = setupError;
    this.#tasks = new TaskAccounting(master, workerId, this.#logger);
    this.#model = new MirroredModel({
      master,
      workerId,
      runner: this.#runner,
      timers: this.#timers,
      logger: this.#logger,
      getModelSteps: options.getModelSteps ?? 1,
      mirrorUpdates: options.mirrorUpdates !== false && embeddings === undefined,
      ...(embeddings?.dense === undefined
        ? {}
        : { dense: { shards: embeddings.dense, servers: embeddings.servers } }),
    });
    this.#stepContext = {
      master,
      workerId,
      runner: this.#runner,
      timers: this.#timers,
      logger: this.#logger,
      model: this.#model,
      tasks: this.#tasks,
      ...(embeddings === undefined ? {} : { embeddings }),
    };
    this.#plain = new PlainSteps(this.#stepContext, options.maxStaleRetries ?? Number.POSITIVE_INFINITY);
    this.#ahead = new PushAhead(
      this.#stepContext,
      this.#plain,
      embeddings === undefined ? (options.pushAhead ?? false) : false,
    );
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
              await this.#model.pull(-1, 'training');
              await this.#o.onTrainEnd(this.#runner);
            }
          } catch (error) {
            if (error instanceof MasterRpcError) throw error;
            await this.#tasks.failTask(head, `train-end callback failed: ${(error as Error).message}`);
            continue;
          }
          await this.#tasks.finishTask(head, 0);
          continue;
        }
        await this.#runSegment(head);
      }
    } finally {
      clearInterval(this.#heartbeatTimer);
      this.#timers.stop();
      this.#stepContext.embeddings?.servers.close();
      await this.#processor?.close?.();
    }
    if (this.#feed.jobError) this.#logger.warn('job.failed', { error: this.#feed.jobError });
    return {
      steps: this.#tasks.steps,
      records: this.#tasks.recordsByMode(),
      tasksDone: this.#tasks.tasksDone,
      tasksFailed: this.#tasks.tasksFailed,
      lastLoss: this.#tasks.lastLoss,
      jobError: this.#feed.jobError,
      timers: this.#timers.toJSON(),
    };
  }

  async #heartbeat(): Promise<void> {
    try {
      const live = this.#tasks.liveStats(this.#o.backend ?? tf.getBackend() ?? '', this.#timers);
      const storage = this.#o.storageStats?.() ?? [];
      const dataPipeline = this.#o.dataPipelineStats?.();
      const stats = {
        ...live,
        ...(storage.length === 0 ? {} : { storage }),
        ...(dataPipeline === undefined ? {} : { dataPipeline }),
      };
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
      if (this.#setupError !== undefined) throw this.#setupError;
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
      await this.#ahead.settle();
    } catch (error) {
      await iterator?.return(undefined).catch(() => undefined);
      // A step pushed ahead is answered first: its records count if the master applied them.
      await this.#ahead.settle().catch(() => undefined);
      if (error instanceof MasterRpcError) throw error;
      const message = taskErrorText(error);
      this.#logger.warn('segment.failed', { mode, error: message });
      const failed = this.#feed.drain().map((pending) => pending.task);
      // A datasetFn that failed before reading a record never opened the head task, which this
      // worker holds all the same: unreported, its lease would be renewed by heartbeats forever.
      if (!this.#tasks.isFinished(head.id) && !failed.some((task) => task.id === head.id))
        failed.unshift(head);
      for (const task of failed) await this.#tasks.failTask(task, message);
      return;
    }
    await iterator.return(undefined);
    for (const pending of this.#feed.drain()) {
      if (this.#stopRequested) break;
      if (pending.consumed === pending.total) await this.#tasks.finishTask(pending.task, pending.total);
      else {
        await this.#tasks.failTask(
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
      await this.#model.pull(head.modelVersion, mode);
      // The next training step must start from the latest model, not from this snapshot.
      this.#model.duePull();
    } else if (this.#runner.version < 0) {
      await this.#model.pull(-1, mode);
    }
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
      if (
        ranged.length > 1 &&
        mode !== 'prediction' &&
        !ranged.some((s) => this.#tasks.isDropped(s.task.id))
      ) {
        await this.#ahead.settle();
        together =
          mode === 'training'
            ? await this.#plain.train(batch, ranged)
            : await evaluateStep(this.#stepContext, batch, ranged);
        if (together) for (const slice of ranged) this.#tasks.countRecords(mode, slice);
      }
      for (const slice of slices) {
        if (this.#tasks.isDropped(slice.task.id)) continue;
        if (!together && slice.count > 0) {
          const part = slices.length === 1 ? batch : sliceMinibatch(batch, slice.offset, slice.count);
          try {
            if (mode === 'training' && this.#ahead.runsAhead) {
              await this.#ahead.train(part, slice);
            } else {
              if (mode === 'training') await this.#plain.train(part, [slice]);
              else if (mode === 'evaluation') await evaluateStep(this.#stepContext, part, [slice]);
              else await predictStep(this.#stepContext, this.#processor, part, slice);
              this.#tasks.countRecords(mode, slice);
            }
          } finally {
            if (part !== batch && !this.#ahead.holds(part)) tf.dispose(minibatchTensors(part));
          }
        }
        // A task is reported done only once its last gradient is applied: with that gradient still
        // pushed ahead, the report waits for its answer (and compute goes on meanwhile).
        if (
          slice.completesTask &&
          !this.#ahead.finishTaskOnAnswer(slice) &&
          !this.#tasks.isDropped(slice.task.id)
        ) {
          await this.#tasks.finishTask(slice.task, slice.task.end - slice.task.start);
        }
        this.#o.onProgress?.({
          mode,
          taskId: slice.task.id,
          epoch: slice.task.epoch,
          records: this.#tasks.records(mode),
          steps: this.#tasks.steps,
          loss: this.#tasks.lastLoss,
          modelVersion: this.#runner.version,
        });
      }
    } finally {
      if (!this.#ahead.holds(batch)) tf.dispose(minibatchTensors(batch));
    }
  }
}
