import { type DataReader, wantsAnotherRangeAhead } from '@edl/data';
import { type TaskAssignment, taskKindOf } from '@edl/proto';

/**
 * The get_task answers a `TaskFeed` sent ahead of the task it reads, oldest first, not yet
 * taken. Each answer rejects as get_task would (thrown where it is taken); only the last may be a
 * WAIT or the end of the job.
 */
export class TasksAhead {
  readonly #answers: Promise<TaskAssignment | undefined>[] = [];
  /** Whether get_task is being sent ahead now (one call at a time, so answers keep their order). */
  #fetching = false;

  /**
   * @param fetch - sends get_task (untimed: it overlaps the reading of the tasks before) and
   *   announces the task to its reader on arrival; resolves undefined at the end of the job.
   * @param maxAhead - the cap on answers held for a reader with a read-ahead budget.
   */
  constructor(
    private readonly fetch: () => Promise<TaskAssignment | undefined>,
    private readonly maxAhead: number | undefined,
  ) {}

  /** Answers waiting to be taken (or on their way). */
  get size(): number {
    return this.#answers.length;
  }

  /** Removes and returns the oldest answer; undefined when none waits. */
  take(): Promise<TaskAssignment | undefined> | undefined {
    return this.#answers.shift();
  }

  /**
   * While `task` is read from `reader`: asks for the next tasks, one call at a time, while the
   * reader wants another range announced ({@link wantsAnotherRangeAhead}: one task ahead, or as
   * many as its read-ahead budget has room for, up to `maxAhead`). Stops at a WAIT, the end of the
   * job, a failed call or a task outside `task`'s segment. Called again at each task, as reading
   * frees the reader's budget.
   */
  fill(task: TaskAssignment, reader: DataReader<unknown>): void {
    if (this.#fetching || !wantsAnotherRangeAhead(reader, this.#answers.length, this.maxAhead)) return;
    this.#fetching = true;
    void (async () => {
      try {
        do {
          const answer = this.fetch();
          // Rejections are rethrown where the answer is taken, exactly where a late get_task would.
          answer.catch(() => {});
          this.#answers.push(answer);
          const next = await answer;
          if (next === undefined || taskKindOf(next) === 'wait' || !sameSegment(task, next)) return;
          // The reader plans an announced range asynchronously: a turn of the event loop lets it
          // count this task in its budget (once its file is open) before another is asked for.
          await new Promise<void>((resolve) => setImmediate(resolve));
        } while (wantsAnotherRangeAhead(reader, this.#answers.length, this.maxAhead));
      } catch {
        // Taken from the answers and thrown there.
      } finally {
        this.#fetching = false;
      }
    })();
  }
}

/** Whether `next` continues the segment `head` opened: the same kind, and for evaluation the same model version. */
export function sameSegment(head: TaskAssignment, next: TaskAssignment): boolean {
  if (taskKindOf(next) !== taskKindOf(head)) return false;
  return taskKindOf(head) !== 'evaluation' || next.modelVersion === head.modelVersion;
}
