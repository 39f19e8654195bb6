// The job status tracker: follows a running master for the live view and the metrics.
import type { WorkerStatsReport } from '@edl/proto';
import type { EvaluationResult } from './evaluation-service.js';
import type { Master } from './master.js';
import type { MasterObserver } from './master-observer.js';
import { EventLog, pushBounded, ThroughputHistory } from './status/histories.js';
import { TaskRows } from './status/task-rows.js';
import type {
  JobEvent,
  JobStatusSnapshot,
  JobStatusTrackerOptions,
  TaskCounts,
  WorkerStatus,
} from './status/types.js';
import { type StepSecondsListener, WorkerTable } from './status/worker-table.js';
import type { TaskManagerEvent } from './tasks/types.js';

export type {
  JobEvent,
  JobStatusSnapshot,
  JobStatusTrackerOptions,
  TaskCounts,
  WorkerStatus,
} from './status/types.js';

/**
 * Follows a running master (as a {@link MasterObserver}) and keeps what the live view and the
 * metrics show: workers with their latest heartbeat counters, task counts per epoch and round,
 * throughput and loss series, evaluation results and the last events. Cheap per call: counters and
 * bounded arrays only; the snapshot is built when asked for.
 */
export class JobStatusTracker implements MasterObserver {
  readonly jobId: string;
  readonly #master: Master;
  readonly #now: () => number;
  readonly #started: number;
  readonly #maxPoints: number;
  readonly #workers = new WorkerTable();
  readonly #rows = new TaskRows();
  readonly #throughput: ThroughputHistory;
  /** [seconds since start, model version, mean loss of the steps since the previous point]. */
  readonly #loss: Array<readonly [number, number, number]> = [];
  readonly #evaluations: EvaluationResult[] = [];
  readonly #events = new EventLog();
  readonly #stepListeners: StepSecondsListener[] = [];
  #relaunches = 0;
  #lastCheckpoint: string | null = null;
  #evaluationTotal = 0;
  /** Records of completed tasks, by kind. */
  readonly #recordsDone = { training: 0, evaluation: 0, prediction: 0 };
  #trainingTotal = 0;
  #lastMeanLoss: number | null = null;
  #ended: number | undefined;
  readonly #timer: NodeJS.Timeout;
  readonly #unobserve: () => void;

  constructor(master: Master, options: JobStatusTrackerOptions) {
    this.jobId = options.jobId;
    this.#master = master;
    this.#now = options.now ?? Date.now;
    this.#started = this.#now();
    this.#maxPoints = options.maxPoints ?? 1200;
    this.#throughput = new ThroughputHistory(this.#maxPoints);
    this.#unobserve = master.observe(this);
    const status = master.status();
    // A job resumed from a checkpoint: the records it did before count as done.
    if (master.taskManager.jobType.startsWith('training')) {
      this.#recordsDone.training = status.recordsDone;
      this.#trainingTotal = status.recordsTotal;
    }
    this.#timer = setInterval(() => this.sample(), options.sampleMs ?? 1000);
    this.#timer.unref();
  }

