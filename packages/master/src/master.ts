/*
 * Over 500 lines on purpose: the master coordinates the task manager, the parameter store, evaluation
 * and checkpoints in one class so that applying a gradient and advancing its task happen in one
 * synchronous step; the parameter-server parts live in shard-cuts.ts and push-barrier.ts.
 */
import { checkInteger } from '@edl/common';
import {
  type DenseUpdateRef,
  type EvaluationMetricsReport,
  type GetTaskResult,
  type GradientReport,
  GradientStatus,
  type NamedTensor,
  type TaskRangeRef,
  type WorkerStatsReport,
} from '@edl/proto';
import {
  type GradientLedger,
  type GradientOutcomes,
  type ModelReply,
  type ParameterEndpoints,
  ParameterService,
  ParameterStore,
  type ParameterStoreOptions,
  type ReportReply,
} from '@edl/ps';
import {
  type Checkpoint,
  type DensePlacement,
  findCheckpoint,
  loadLatestCheckpoint,
  writeCheckpoint,
} from './checkpoint.js';
import { refuseDensePlacementMismatch } from './dense-placement.js';
import { CheckpointError, type JobFailedError, type MasterErrorCode, MasterStateError } from './errors.js';
import { type EvaluationResult, EvaluationService } from './evaluation-service.js';
import { type JobLearningRateDecay, withJobDecay } from './job-decay.js';
import { createStreamLogger, type MasterLogger } from './logger.js';
import type { MasterObserver } from './master-observer.js';
import { PushBarrier } from './push-barrier.js';
import { type ShardCheckpointWriter, ShardCuts, type ShardRollBack } from './shard-cuts.js';
import { TaskManager } from './task-manager.js';
import { waitAssignment } from './tasks/leases.js';
import { DEFAULT_MINIBATCH_SIZE } from './tasks/settings.js';
import type { TaskManagerEvent, TaskManagerOptions, TaskManagerStatus } from './tasks/types.js';

/** Options of {@link Master}: the task manager's, plus the parameter store, checkpoints and metrics. */
export interface MasterOptions extends Omit<TaskManagerOptions, 'modelVersion' | 'onEvent'> {
  readonly parameterStore?: ParameterStoreOptions;
  /** A learning-rate schedule put on the parameter store's optimizer (`--learning-rate-decay`). */
  readonly learningRateDecay?: JobLearningRateDecay;
  /** Directory of checkpoints; with it the master resumes from the newest one found there. */
  readonly checkpointDir?: string;
  /** Checkpoint every this many model versions (default 0: only at the end of training). */
  readonly checkpointSteps?: number;
  /** Checkpoints kept (default 3). */
  readonly keepCheckpoints?: number;
  /** Resume from the newest checkpoint in checkpointDir if there is one (default true). */
  readonly resume?: boolean;
  /**
   * With parameter-server shards: where the job's dense variables are (`--dense-on`). Checkpoints
   * record it, and resuming from one written with the other placement is refused
   * (DENSE_PLACEMENT_MISMATCH). Left out: neither recorded nor checked.
   */
  readonly denseOn?: DensePlacement;
  /**
   * Load only the model (weights, version) from this checkpoint file or directory (its newest
   * checkpoint): how evaluation and prediction jobs get a trained model.
   */
  readonly modelCheckpoint?: string;
  /** JSON-lines file that receives one line per finished evaluation. */
  readonly metricsFile?: string;
  readonly logger?: MasterLogger;
  /** Hears every accepted gradient, after its range was marked applied (tests, custom sinks). */
  readonly onGradientApplied?: (gradient: GradientReport) => void;
}

/**
 * Metric partial sums of a range (or ranges) of evaluation tasks: a worker's report without its
 * model version (the task holds the version it evaluates).
 */
export type EvaluationReport = Omit<EvaluationMetricsReport, 'modelVersion'>;

/** How bad a refusal is: a report with several ranges answers with its worst. */
const FAILURE_RANK: Record<number, number> = {
  [GradientStatus.ALREADY_APPLIED]: 1,
  [GradientStatus.OUT_OF_ORDER]: 2,
  [GradientStatus.TASK_NOT_HELD]: 3,
};

