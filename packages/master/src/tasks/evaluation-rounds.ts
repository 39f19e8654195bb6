// Evaluation rounds: their queue, which round is open on which model version, and when one is due.
import { TaskQueue } from '../task-queue.js';
import type { TaskFactory, TaskRecord } from './task-record.js';

/** What started when an evaluation round opened. */
export interface OpenedRound {
  readonly round: number;
  readonly tasks: number;
  readonly records: number;
}

/**
 * The evaluation rounds of a job. One round at a time reads the validation data once on one model
 * version; its tasks wait in their own queue, which the dispatcher serves before training tasks.
 */
export class EvaluationRounds {
  /** Evaluation tasks waiting for a worker. */
  readonly todo = new TaskQueue<TaskRecord>();
  /** Unfinished evaluation tasks of the open round (todo + doing). */
  #open = 0;
  #round = 0;
  #roundVersion = -1;
  #lastEvaluatedVersion = -1;

  /** Rounds started so far (the open one included). */
  get round(): number {
    return this.#round;
  }

  /** Model version of the open round (or of the last one, once it closed). */
  get roundVersion(): number {
    return this.#roundVersion;
  }

  /** Model version the last round started on, or -1. */
  get lastEvaluatedVersion(): number {
    return this.#lastEvaluatedVersion;
  }

  /** Whether a round has tasks left. */
  get running(): boolean {
    return this.#open > 0;
  }

  /** Whether a periodic round is due at `version` (every `steps` versions, once per version). */
  dueAt(version: number, steps: number): boolean {
    return version > 0 && version % steps === 0 && version !== this.#lastEvaluatedVersion;
  }

  /** Opens the next round on `version`: its tasks go to {@link todo}. */
  open(version: number, epoch: number, factory: TaskFactory): OpenedRound {
    this.#round++;
    this.#roundVersion = version;
    this.#lastEvaluatedVersion = version;
    const round = this.#round;
    const { tasks, records } = factory.cut('evaluation', { epoch, modelVersion: version, round }, this.todo);
    this.#open = tasks;
    return { round, tasks, records };
  }

  /** Counts one task of the open round finished; true when it was the round's last. */
  taskFinished(): boolean {
    this.#open--;
    return this.#open === 0;
  }

  /** Continues the count of rounds of a checkpoint; its open round, if any, is not restored. */
  restore(round: number, lastEvaluatedVersion: number): void {
    this.#round = round;
    this.#lastEvaluatedVersion = lastEvaluatedVersion;
  }

  /** Forgets the last evaluated version, so that the final round runs again. */
  forgetLastEvaluated(): void {
    this.#lastEvaluatedVersion = -1;
  }
}
