// The live view's task table: one row of task counts per epoch, evaluation round or prediction.
import type { QueuedTaskKind } from '../tasks/types.js';
import type { TaskCounts } from './types.js';

interface TaskRow {
  label: string;
  kind: TaskCounts['kind'];
  total: number;
  done: number;
  failed: number;
}

/** What the rows need of the job now to show the tasks in flight. */
export interface TasksNow {
  readonly state: 'running' | 'succeeded' | 'failed';
  /**
   * The tasks in flight by kind. Each kind's are shown on its newest row (a worker may already hold
   * a task of the next epoch, or a training task during an evaluation round).
   */
  readonly doingByKind: Readonly<Partial<Record<TaskCounts['kind'], number>>>;
}

/**
 * Task counts per epoch (training), evaluation round and prediction, in the order they started.
 * Tasks in flight are shown on the newest row of their kind.
 */
export class TaskRows {
  readonly #rows = new Map<string, TaskRow>();

  /** Adds the row of a training epoch (0-based) with its tasks. */
  epochStarted(epoch: number, tasks: number): string {
    const label = `epoch ${epoch + 1}`;
    this.#rows.set(label, { label, kind: 'training', total: tasks, done: 0, failed: 0 });
    return label;
  }

  /** Adds the row of an evaluation round. */
  evaluationStarted(round: number, tasks: number): void {
    const label = `evaluation ${round}`;
    this.#rows.set(label, { label, kind: 'evaluation', total: tasks, done: 0, failed: 0 });
  }

  /**
   * Counts on its row a task done, or back to todo after a failure that counted (`failed`) or did
   * not (`returned`). The prediction row is made on its first such event, with `predictionTasks()`
   * as its total.
   */
  count(
    task: { kind?: QueuedTaskKind; epoch?: number; round?: number },
    outcome: 'done' | 'failed' | 'returned',
    predictionTasks: () => number,
  ): void {
    const row = this.#rowOf(task.kind, task.epoch, task.round, predictionTasks);
    if (row !== undefined && outcome !== 'returned') row[outcome]++;
  }

  /** Done and counted failures over every row. */
  totals(): { done: number; failed: number } {
    let done = 0;
    let failed = 0;
    for (const row of this.#rows.values()) {
      done += row.done;
      failed += row.failed;
    }
    return { done, failed };
  }

  /** Every row as plain JSON; the newest of each kind holds that kind's tasks in flight. */
  snapshot(now: TasksNow): TaskCounts[] {
    const newestOfKind = new Map<TaskCounts['kind'], string>();
    for (const row of this.#rows.values()) newestOfKind.set(row.kind, row.label);
    return [...this.#rows.values()].map((row) => {
      const inFlight = newestOfKind.get(row.kind) === row.label ? (now.doingByKind[row.kind] ?? 0) : 0;
      // Never more than the row has left: todo + doing + done stays its total.
      const doing = now.state === 'running' ? Math.min(inFlight, Math.max(0, row.total - row.done)) : 0;
      return {
        label: row.label,
        kind: row.kind,
        total: row.total,
        todo: Math.max(0, row.total - row.done - doing),
        doing,
        done: row.done,
        failed: row.failed,
      };
    });
  }

  #rowOf(
    kind: string | undefined,
    epoch: number | undefined,
    round: number | undefined,
    predictionTasks: () => number,
  ): TaskRow | undefined {
    if (kind === 'training' && epoch !== undefined) return this.#rows.get(`epoch ${epoch + 1}`);
    if (kind === 'evaluation' && round !== undefined) return this.#rows.get(`evaluation ${round}`);
    if (kind === 'prediction') {
      let row = this.#rows.get('prediction');
      if (row === undefined) {
        row = { label: 'prediction', kind: 'prediction', total: predictionTasks(), done: 0, failed: 0 };
        this.#rows.set('prediction', row);
      }
      return row;
    }
    return undefined;
  }
}