export type { ShardCheckpointWriter } from './shard-cuts.js';

/** The checkpoint a master resumed from. */
export interface ResumedCheckpoint {
  readonly dir: string;
  readonly version: number;
  /** Whether parameter-server shards wrote shard files for it. */
  readonly hasShardFiles: boolean;
}

/** How a job ended. */
export interface JobResult {
  readonly state: 'succeeded' | 'failed';
  readonly error?: JobFailedError;
  readonly modelVersion: number;
  readonly evaluations: readonly EvaluationResult[];
  /** The last checkpoint written, if any. */
  readonly checkpoint?: string;
}

/** The answer to a getTask call: what a worker's client receives. */
export type TaskReply = GetTaskResult;

/**
 * The master's brain without the network: task manager, parameter store, evaluation service and
 * checkpoints, coordinated so that applying a gradient and advancing its task's progress happen in
 * one synchronous step (JavaScript runs it to completion: nothing can interleave). The gRPC server
 * and the instance manager call into it.
 */
export class Master implements ParameterEndpoints {
  #taskManager: TaskManager;
  readonly store: ParameterStore;
  /** The store's gradient path, with the task manager's ranges as its ledger. */
  readonly #parameters: ParameterService;
  readonly evaluation: EvaluationService;
  readonly logger: MasterLogger;
  readonly #options: MasterOptions;
  readonly #checkpointSteps: number;
  readonly #stopRequested = new Set<string>();
  #checkpointWrites: Promise<void> = Promise.resolve();
  #lastCheckpoint: string | undefined;
  /** The checkpoints and roll-backs of a job with parameter-server shards. */
  #shards: ShardCuts | undefined;
  readonly #rollBacks: ShardRollBack[] = [];
  /** Pauses step acceptance until every accepted step's rows push reached the shards. */
  readonly #pushes = new PushBarrier();
  /** Each worker's last accepted update, for the dense push of a step resent after a lost answer. */
  readonly #lastUpdates = new Map<string, DenseUpdateRef>();
  /** The state before the first step was applied: the cut of a roll-back before any checkpoint. */
  #startCut: Checkpoint | undefined;
  #resumedFrom: ResumedCheckpoint | undefined;
  #settle!: (result: JobResult) => void;
  readonly #done: Promise<JobResult>;
  #ended = false;
  readonly #observers: MasterObserver[] = [];

