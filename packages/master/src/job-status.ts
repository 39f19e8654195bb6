import type { WorkerStatsReport } from '@edl/proto';
import type { EvaluationResult } from './evaluation-service.js';
import type { Master } from './master.js';
import type { MasterObserver } from './master-observer.js';
import type { RecordCount, TaskManagerEvent } from './task-manager.js';

/** One worker, as the live view shows it. */
export interface WorkerStatus {
  readonly id: string;
  /** `starting` until its first heartbeat; `lost` when it crashed; `exited` when it left. */
  readonly state: 'starting' | 'running' | 'lost' | 'exited';
  readonly backend: string;
  readonly steps: number;
  /** Records processed, all kinds together. */
  readonly records: number;
  /** Over the last heartbeat window. */
  readonly recordsPerSecond: number;
  /** ISO time of the last heartbeat, if any. */
  readonly lastHeartbeat: string | null;
  /** Restarts of the slot this worker runs in (0: the first process of its slot). */
  readonly restarts: number;
  readonly lastLoss: number | null;
  /** Seconds per activity since the worker started (spans overlap when the pipeline prefetches). */
  readonly timers: Readonly<Record<string, number>>;
  readonly elapsedSeconds: number;
}

/** Task counts of one epoch (training) or evaluation round. */
export interface TaskCounts {
  readonly label: string;
  readonly kind: 'training' | 'evaluation' | 'prediction';
  readonly total: number;
  readonly todo: number;
  /** Leased now; the master counts these for the whole job, shown on the active row. */
  readonly doing: number;
  readonly done: number;
  /** Recoveries that counted as a failure (the task went back to todo, or failed the job). */
  readonly failed: number;
}

/** One line of the event list. */
export interface JobEvent {
  readonly time: string;
  readonly type:
    | 'worker-started'
    | 'worker-relaunched'
    | 'worker-lost'
    | 'task-recovered'
    | 'checkpoint'
    | 'epoch-started'
    | 'evaluation'
    | 'job-ended';
  readonly message: string;
}

/** What `GET /api/status` answers and the live page shows. */
export interface JobStatusSnapshot {
  readonly job: {
    readonly id: string;
    readonly type: string;
    readonly state: 'running' | 'succeeded' | 'failed';
    readonly error: string | null;
    readonly phase: string;
    readonly epoch: number;
    readonly numEpochs: number;
    readonly modelVersion: number;
    readonly startedAt: string;
    readonly elapsedSeconds: number;
    /** Seconds left at the recent throughput; null when unknown. */
    readonly etaSeconds: number | null;
    /** Records of the current phase, as in the final job summary. */
    readonly recordsDone: number;
    readonly recordsTotal: number;
    readonly records: Readonly<Record<'training' | 'evaluation' | 'prediction', RecordCount>>;
    readonly gradients: Readonly<Record<'applied' | 'stale' | 'rejected', number>>;
    readonly workerRelaunches: number;
    readonly lastCheckpoint: string | null;
  };
  readonly workers: readonly WorkerStatus[];
  readonly tasks: readonly TaskCounts[];
  /** [seconds since start, records per second]. */
  readonly throughput: ReadonlyArray<readonly [number, number]>;
  /** [seconds since start, model version, mean loss of the steps since the previous point]. */
  readonly loss: ReadonlyArray<readonly [number, number, number]>;
  readonly evaluations: readonly EvaluationResult[];
  /** The last 50, oldest first. */
  readonly events: readonly JobEvent[];
}

/** Options of {@link JobStatusTracker}. */
export interface JobStatusTrackerOptions {
  /** The job's id, shown on the page and carried by log lines. */
  readonly jobId: string;
  /** Throughput sampling period in milliseconds (default 1000). */
  readonly sampleMs?: number;
  /** Points kept per chart series (default 1200). */
  readonly maxPoints?: number;
  /** Time source (tests). */
  readonly now?: () => number;
}

interface WorkerEntry {
  id: string;
  state: WorkerStatus['state'];
  backend: string;
  steps: number;
  records: number;
  recordsPerSecond: number;
  lastHeartbeatMs: number | null;
  restarts: number;
  lastLoss: number | null;
  timers: Record<string, number>;
  elapsedSeconds: number;
  /** Step time seconds (compute_loss + report_gradient) at the previous heartbeat. */
  stepSeconds: number;
}

interface TaskRow {
  label: string;
  kind: TaskCounts['kind'];
  total: number;
  done: number;
  failed: number;
}

const MAX_EVENTS = 50;

