/**
 * The timed activities of a worker (seed 004's table, plus `get_task` and `data_wait`).
 * `data_wait` is the time the compute loop sat waiting for its next minibatch: with the shared
 * prefetching dataset, `get_batch` and `input_fn` overlap compute and only `data_wait` is lost.
 */
export const TIMER_NAMES = [
  'get_task',
  'get_batch',
  'input_fn',
  'data_wait',
  'compute_loss',
  'get_model',
  'report_gradient',
] as const;

/** One timed activity. */
export type TimerName = (typeof TIMER_NAMES)[number];

/** Seconds and number of spans of one activity. */
export interface TimerTotal {
  seconds: number;
  count: number;
}

/** Totals per activity. */
export type TimerTotals = Record<TimerName, TimerTotal>;

/** Gradient computations of a worker: those the master applied, and those it refused (wasted). */
export interface GradientComputations {
  /** Gradients computed (forward and backward passes of training minibatches). */
  computed: number;
  /** Computed but not applied (too stale, refused): the work was done again or lost. */
  wasted: number;
}

/** The JSON of `--stats`: job totals, wall time and per-task totals. */
export interface TimersReport {
  readonly totalSeconds: number;
  readonly job: TimerTotals;
  readonly tasks: ReadonlyArray<{ readonly taskId: number } & TimerTotals>;
  /** Absent in reports written before gradients were counted. */
  readonly gradients?: GradientComputations;
}

function emptyTotals(): TimerTotals {
  const totals = {} as TimerTotals;
  for (const name of TIMER_NAMES) totals[name] = { seconds: 0, count: 0 };
  return totals;
}

/**
 * Wall-clock timers per activity, per task and for the whole job. Spans of different activities
 * may overlap (that is the point of the prefetching pipeline), so activities can add up to more
 * than the total.
 */
export class Timers {
  readonly #job = emptyTotals();
  readonly #tasks = new Map<number, TimerTotals>();
  readonly #started = performance.now();
  readonly #gradients: GradientComputations = { computed: 0, wasted: 0 };
  #stopped: number | undefined;

  /** Counts one gradient computation; `wasted` when the master did not apply it. */
  countGradient(wasted: boolean): void {
    this.#gradients.computed++;
    if (wasted) this.#gradients.wasted++;
  }

  /** Gradients computed and wasted so far. */
  get gradients(): Readonly<GradientComputations> {
    return { ...this.#gradients };
  }

  /** Adds a span of `ms` milliseconds to `name`, for the job and, when given, for task `taskId`. */
  add(name: TimerName, ms: number, taskId?: number): void {
    const seconds = ms / 1000;
    this.#job[name].seconds += seconds;
    this.#job[name].count += 1;
    if (taskId === undefined) return;
    let totals = this.#tasks.get(taskId);
    if (totals === undefined) {
      totals = emptyTotals();
      this.#tasks.set(taskId, totals);
    }
    totals[name].seconds += seconds;
    totals[name].count += 1;
  }

  /** Runs `fn` and adds its duration (until its promise settles) to `name`. */
  async time<T>(name: TimerName, fn: () => T | Promise<T>, taskId?: number): Promise<T> {
    const start = performance.now();
    try {
      return await fn();
    } finally {
      this.add(name, performance.now() - start, taskId);
    }
  }

  /** Accumulated seconds of `name` so far. */
  seconds(name: TimerName): number {
    return this.#job[name].seconds;
  }

  /** Freezes the total wall time (the job ended). */
  stop(): void {
    this.#stopped ??= performance.now();
  }

  /** Wall time since the timers were created, up to `stop()`. */
  get totalSeconds(): number {
    return ((this.#stopped ?? performance.now()) - this.#started) / 1000;
  }

  /** Job totals, wall time and per-task totals as plain JSON. */
  toJSON(): TimersReport {
    const copy = (t: TimerTotals): TimerTotals => JSON.parse(JSON.stringify(t)) as TimerTotals;
    return {
      totalSeconds: this.totalSeconds,
      job: copy(this.#job),
      tasks: [...this.#tasks.entries()]
        .sort(([a], [b]) => a - b)
        .map(([taskId, t]) => ({ taskId, ...copy(t) })),
      gradients: { ...this.#gradients },
    };
  }

  /** The seed's table: one header row and one row of seconds. */
  formatTable(): string {
    return formatTimerTable([
      { label: '', totalSeconds: this.totalSeconds, job: this.#job, gradients: this.#gradients },
    ]);
  }
}

/** One row of the timing table. */
export interface TimerTableRow {
  readonly label: string;
  readonly totalSeconds: number;
  readonly job: TimerTotals;
  /** Gradient computations: with them the table ends in a `wasted` column (a count, not seconds). */
  readonly gradients?: Readonly<GradientComputations>;
}

/**
 * Formats rows of timer totals as ElasticDL's worker timing table (`Total Time get_batch input_fn
 * ...`), followed by a `wasted` column (gradient computations the master refused) when any row
 * counted gradients.
 */
export function formatTimerTable(rows: ReadonlyArray<TimerTableRow>): string {
  const labelWidth = Math.max(0, ...rows.map((r) => r.label.length));
  const withWasted = rows.some((r) => r.gradients !== undefined);
  const headers = ['Total Time', ...TIMER_NAMES, ...(withWasted ? ['wasted'] : [])];
  const cells = rows.map((r) => [
    ...[r.totalSeconds, ...TIMER_NAMES.map((n) => r.job[n].seconds)].map((s) => s.toFixed(1)),
    ...(withWasted ? [String(r.gradients?.wasted ?? 0)] : []),
  ]);
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] as string).length)));
  const line = (label: string, values: string[]) =>
    `${labelWidth > 0 ? `${label.padEnd(labelWidth)}  ` : ''}${values.map((v, i) => v.padStart(widths[i] as number)).join('  ')}`;
  return [line('', headers), ...rows.map((r, i) => line(r.label, cells[i] as string[]))].join('\n');
}

/** Adds the gradient counts of several workers' reports (absent counts are 0). */
export function sumGradientComputations(
  reports: ReadonlyArray<{ readonly gradients?: Readonly<GradientComputations> }>,
): GradientComputations {
  const sum = { computed: 0, wasted: 0 };
  for (const report of reports) {
    sum.computed += report.gradients?.computed ?? 0;
    sum.wasted += report.gradients?.wasted ?? 0;
  }
  return sum;
}

/** Adds per-job totals of several workers (the table of a multi-worker job). */
export function sumTimerTotals(reports: ReadonlyArray<{ readonly job: TimerTotals }>): TimerTotals {
  const sum = emptyTotals();
  for (const report of reports) {
    for (const name of TIMER_NAMES) {
      sum[name].seconds += report.job[name].seconds;
      sum[name].count += report.job[name].count;
    }
  }
  return sum;
}