  /** Stops sampling and observing. */
  close(): void {
    clearInterval(this.#timer);
    this.#unobserve();
  }

  /** Hears each step-time observation (a worker's mean step time over `steps` steps). */
  onStepSeconds(listener: StepSecondsListener): void {
    this.#stepListeners.push(listener);
  }

  onWorkerStarted(workerId: string, restarts: number): void {
    this.#workers.started(workerId, restarts);
    if (restarts > 0) {
      this.#relaunches++;
      this.#event('worker-relaunched', `${workerId} started (restart ${restarts} of its slot)`);
    } else {
      this.#event('worker-started', `${workerId} started`);
    }
  }

  /** Takes one throughput sample (called every `sampleMs`; the snapshot also samples when due). */
  sample(): void {
    if (this.#ended !== undefined) return;
    const at = this.#now();
    this.#throughput.sample(at, this.#recordsProcessed(), this.#seconds(at));
  }

  onTaskEvent(event: TaskManagerEvent): void {
    switch (event.type) {
      case 'epoch-started': {
        const label = this.#rows.epochStarted(event.epoch, event.tasks);
        this.#event('epoch-started', `${label} started: ${event.tasks} tasks, ${event.records} records`);
        return;
      }
      case 'evaluation-started': {
        this.#rows.evaluationStarted(event.round, event.tasks);
        this.#evaluationTotal += event.records;
        this.#event(
          'evaluation',
          `evaluation round ${event.round} of model v${event.modelVersion} started: ${event.tasks} tasks`,
        );
        return;
      }
      case 'task-completed':
      case 'task-recovered': {
        const outcome = event.type === 'task-completed' ? 'done' : event.counted ? 'failed' : 'returned';
        this.#rows.count(event, outcome, () => {
          const status = this.#master.status();
          return status.todoTasks + status.doingTasks;
        });
        if (event.type === 'task-completed' && event.kind !== 'train-end') {
          this.#recordsDone[event.kind] += event.records;
        }
        if (event.type === 'task-recovered') {
          this.#event(
            'task-recovered',
            `task ${event.taskId} of ${event.workerId || 'no worker'} back to todo (${event.remaining} records): ${event.reason}`,
          );
        }
        return;
      }
      case 'evaluation-skipped':
        this.#event('evaluation', `evaluation of model v${event.modelVersion} skipped: ${event.reason}`);
        return;
      case 'job-succeeded':
      case 'job-failed':
        this.sample();
        this.#ended = this.#now();
        this.#event(
          'job-ended',
          event.type === 'job-succeeded' ? 'job succeeded' : `job failed: ${event.error.message}`,
        );
        return;
      default:
        return;
    }
  }

  onHeartbeat(workerId: string, stats: WorkerStatsReport | undefined): void {
    const now = this.#now();
    this.#workers.heartbeat(workerId, stats, now, (id, seconds, steps) => {
      for (const listener of this.#stepListeners) listener(id, seconds, steps);
    });
    if (stats?.meanLoss !== undefined && stats.lossSteps > 0) {
      this.#lastMeanLoss = stats.meanLoss;
      pushBounded(
        this.#loss,
        [this.#seconds(now), this.#master.store.version, stats.meanLoss] as const,
        this.#maxPoints,
      );
    }
  }

  onEvaluation(result: EvaluationResult): void {
    this.#evaluations.push(result);
    const metrics = Object.entries(result.metrics)
      .map(([k, v]) => `${k}=${v.toFixed(4)}`)
      .join(' ');
    this.#event('evaluation', `evaluation round ${result.round} (model v${result.modelVersion}): ${metrics}`);
  }

  onCheckpoint(path: string, modelVersion: number): void {
    this.#lastCheckpoint = path;
    this.#event('checkpoint', `checkpoint of model v${modelVersion} written: ${path}`);
  }

  onWorkerLost(workerId: string, reason: string, recovered: number): void {
    const deliberate = this.#master.taskManager.finished || /code 0$/.test(reason);
    this.#workers.gone(workerId, deliberate);
    if (!deliberate || recovered > 0) {
      this.#event(
        'worker-lost',
        `${workerId} lost: ${reason}${recovered > 0 ? `; ${recovered} task(s) back to todo` : ''}`,
      );
    }
  }

  /** The latest throughput point, [seconds since start, records per second]. */
  get latestThroughput(): readonly [number, number] | undefined {
    return this.#throughput.latest;
  }

  /** Last mean loss any worker reported (null before the first). */
  get lastLoss(): number | null {
    return this.#lastMeanLoss;
  }

  /** The whole state as plain JSON. */
  snapshot(): JobStatusSnapshot {
    const now = this.#ended ?? this.#now();
    const status = this.#master.status();
    const jobType = this.#master.taskManager.jobType;
    const training = jobType.startsWith('training');
    // Later phases (final evaluation, train-end) report their own totals: keep the training one.
    if (training && status.phase === 'training') this.#trainingTotal = status.recordsTotal;
    const done = this.#recordsDone;
    const elapsedSeconds = (now - this.#started) / 1000;
    return {
      job: {
        id: this.jobId,
        type: jobType,
        state: status.state,
        error: status.error?.message ?? null,
        phase: status.phase,
        epoch: status.epoch,
        numEpochs: status.numEpochs,
        modelVersion: status.modelVersion,
        startedAt: new Date(this.#started).toISOString(),
        elapsedSeconds,
        etaSeconds: this.#throughput.eta(status.recordsDone, status.recordsTotal, status.state),
        recordsDone: status.recordsDone,
        recordsTotal: status.recordsTotal,
        records: {
          training: { done: done.training, total: training ? this.#trainingTotal : 0 },
          evaluation: { done: done.evaluation, total: this.#evaluationTotal },
          prediction: {
            done: done.prediction,
            total: jobType === 'prediction' ? status.recordsTotal : 0,
          },
        },
        gradients: this.gradients,
        workerRelaunches: this.#relaunches,
        lastCheckpoint: this.#lastCheckpoint,
      },
      workers: this.#workers.snapshot(),
      tasks: this.#rows.snapshot({ ...status, doingByKind: this.#doingByKind() }),
      throughput: this.#throughput.points(),
      loss: [...this.#loss],
      evaluations: [...this.#evaluations],
      events: this.#events.list(),
    };
  }

  /** The tasks in flight now, by the kind of row they count on (a train-end task has none). */
  #doingByKind(): Partial<Record<TaskCounts['kind'], number>> {
    const counts: Partial<Record<TaskCounts['kind'], number>> = {};
    for (const { kind } of this.#master.taskManager.inFlight()) {
      if (kind === 'training' || kind === 'evaluation' || kind === 'prediction')
        counts[kind] = (counts[kind] ?? 0) + 1;
    }
    return counts;
  }

  /** Task counts of the whole job by state: what `edl_tasks{state}` reports. */
  taskTotals(): Record<'todo' | 'doing' | 'done' | 'failed', number> {
    const status = this.#master.status();
    const { done, failed } = this.#rows.totals();
    return { todo: status.todoTasks, doing: status.doingTasks, done, failed };
  }

  /** Workers by state: what `edl_workers{state}` reports. */
  workerCounts(): Record<WorkerStatus['state'], number> {
    return this.#workers.counts();
  }

  /** Gradient reports by outcome (the master counts them). */
  get gradients(): Readonly<Record<'applied' | 'stale' | 'rejected', number>> {
    const { applied, stale, rejected } = this.#master.gradientOutcomes;
    return { applied, stale, rejected };
  }

  get workerRelaunches(): number {
    return this.#relaunches;
  }

  #recordsProcessed(): number {
    const status = this.#master.status();
    // A training job that failed counts as it did while training (the failure ends the samples).
    const inTraining = status.phase === 'training' || status.phase === 'failed';
    if (this.#master.taskManager.jobType.startsWith('training') && inTraining) {
      return status.recordsDone;
    }
    return Math.max(this.#workers.records(), status.recordsDone);
  }

  #seconds(at: number): number {
    return Math.round(at - this.#started) / 1000;
  }

  #event(type: JobEvent['type'], message: string): void {
    this.#events.add(this.#now(), type, message);
  }
}