  /** Use {@link Master.create}, which also resumes from a checkpoint. */
  constructor(options: MasterOptions) {
    this.#options = options;
    this.logger = options.logger ?? createStreamLogger();
    this.#checkpointSteps = checkInteger(options.checkpointSteps ?? 0, 'checkpointSteps', 0);
    checkInteger(options.keepCheckpoints ?? 3, 'keepCheckpoints', 1);
    this.store = new ParameterStore(
      withJobDecay(options.parameterStore, options.learningRateDecay, {
        shards: options.trainingShards ?? [],
        minibatchSize: options.minibatchSize ?? DEFAULT_MINIBATCH_SIZE,
        numEpochs: options.numEpochs ?? 1,
      }),
    );
    this.#parameters = new ParameterService(this.store, this.#ledger());
    this.evaluation = new EvaluationService(options.metricsFile, (result) => {
      this.logger.info(`evaluation of model version ${result.modelVersion}`, {
        ...result.metrics,
        records: result.records,
      });
      for (const o of this.#observers) o.onEvaluation?.(result);
    });
    this.#done = new Promise((resolve) => {
      this.#settle = resolve;
    });
    this.#taskManager = this.#newTaskManager();
  }

  /** The task manager: replaced by a fresh one, restored from a checkpoint, when the job rolls back. */
  get taskManager(): TaskManager {
    return this.#taskManager;
  }

  #newTaskManager(): TaskManager {
    return new TaskManager({
      ...this.#options,
      modelVersion: () => this.store.version,
      onEvent: (event) => this.#onTaskEvent(event),
    });
  }

  /** Builds a master and, when `checkpointDir` holds a checkpoint (and `resume` is not false), resumes it. */
  static async create(options: MasterOptions): Promise<Master> {
    const master = new Master(options);
    if (options.checkpointDir !== undefined && options.resume !== false) {
      const found = await loadLatestCheckpoint(options.checkpointDir, (error) =>
        master.logger.warn(`skipping checkpoint: ${error.message}`),
      );
      if (found !== undefined) {
        if (options.denseOn !== undefined)
          await refuseDensePlacementMismatch(found, options.checkpointDir, options.denseOn);
        master.restore(found.checkpoint);
        master.#resumedFrom = {
          dir: options.checkpointDir,
          version: found.checkpoint.store.version,
          hasShardFiles: found.checkpoint.parameterServers !== undefined,
        };
        master.logger.info(`resumed from checkpoint ${found.path}`, {
          modelVersion: found.checkpoint.store.version,
          recordsDone: found.checkpoint.taskManager.recordsDone,
        });
      }
    }
    if (options.modelCheckpoint !== undefined && !master.store.initialized) {
      const path = options.modelCheckpoint;
      const checkpoint = (await findCheckpoint(path))?.checkpoint;
      if (checkpoint === undefined) {
        throw new CheckpointError('NOT_FOUND', `No checkpoint found in ${path} for modelCheckpoint`, path);
      }
      master.store.restore({ ...checkpoint.store, optimizerStep: 0, slots: new Map() });
      master.logger.info(`model loaded from checkpoint ${path}`, { modelVersion: checkpoint.store.version });
    }
    if (master.taskManager.finished) {
      master.logger.warn('the checkpoint holds a job that already ended');
      master.#end();
    }
    return master;
  }

  /** Adds an observer of what happens in the master (the live view, metrics); returns its removal. */
  observe(observer: MasterObserver): () => void {
    this.#observers.push(observer);
    return () => {
      const at = this.#observers.indexOf(observer);
      if (at >= 0) this.#observers.splice(at, 1);
    };
  }

  /** Resolves when the job ends (never rejects: a failed job resolves with state 'failed'). */
  get done(): Promise<JobResult> {
    return this.#done;
  }

  getTask(workerId: string): TaskReply {
    // No task during a pause: a roll-back is about to replace the task state.
    if (this.#pushes.paused && !this.taskManager.finished)
      return {
        task: waitAssignment(this.store.version, this.taskManager.status().epoch, this.taskManager.leaseMs),
        jobFinished: false,
        jobError: '',
      };
    const task = this.taskManager.getTask(workerId);
    if (task !== undefined) return { task, jobFinished: false, jobError: '' };
    return { jobFinished: true, jobError: this.taskManager.error?.message ?? '' };
  }

  reportTaskResult(workerId: string, taskId: number, recordsDone: number, error: string): boolean {
    this.#pushes.confirmed(workerId);
    if (error !== '') this.logger.warn(`worker ${workerId} reports task ${taskId} failed`, { error });
    return this.taskManager.reportTaskResult(workerId, taskId, recordsDone, error);
  }

  /**
   * The model at `version` (< 0: the latest). With `haveVersion`, the version the worker already
   * holds, an unchanged model comes back without its variables (`unchanged: true`).
   */
  getModel(version: number, haveVersion?: number, wantOptimizer = false): ModelReply {
    return this.#parameters.getModel(version, haveVersion, wantOptimizer);
  }

  /** What became of the gradients pushed so far. */
  get gradientOutcomes(): GradientOutcomes {
    return this.#parameters.gradientOutcomes;
  }

  reportVariables(
    workerId: string,
    variables: readonly NamedTensor[],
  ): { accepted: boolean; version: number } {
    const reply = this.#parameters.reportVariables(workerId, variables);
    if (reply.accepted) this.logger.info(`model initialised by ${workerId}`, { variables: variables.length });
    return reply;
  }

  /**
   * Exactly-once gradient path: check the range (task held, next unapplied range), check staleness,
   * then apply and advance progress together. Nothing between the checks and the writes awaits.
   */
  reportGradient(report: GradientReport): ReportReply {
    // Sent after the rows push of this worker's previous step was answered (push-barrier.ts).
    this.#pushes.confirmed(report.workerId);
    if (this.#pushes.paused) {
      // Not applied: the worker computes the step again once the pause is over.
      return {
        status: GradientStatus.STALE,
        modelVersion: this.store.version,
        taskProgress: report.rangeStart,
      };
    }
    if (this.#startCut === undefined && this.store.initialized) this.#startCut = this.#snapshot();
    let reply = this.#parameters.reportGradient(report);
    // Tracked before the shards are known too: a pause may follow their arrival at once.
    if (reply.status === GradientStatus.ACCEPTED || reply.status === GradientStatus.ALREADY_APPLIED)
      this.#pushes.accepted(
        report.workerId,
        report.modelVersion,
        reply.status === GradientStatus.ALREADY_APPLIED,
      );
    // A resent step whose first answer was lost pushes its dense gradient with the update it joined.
    if (reply.update !== undefined) this.#lastUpdates.set(report.workerId, reply.update);
    else if (reply.status === GradientStatus.ALREADY_APPLIED && report.wantUpdate === true) {
      const update = this.#lastUpdates.get(report.workerId);
      if (update !== undefined) reply = { ...reply, update };
    }
    return reply;
  }

  /** The task manager's side of the gradient path (see {@link GradientLedger}). */
  #ledger(): GradientLedger {
    return {
      checkRanges: (report) => this.#checkRanges(report.workerId, report, 'training'),
      keepsVersion: (version) => this.taskManager.evaluationVersion === version,
      recordApplied: (report, versionChanged) => {
        const progress = this.#advance(report);
        this.#options.onGradientApplied?.(report);
        if (versionChanged) this.#onNewVersion();
        return progress;
      },
    };
  }

  /** Exactly-once metrics path: the same range discipline as gradients. */
  reportEvaluationMetrics(report: EvaluationReport): ReportReply {
    this.#pushes.confirmed(report.workerId);
    const ranges = this.#checkRanges(report.workerId, report, 'evaluation');
    if (!ranges.ok) return ranges.reply;
    const records = [report, ...(report.moreRanges ?? [])].reduce((n, r) => n + r.rangeEnd - r.rangeStart, 0);
    this.evaluation.add(ranges.round, report.metrics, records);
    const progress = this.#advance(report);
    return { status: GradientStatus.ACCEPTED, modelVersion: this.store.version, taskProgress: progress };
  }

  /**
   * Checks every range of a report (the first task's, then `moreRanges`). All must be held and next
   * in line; otherwise nothing is applied and the reply says why, the worst reason first.
   */
  #checkRanges(
    workerId: string,
    report: TaskRangeRef & { readonly moreRanges?: readonly TaskRangeRef[] },
    kind: 'training' | 'evaluation',
  ): { ok: true; round: number } | { ok: false; reply: ReportReply } {
    const ranges = [report, ...(report.moreRanges ?? [])];
    const seen = new Set<number>();
    let failure: GradientStatus | undefined;
    let anyOk = false;
    let progress = -1;
    let round = 0;
    for (const [i, r] of ranges.entries()) {
      if (seen.has(r.taskId)) {
        throw new RangeError(`Expected one range per task in a report but received task ${r.taskId} twice`);
      }
      seen.add(r.taskId);
      const check = this.taskManager.checkRange(workerId, r.taskId, r.rangeStart, r.rangeEnd);
      if (!check.ok) {
        if (i === 0) progress = check.progress;
        if (failure === undefined || (FAILURE_RANK[check.status] ?? 0) > (FAILURE_RANK[failure] ?? 0))
          failure = check.status;
        continue;
      }
      anyOk = true;
      if (check.kind !== kind) {
        throw new MasterStateError(
          'WRONG_TASK_TYPE',
          `Task ${r.taskId} is a ${check.kind} task, not a ${kind} task`,
        );
      }
      if (i === 0) round = check.round;
    }
    if (failure === undefined) return { ok: true, round };
    // Some ranges applied before and some not cannot come from a resend: the batch is out of line.
    const status =
      failure === GradientStatus.ALREADY_APPLIED && anyOk ? GradientStatus.OUT_OF_ORDER : failure;
    return { ok: false, reply: { status, modelVersion: this.store.version, taskProgress: progress } };
  }

  /** Advances every range of a checked report; returns the first task's progress. */
  #advance(report: TaskRangeRef & { readonly moreRanges?: readonly TaskRangeRef[] }): number {
    const { progress } = this.taskManager.advance(report.taskId, report.rangeEnd);
    for (const r of report.moreRanges ?? []) this.taskManager.advance(r.taskId, r.rangeEnd);
    return progress;
  }

  heartbeat(workerId: string, stats?: WorkerStatsReport): { shouldStop: boolean; modelVersion: number } {
    this.taskManager.heartbeat(workerId);
    for (const o of this.#observers) o.onHeartbeat?.(workerId, stats);
    return {
      shouldStop: this.taskManager.finished || this.#stopRequested.has(workerId),
      modelVersion: this.store.version,
    };
  }

  /** Asks a worker (through its heartbeats) to leave. */
  requestStop(workerId: string): void {
    this.#stopRequested.add(workerId);
  }

  /** The instance manager started a worker (`restarts` > 0: it replaces a lost one). */
  workerStarted(workerId: string, restarts: number): void {
    for (const o of this.#observers) o.onWorkerStarted?.(workerId, restarts);
  }

  /** Sends the tasks of a vanished worker back to todo; a crash counts against the task it was processing only. */
  workerLost(workerId: string, reason: string, countAsFailure: boolean): number {
    this.#stopRequested.delete(workerId);
    this.#lastUpdates.delete(workerId);
    this.#settleLostPush(workerId);
    const recovered = this.taskManager.recoverWorker(workerId, reason, countAsFailure);
    if (recovered > 0) this.logger.warn(`recovered ${recovered} task(s) of ${workerId}`, { reason });
    for (const o of this.#observers) o.onWorkerLost?.(workerId, reason, recovered);
    return recovered;
  }

  /**
   * A dead worker pushes nothing more: what of its push arrived is all there will be. With a push
   * on the way, the shards say whether it arrived whole; if not, the job rolls back to its last cut
   * (ShardCuts.lostPush), or the step's dense update would stand without its rows update.
   */
  #settleLostPush(workerId: string): void {
    const step = this.#pushes.onTheWay(workerId);
    if (step === undefined || this.#shards === undefined || this.#ended) {
      this.#pushes.forget(workerId);
      return;
    }
    this.#shards
      .lostPush(workerId, step, this.#options.checkpointDir)
      .catch((error: unknown) =>
        this.fail(
          'PS_RESTARTS_EXHAUSTED',
          `The job could not roll back after worker ${workerId} was lost with its rows push: ${String(error)}`,
        ),
      )
      .finally(() => this.#pushes.forget(workerId));
  }

  /** Fails the job from outside (the instance manager ran out of restarts). */
  fail(code: MasterErrorCode, message: string): void {
    this.taskManager.fail(code, message);
  }

  status(): TaskManagerStatus & { modelVersion: number } {
    return { ...this.taskManager.status(), modelVersion: this.store.version };
  }

  /** Writes a checkpoint of the current state now; resolves to its path. */
  checkpoint(): Promise<string> {
    const dir = this.#options.checkpointDir;
    if (dir === undefined)
      return Promise.reject(new MasterStateError('NO_CHECKPOINT_DIR', 'No checkpointDir configured'));
    return this.#enqueueCheckpoint(dir);
  }

  /** The checkpoint this master resumed from, if it did. */
  get resumedFrom(): ResumedCheckpoint | undefined {
    return this.#resumedFrom;
  }

  /**
   * Makes every later checkpoint cover the job's parameter-server shards, with the exact barrier
   * (docs/master.md): each shard writes its shard files first, and the master's own file, written
   * last, commits them; `onCommitted` hears each committed version (a relaunched shard starts from
   * it). {@link onShardRelaunched} rolls the job back through `writer`.
   */
  useParameterServers(
    writer: ShardCheckpointWriter,
    onCommitted: (version: number) => void = () => {},
  ): void {
    this.#shards = new ShardCuts(writer, onCommitted, this.#pushes, {
      logger: this.logger,
      leaseMs: () => this.taskManager.leaseMs,
      snapshot: () => this.#snapshot(),
      denseOn: this.#options.denseOn,
      startCut: () => this.#startCut,
      // Past every version a worker holds, by more than the staleness allowed: older gradients are STALE.
      rollBackVersion: () => this.store.version + this.store.maxStaleness + 1,
      applyCut: (cut, version) => this.#applyCut(cut, version),
      rolledBack: (rollBack) => this.#rollBacks.push(rollBack),
    });
  }

  /**
   * The job-wide roll-backs so far, each after a parameter-server shard was relaunched or a worker
   * was lost with its rows push missing at a shard.
   */
  get rollBacks(): readonly ShardRollBack[] {
    return this.#rollBacks;
  }

  /**
   * Rolls the whole job back to its last committed cut after parameter-server shard `shardIndex`
   * died and was relaunched (by the local job runner, or by the Kubernetes instance manager when it
   * recreates a PS pod): call it as soon as the death is known. Steps pause until every accepted
   * step's rows push was answered; once `ready` resolves (the relaunched shard listens), every shard
   * restores the last committed checkpoint (RestoreShard; before the first checkpoint, the
   * initializer), and the master restores its dense model and task state from the same checkpoint
   * (before the first, the state before the first step was applied: tasks from the job's start), as a
   * master resumed after a kill does. The records trained since the cut are dispatched again and
   * counted again. The model version keeps rising, above every version a worker holds, so that no
   * gradient computed before the roll-back is applied: each comes back STALE and is computed again
   * on the restored model. Resolves when steps resume; a failed roll-back fails the job.
   */
  onShardRelaunched(shardIndex: number, ready: Promise<unknown> = Promise.resolve()): Promise<void> {
    if (this.#shards === undefined || this.#ended) return Promise.resolve();
    return this.#shards
      .rollBack(shardIndex, ready, this.#options.checkpointDir)
      .catch((error: unknown) =>
        this.fail(
          'PS_RESTARTS_EXHAUSTED',
          `The job could not roll back after parameter-server shard ${shardIndex} was relaunched: ${String(error)}`,
        ),
      );
  }

  /**
   * Puts the master back to `cut` (see {@link onShardRelaunched}): the dense model and optimizer
   * state at a version above every version handed out so far, and a fresh task manager restored
   * from the cut's task state. The cut's unfinished tasks get ids never handed out: a worker keeps
   * ignoring a task id it was told it no longer holds.
   */
  #applyCut(cut: Checkpoint, version: number): { recordsRolledBack: number; modelVersion: number } {
    const recordsBefore = this.taskManager.status().recordsDone;
    this.store.restore({ ...cut.store, version });
    const firstId = this.#taskManager.toJSON().nextTaskId;
    const tasks = cut.taskManager.tasks.map((task, i) => ({ ...task, id: firstId + i }));
    this.#taskManager = this.#newTaskManager();
    this.#taskManager.restore({ ...cut.taskManager, tasks, nextTaskId: firstId + tasks.length });
    return {
      recordsRolledBack: recordsBefore - this.taskManager.status().recordsDone,
      modelVersion: version,
    };
  }

  /** Resolves when queued checkpoint and metrics writes are on disk. */
  async flush(): Promise<void> {
    await this.#checkpointWrites;
    await this.evaluation.flush();
  }

  /** Applies a checkpoint (weights, optimizer slots, version, task manager state). */
  restore(checkpoint: Checkpoint): void {
    if (checkpoint.optimizer.type !== this.store.optimizer.config.type) {
      throw new MasterStateError(
        'OPTIMIZER_MISMATCH',
        `The checkpoint was made with the ${checkpoint.optimizer.type} optimizer, not ${this.store.optimizer.config.type}`,
      );
    }
    this.store.restore(checkpoint.store);
    this.taskManager.restore(checkpoint.taskManager);
  }

  #onNewVersion(): void {
    const version = this.store.version;
    const dir = this.#options.checkpointDir;
    if (dir !== undefined && this.#checkpointSteps > 0 && version % this.#checkpointSteps === 0) {
      this.#enqueueCheckpoint(dir).catch(() => {});
    }
    this.taskManager.onModelVersion(version);
  }

  /** Captures the state synchronously (consistent by construction) and writes it in order. */
  #enqueueCheckpoint(dir: string): Promise<string> {
    const shards = this.#shards;
    if (shards !== undefined)
      return this.#queueWrite(shards.checkpoint(dir, this.#options.keepCheckpoints ?? 3));
    const snapshot = this.#snapshot();
    const keep = this.#options.keepCheckpoints ?? 3;
    return this.#queueWrite(
      this.#checkpointWrites.then(async () => ({
        path: await writeCheckpoint(dir, snapshot, keep),
        version: snapshot.store.version,
      })),
    );
  }

  #snapshot(): Checkpoint {
    return {
      store: this.store.snapshot(),
      optimizer: this.store.optimizer.config,
      taskManager: this.taskManager.toJSON(),
    };
  }

  /** Logs a checkpoint once `write` committed it and tells the observers; `flush` waits for it. */
  #queueWrite(write: Promise<{ path: string; version: number; pausedMs?: number }>): Promise<string> {
    const logged = write.then(
      ({ path, version, pausedMs }) => {
        this.#lastCheckpoint = path;
        this.logger.info(`checkpoint written: ${path}`, {
          modelVersion: version,
          ...(pausedMs === undefined ? {} : { pausedMs: Math.round(pausedMs) }),
        });
        for (const o of this.#observers) o.onCheckpoint?.(path, version);
      },
      (error: unknown) => this.logger.error(`checkpoint failed: ${String(error)}`),
    );
    const before = this.#checkpointWrites;
    this.#checkpointWrites = Promise.all([before, logged]).then(() => undefined);
    return write.then((w) => w.path);
  }

  #onTaskEvent(event: TaskManagerEvent): void {
    for (const o of this.#observers) o.onTaskEvent?.(event);
    switch (event.type) {
      case 'epoch-started':
        this.logger.info(`epoch ${event.epoch} started`, { tasks: event.tasks, records: event.records });
        return;
      case 'evaluation-started':
        this.evaluation.startRound(event.round, event.modelVersion);
        this.logger.info(`evaluation round ${event.round} of model version ${event.modelVersion} started`, {
          tasks: event.tasks,
          records: event.records,
        });
        return;
      case 'evaluation-completed':
        this.evaluation.completeRound(event.round);
        if (event.modelVersion !== this.store.version) this.store.unpin(event.modelVersion);
        return;
      case 'evaluation-skipped':
        this.logger.warn(`evaluation of model version ${event.modelVersion} skipped: ${event.reason}`);
        return;
      case 'task-recovered':
        this.logger.warn(`task ${event.taskId} back to todo with ${event.remaining} record(s)`, {
          worker: event.workerId,
          reason: event.reason,
          failures: event.failures,
          counted: event.counted,
        });
        return;
      case 'job-succeeded':
        this.logger.info('job succeeded', { modelVersion: this.store.version });
        this.#end();
        return;
      case 'job-failed':
        this.logger.error(`job failed: ${event.error.code}: ${event.error.message}`, {
          code: event.error.code,
        });
        this.#end();
        return;
    }
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    const dir = this.#options.checkpointDir;
    const succeeded = this.taskManager.error === undefined;
    const finalCheckpoint =
      dir !== undefined &&
      succeeded &&
      this.store.initialized &&
      this.taskManager.jobType.startsWith('training')
        ? this.#enqueueCheckpoint(dir).then(
            () => undefined,
            () => undefined,
          )
        : Promise.resolve(undefined);
    void finalCheckpoint
      .then(() => this.flush())
      .catch((error: unknown) => this.logger.error(`flushing at job end failed: ${String(error)}`))
      .then(() => {
        const error = this.taskManager.error;
        this.#settle({
          state: error ? 'failed' : 'succeeded',
          ...(error ? { error } : {}),
          modelVersion: this.store.version,
          evaluations: this.evaluation.results,
          ...(this.#lastCheckpoint !== undefined ? { checkpoint: this.#lastCheckpoint } : {}),
        });
      });
  }
}