/** Keeps at most `max` points by dropping every other point of the older half (resolution halves, range stays). */
function pushBounded<T>(series: T[], point: T, max: number): void {
  series.push(point);
  if (series.length <= max) return;
  const half = Math.floor(series.length / 2);
  const thinned = series.slice(0, half).filter((_, i) => i % 2 === 0);
  series.splice(0, half, ...thinned);
}

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
  readonly #workers = new Map<string, WorkerEntry>();
  readonly #rows = new Map<string, TaskRow>();
  readonly #throughput: Array<readonly [number, number]> = [];
  readonly #loss: Array<readonly [number, number, number]> = [];
  readonly #evaluations: EvaluationResult[] = [];
  readonly #events: JobEvent[] = [];
  readonly #stepListeners: Array<(workerId: string, seconds: number, steps: number) => void> = [];
  #relaunches = 0;
  #lastCheckpoint: string | null = null;
  #evaluationTotal = 0;
  /** Records of completed tasks, by kind. */
  readonly #recordsDone = { training: 0, evaluation: 0, prediction: 0 };
  #trainingTotal = 0;
  #lastSample: { at: number; records: number } | undefined;
  #recent: Array<{ at: number; records: number }> = [];
  #lastMeanLoss: number | null = null;
  #activeRow: string | undefined;
  #ended: number | undefined;
  readonly #timer: NodeJS.Timeout;
  readonly #unobserve: () => void;

  constructor(master: Master, options: JobStatusTrackerOptions) {
    this.jobId = options.jobId;
    this.#master = master;
    this.#now = options.now ?? Date.now;
    this.#started = this.#now();
    this.#maxPoints = options.maxPoints ?? 1200;
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
  onStepSeconds(listener: (workerId: string, seconds: number, steps: number) => void): void {
    this.#stepListeners.push(listener);
  }

  onWorkerStarted(workerId: string, restarts: number): void {
    const entry = this.#worker(workerId);
    entry.restarts = restarts;
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
    const records = this.#recordsProcessed();
    const last = this.#lastSample;
    this.#lastSample = { at, records };
    this.#recent.push({ at, records });
    while (this.#recent.length > 2 && (this.#recent[0]?.at ?? at) < at - 30_000) this.#recent.shift();
    if (last === undefined || at <= last.at) return;
    const rate = Math.max(0, ((records - last.records) * 1000) / (at - last.at));
    pushBounded(this.#throughput, [this.#seconds(at), rate] as const, this.#maxPoints);
  }

  onTaskEvent(event: TaskManagerEvent): void {
    switch (event.type) {
      case 'epoch-started': {
        const label = `epoch ${event.epoch + 1}`;
        this.#rows.set(label, { label, kind: 'training', total: event.tasks, done: 0, failed: 0 });
        this.#activeRow = label;
        this.#event('epoch-started', `${label} started: ${event.tasks} tasks, ${event.records} records`);
        return;
      }
      case 'evaluation-started': {
        const label = `evaluation ${event.round}`;
        this.#rows.set(label, { label, kind: 'evaluation', total: event.tasks, done: 0, failed: 0 });
        this.#evaluationTotal += event.records;
        if (this.#master.taskManager.jobType === 'evaluation') this.#activeRow = label;
        this.#event(
          'evaluation',
          `evaluation round ${event.round} of model v${event.modelVersion} started: ${event.tasks} tasks`,
        );
        return;
      }
      case 'task-completed':
      case 'task-recovered': {
        const row = this.#rowOf(event.kind, event.epoch, event.round);
        if (row !== undefined) {
          if (event.type === 'task-completed') row.done++;
          else if (event.counted) row.failed++;
        }
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
    const entry = this.#worker(workerId);
    const now = this.#now();
    if (entry.state === 'starting') entry.state = 'running';
    if (stats !== undefined) {
      const records = stats.records.training + stats.records.evaluation + stats.records.prediction;
      const window =
        entry.lastHeartbeatMs === null ? stats.elapsedSeconds : (now - entry.lastHeartbeatMs) / 1000;
      if (window > 0) entry.recordsPerSecond = Math.max(0, (records - entry.records) / window);
      const stepSeconds = (stats.timerSeconds.compute_loss ?? 0) + (stats.timerSeconds.report_gradient ?? 0);
      const steps = stats.steps - entry.steps;
      if (steps > 0) {
        const mean = (stepSeconds - entry.stepSeconds) / steps;
        for (const listener of this.#stepListeners) listener(workerId, mean, steps);
      }
      entry.stepSeconds = stepSeconds;
      entry.backend = stats.backend;
      entry.steps = stats.steps;
      entry.records = records;
      entry.lastLoss = stats.lastLoss ?? null;
      entry.timers = { ...stats.timerSeconds };
      entry.elapsedSeconds = stats.elapsedSeconds;
      if (stats.meanLoss !== undefined && stats.lossSteps > 0) {
        this.#lastMeanLoss = stats.meanLoss;
        pushBounded(
          this.#loss,
          [this.#seconds(now), this.#master.store.version, stats.meanLoss] as const,
          this.#maxPoints,
        );
      }
    }
    entry.lastHeartbeatMs = now;
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
    const entry = this.#worker(workerId);
    const deliberate = this.#master.taskManager.finished || /code 0$/.test(reason);
    entry.state = deliberate ? 'exited' : 'lost';
    entry.recordsPerSecond = 0;
    if (!deliberate || recovered > 0) {
      this.#event(
        'worker-lost',
        `${workerId} lost: ${reason}${recovered > 0 ? `; ${recovered} task(s) back to todo` : ''}`,
      );
    }
  }

  /** The latest throughput point, [seconds since start, records per second]. */
  get latestThroughput(): readonly [number, number] | undefined {
    return this.#throughput[this.#throughput.length - 1];
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
        etaSeconds: this.#eta(status.recordsDone, status.recordsTotal, status.state),
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
      workers: [...this.#workers.values()].map((w) => ({
        id: w.id,
        state: w.state,
        backend: w.backend,
        steps: w.steps,
        records: w.records,
        recordsPerSecond: w.recordsPerSecond,
        lastHeartbeat: w.lastHeartbeatMs === null ? null : new Date(w.lastHeartbeatMs).toISOString(),
        restarts: w.restarts,
        lastLoss: w.lastLoss,
        timers: { ...w.timers },
        elapsedSeconds: w.elapsedSeconds,
      })),
      tasks: [...this.#rows.values()].map((row) => {
        const doing =
          status.state === 'running' && row.label === this.#activeRowLabel(status.phase)
            ? status.doingTasks
            : 0;
        return {
          label: row.label,
          kind: row.kind,
          total: row.total,
          todo: Math.max(0, row.total - row.done - doing),
          doing,
          done: row.done,
          failed: row.failed,
        };
      }),
      throughput: [...this.#throughput],
      loss: [...this.#loss],
      evaluations: [...this.#evaluations],
      events: [...this.#events],
    };
  }

  /** Task counts of the whole job by state: what `edl_tasks{state}` reports. */
  taskTotals(): Record<'todo' | 'doing' | 'done' | 'failed', number> {
    const status = this.#master.status();
    let done = 0;
    let failed = 0;
    for (const row of this.#rows.values()) {
      done += row.done;
      failed += row.failed;
    }
    return { todo: status.todoTasks, doing: status.doingTasks, done, failed };
  }

  /** Workers by state: what `edl_workers{state}` reports. */
  workerCounts(): Record<WorkerStatus['state'], number> {
    const counts = { starting: 0, running: 0, lost: 0, exited: 0 };
    for (const w of this.#workers.values()) counts[w.state]++;
    return counts;
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
    let sum = 0;
    for (const w of this.#workers.values()) sum += w.records;
    return Math.max(sum, status.recordsDone);
  }

  #activeRowLabel(phase: string): string | undefined {
    if (phase === 'training') return this.#activeRow;
    const rounds = [...this.#rows.values()].filter((r) => r.kind === 'evaluation');
    return rounds.length > 0 ? rounds[rounds.length - 1]?.label : this.#activeRow;
  }

  #rowOf(
    kind: string | undefined,
    epoch: number | undefined,
    round: number | undefined,
  ): TaskRow | undefined {
    if (kind === 'training' && epoch !== undefined) return this.#rows.get(`epoch ${epoch + 1}`);
    if (kind === 'evaluation' && round !== undefined) return this.#rows.get(`evaluation ${round}`);
    if (kind === 'prediction') {
      let row = this.#rows.get('prediction');
      if (row === undefined) {
        const status = this.#master.status();
        row = {
          label: 'prediction',
          kind: 'prediction',
          total: status.todoTasks + status.doingTasks,
          done: 0,
          failed: 0,
        };
        this.#rows.set('prediction', row);
        this.#activeRow = 'prediction';
      }
      return row;
    }
    return undefined;
  }

  #eta(done: number, total: number, state: string): number | null {
    if (state !== 'running') return 0;
    const first = this.#recent[0];
    const last = this.#recent[this.#recent.length - 1];
    if (first === undefined || last === undefined || last.at <= first.at) return null;
    const rate = ((last.records - first.records) * 1000) / (last.at - first.at);
    if (rate <= 0) return null;
    return Math.max(0, (total - done) / rate);
  }

  #worker(id: string): WorkerEntry {
    let entry = this.#workers.get(id);
    if (entry === undefined) {
      entry = {
        id,
        state: 'starting',
        backend: '',
        steps: 0,
        records: 0,
        recordsPerSecond: 0,
        lastHeartbeatMs: null,
        restarts: 0,
        lastLoss: null,
        timers: {},
        elapsedSeconds: 0,
        stepSeconds: 0,
      };
      this.#workers.set(id, entry);
    }
    return entry;
  }

  #seconds(at: number): number {
    return Math.round(at - this.#started) / 1000;
  }

  #event(type: JobEvent['type'], message: string): void {
    this.#events.push({ time: new Date(this.#now()).toISOString(), type, message });
    if (this.#events.length > MAX_EVENTS) this.#events.shift();
  }
}
