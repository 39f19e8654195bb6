import {
  type DataReader,
  type IterDataset,
  type RecordBatchLike,
  type RecordRange,
  recordsOfBatches,
  unitKeyOf,
  unitWindowEnd,
} from '@edl/data';
import { type TaskAssignment, taskKindOf } from '@edl/proto';
import { WorkerError } from './errors.js';
import { type BatchPlace, feedRecordsDataset, NO_PLACE } from './feed-records.js';
import { silentLogger, type WorkerLogger } from './logger.js';
import { fetchTask, type MasterConnection } from './master-connection.js';
import { sameSegment, TasksAhead } from './tasks-ahead.js';
import type { Timers } from './timers.js';

/** A task whose records the feed has started to read, with how many the model has consumed. */
export interface PendingTask {
  readonly task: TaskAssignment;
  /** Records in the task's range. */
  readonly total: number;
  /** Records read from the reader so far. */
  read: number;
  /** Records attributed to minibatches so far. */
  consumed: number;
}

/**
 * The `extendedConfig` key of a re-issued task's first record as created (the master sends it when
 * the task resumes past its start): window shuffles count their windows from there.
 */
export const TASK_ORIGIN_KEY = 'taskStart';

/** Records `[rangeStart, rangeEnd)` of one task, at rows `[offset, offset + count)` of a minibatch. */
export interface RecordSlice {
  readonly task: TaskAssignment;
  readonly rangeStart: number;
  readonly rangeEnd: number;
  readonly offset: number;
  readonly count: number;
  /** True when this slice holds the task's last record. */
  readonly completesTask: boolean;
}

/** Options of {@link TaskFeed}. */
export interface TaskFeedOptions<TRecord> {
  readonly master: MasterConnection;
  readonly workerId: string;
  /** The reader of a task's records: training, validation and prediction data may differ. */
  readonly readerFor: (task: TaskAssignment) => DataReader<TRecord>;
  readonly timers: Timers;
  readonly logger?: WorkerLogger;
  /** First pause after a WAIT answer, in milliseconds; doubles up to 250 ms (default 25). */
  readonly waitMs?: number;
  /**
   * Read ahead across tasks (default true): each task's range is announced to its reader's
   * `prefetch` as soon as the task arrives, and, while a task is read from a reader that can read
   * ahead, the next tasks are asked for, so that their records are fetched and decoded before the
   * current task runs out: one task ahead, or, for a reader with a read-ahead budget (remote data),
   * tasks while the announced, unread bytes are below its budget, up to `maxTasksAhead`. Tasks are
   * still read and reported in the order received. `false`: one task at a time.
   */
  readonly readAhead?: boolean;
  /**
   * Tasks held ahead of the one being read, at most, for a reader with a read-ahead budget (default
   * 64, `DEFAULT_MAX_RANGES_AHEAD`): the master leases them to this worker, so a bigger cap leaves
   * less of an epoch's tail to the other workers. Within it, a remote reader asks for as many as
   * hide its fetch time at the pace tasks are read (`ReadAheadBudget.wantedRanges`): a task or two
   * while a model trains, more for a fast consumer of small objects.
   */
  readonly maxTasksAhead?: number;
  /**
   * Hand the batches of {@link TaskFeed.dataset} back to their reader for reuse once their records
   * are consumed (default false). Only for consumers that keep no record (a view into the batch)
   * past the minibatch after the one it went into: a reused batch is overwritten. By default a
   * consumed batch is just let go, and the garbage collector frees it once no record views it.
   */
  readonly reuseBatches?: boolean;
}

/** A batch handed on by {@link TaskFeed.dataset}, released once its task has consumed `end` records. */
interface HeldBatch {
  readonly pending: PendingTask;
  readonly batch: RecordBatchLike<unknown>;
  /** `pending.read` right after the batch: its last record's position in the task, plus one. */
  readonly end: number;
  /** The take() that attributed its last record to a minibatch. */
  finishedAt?: number;
}

/** Task kinds whose range is read. */
const DATA_KINDS: ReadonlySet<string> = new Set(['training', 'evaluation', 'prediction']);

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * ElasticDL's shared dataset: one stream of records that calls get_task when it runs dry, and the
 * deque of pending tasks that attributes consumed records to tasks, so that each task is reported
 * when its last record is consumed.
 *
 * The stream is cut into segments of consecutive tasks of one kind (and, for evaluation, one model
 * version): a segment ends when the next task is of another kind, on WAIT and at the end of the
 * job, because `datasetFn` depends on the mode and because a half-filled last minibatch must be
 * flushed before waiting on tasks that other workers (or this one) still hold.
 */
export class TaskFeed<TRecord> {
  readonly #options: TaskFeedOptions<TRecord>;
  readonly #logger: WorkerLogger;
  readonly #pending: PendingTask[] = [];
  #held: TaskAssignment | undefined;
  /** get_task answers fetched while the current task was read. */
  readonly #ahead: TasksAhead;
  #finished = false;
  #jobError = '';
  /** Batches of {@link TaskFeed.dataset} not yet fully consumed, in reading order. */
  readonly #unconsumed: HeldBatch[] = [];
  /** Calls of take() so far. */
  #takes = 0;
  /** The window size a shuffle aligned the reads to (see {@link FeedSource.align}). */
  #windowSize: number | undefined;
  /** Where the batch being handed on sits (read by #hold). */
  #place: BatchPlace = NO_PLACE;

  constructor(options: TaskFeedOptions<TRecord>) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#ahead = new TasksAhead(() => this.#fetch(false), options.maxTasksAhead);
  }

  /** True once get_task said the job is over. */
  get finished(): boolean {
    return this.#finished;
  }

  /** The master's reason when the job failed. */
  get jobError(): string {
    return this.#jobError;
  }

  /** Tasks being read or consumed, oldest first. */
  get pending(): readonly PendingTask[] {
    return this.#pending;
  }

  /**
   * The first task of the next segment: a task held back by the previous segment, or a new one.
   * Waits out WAIT answers; resolves undefined when the job is over.
   */
  async nextHead(): Promise<TaskAssignment | undefined> {
    if (this.#held !== undefined) {
      const task = this.#held;
      this.#held = undefined;
      return task;
    }
    // A segment that ended early (a failure, a stop) leaves the tasks fetched ahead: they come next.
    while (this.#ahead.size > 0) {
      const task = await this.#takeAhead();
      if (task === undefined || taskKindOf(task) !== 'wait') return task;
    }
    let pause = this.#options.waitMs ?? 25;
    while (!this.#finished) {
      const task = await this.#fetch();
      if (task === undefined) return undefined;
      if (taskKindOf(task) !== 'wait') return task;
      await sleep(pause);
      // Short pauses: at an epoch boundary the next tasks appear as soon as the last report lands.
      pause = Math.min(pause * 2, 250);
    }
    return undefined;
  }

  /**
   * The records of `head` and of the following tasks of the same segment, a batch at a time: the
   * batches of readers that have `readBatches` (RecordIO, TFRecord) as they were decoded, and one
   * record per batch from other readers. Each task enters the pending deque when it starts to be
   * read, and its records count as read when their batch is yielded. The consumer may `release()`
   * a batch once none of its records is needed any more.
   */
  async *batches(head: TaskAssignment): AsyncGenerator<RecordBatchLike<TRecord>> {
    let task: TaskAssignment | undefined = head;
    while (task !== undefined) {
      if (this.#options.readAhead !== false) this.#ahead.fill(task, this.#options.readerFor(task));
      yield* this.#readTask(task);
      const next = await this.#next();
      if (next === undefined || taskKindOf(next) === 'wait') return;
      if (!sameSegment(head, next)) {
        this.#held = next;
        return;
      }
      task = next;
    }
  }

  /**
   * The records of `head` and of the following tasks of the same segment (the records of
   * {@link TaskFeed.batches}, whose batches are never released: records handed on stay valid).
   */
  records(head: TaskAssignment): AsyncGenerator<TRecord> {
    return recordsOfBatches(this.batches(head));
  }

  /**
   * The shared records dataset of the segment that starts at `head`, as `datasetFn` receives it:
   * the records of {@link TaskFeed.batches}, filled a batch at a time (one step of the reader per
   * batch; records are served from the batch at hand). With `reuseBatches`, a batch is released
   * (its memory handed back to its reader for a later read) at the second {@link TaskFeed.take}
   * after the one that attributed its last record to a minibatch: records stay valid until the
   * minibatch they went into has been processed (its step, even one computed again after a stale
   * push ahead); without it (the default) records stay valid for as long as they are referenced.
   * The dataset can be iterated once, record by record or through `minibatches` (whose direct
   * path reads the same batches a minibatch at a time): the records come from the master's tasks.
   * Its records are attributed to their tasks, so transforms that would break the counting of
   * {@link TaskFeed.take} throw (see docs/worker.md).
   */
  dataset(head: TaskAssignment, name: string): IterDataset<TRecord> {
    let opened = false;
    // Each segment's datasetFn aligns the reads anew: one without a shuffle must get no replay.
    this.#windowSize = undefined;
    return feedRecordsDataset<TRecord>({
      open: () => this.batches(head)[Symbol.asyncIterator](),
      hold: (batch) => this.#hold(batch),
      align: (bufferSize) => {
        this.#windowSize = bufferSize;
      },
      name,
      ordered: taskKindOf(head) === 'prediction',
      claim: () => {
        // The shared dataset reads tasks from the master: a second pass would read other tasks.
        if (opened)
          throw new WorkerError('DATA_ERROR', 'datasetFn iterated the shared records dataset twice');
        opened = true;
      },
    });
  }

  /**
   * Attributes the next `count` consumed records to pending tasks, oldest first. Throws when more
   * records are consumed than were read (a datasetFn that invents records).
   */
  take(count: number): RecordSlice[] {
    this.#takes++;
    this.#releaseConsumed();
    const slices: RecordSlice[] = [];
    let offset = 0;
    let left = count;
    let index = 0;
    while (left > 0) {
      const pending = this.#pending[index];
      if (pending === undefined) {
        throw new WorkerError(
          'DATA_ERROR',
          `datasetFn yielded ${left} more records than the tasks held (${count} in the last minibatch)`,
        );
      }
      const available = pending.read - pending.consumed;
      const n = Math.min(available, left);
      // An empty task (n = 0) still gets its slice, so that it is reported like any other.
      if (n > 0 || pending.total === 0) {
        const rangeStart = pending.task.start + pending.consumed;
        pending.consumed += n;
        slices.push({
          task: pending.task,
          rangeStart,
          rangeEnd: rangeStart + n,
          offset,
          count: n,
          completesTask: pending.consumed === pending.total,
        });
        offset += n;
        left -= n;
      }
      if (pending.consumed === pending.total) this.#pending.splice(index, 1);
      else index++;
    }
    for (const held of this.#unconsumed) {
      if (held.finishedAt !== undefined) continue;
      if (held.pending.consumed < held.end) break;
      held.finishedAt = this.#takes;
    }
    return slices;
  }

  /** Removes and returns the pending tasks (after a segment ended or failed). */
  drain(): PendingTask[] {
    // Batches still held belong to a segment that failed or stopped early: their records may still
    // be referenced by the abandoned pipeline, so they are left to garbage collection.
    this.#unconsumed.length = 0;
    return this.#pending.splice(0, this.#pending.length);
  }

  /**
   * Holds a batch of {@link TaskFeed.dataset} until its records are consumed (it was just read);
   * returns where its records sit. Replayed batches are not the task's records: they are let go.
   */
  #hold(batch: RecordBatchLike<TRecord>): BatchPlace {
    const pending = this.#pending.at(-1);
    if (pending === undefined) return NO_PLACE;
    if (!this.#place.replay) this.#unconsumed.push({ pending, batch, end: pending.read });
    return this.#place;
  }

  /**
   * Releases the held batches finished by the minibatch before the previous one. The worker takes
   * a minibatch before its step, and a step pushed ahead may be computed again (a stale gradient)
   * during the next minibatch's: only the minibatch before the previous one is surely done with,
   * even by a tensor that views record bytes without copying them.
   */
  #releaseConsumed(): void {
    let n = 0;
    for (const held of this.#unconsumed) {
      if (held.finishedAt === undefined || held.finishedAt > this.#takes - 2) break;
      if (this.#options.reuseBatches === true) held.batch.release();
      n++;
    }
    if (n > 0) this.#unconsumed.splice(0, n);
  }

  /** The oldest answer fetched ahead (the caller checks there is one); only its wait counts as get_task. */
  async #takeAhead(): Promise<TaskAssignment | undefined> {
    const ahead = this.#ahead.take() as Promise<TaskAssignment | undefined>;
    return this.#options.timers.time('get_task', () => ahead);
  }

  /**
   * The task after the current one: the one fetched ahead, or a new get_task. A WAIT answered
   * ahead is not final (tasks may come back meanwhile): the master is asked again, as it would
   * have been without read-ahead.
   */
  async #next(): Promise<TaskAssignment | undefined> {
    while (this.#ahead.size > 0) {
      const task = await this.#takeAhead();
      if (task === undefined || taskKindOf(task) !== 'wait') return task;
    }
    return this.#fetch();
  }

  async #fetch(timed = true): Promise<TaskAssignment | undefined> {
    const { master, workerId, timers } = this.#options;
    const answer = timed
      ? await timers.time('get_task', () => fetchTask(master, workerId))
      : await fetchTask(master, workerId);
    if (answer.kind === 'finished') {
      this.#finished = true;
      this.#jobError = answer.error;
      return undefined;
    }
    if (taskKindOf(answer.task) !== 'wait') {
      const { task } = answer;
      this.#logger.info('task.received', {
        task: task.id,
        kind: taskKindOf(task),
        shard: task.shardName,
        start: task.start,
        end: task.end,
        epoch: task.epoch,
      });
      this.#announce(task);
    }
    return answer.task;
  }

  /** Tells the task's reader to start reading its range now (advisory, never throws). */
  #announce(task: TaskAssignment): void {
    if (this.#options.readAhead === false || !DATA_KINDS.has(taskKindOf(task)) || task.end <= task.start)
      return;
    try {
      this.#options
        .readerFor(task)
        .prefetch?.({ shardName: task.shardName, start: task.start, end: task.end });
    } catch (error) {
      this.#logger.warn('task.prefetch_failed', { task: task.id, error: (error as Error).message });
    }
  }

  async *#readTask(task: TaskAssignment): AsyncGenerator<RecordBatchLike<TRecord>> {
    const total = task.end - task.start;
    const pending: PendingTask = { task, total, read: 0, consumed: 0 };
    this.#pending.push(pending);
    if (total === 0) return;
    const origin = originOf(task);
    const place = { unit: task.id, key: unitKeyOf(task.shardName, task.epoch), origin };
    const windowStart =
      this.#windowSize === undefined
        ? task.start
        : unitWindowEnd(task.start, origin, this.#windowSize) - this.#windowSize;
    if (windowStart < task.start) {
      // Grain's replay: the records of the resumed window before the task's start, read again so
      // that the window is permuted as in its first issue; their outputs were consumed then.
      let start = windowStart;
      for await (const batch of this.#readRange(task, windowStart, task.start)) {
        this.#place = { ...place, replay: true, start };
        start += batch.length;
        yield batch;
      }
      if (start !== task.start) {
        throw new WorkerError(
          'DATA_ERROR',
          `Reader yielded ${start - windowStart} of the ${task.start - windowStart} records of ${task.shardName} [${windowStart}, ${task.start}) replayed for task ${task.id}`,
        );
      }
    }
    for await (const batch of this.#readRange(task, task.start, task.end)) {
      if (pending.read + batch.length > total) {
        throw new WorkerError(
          'DATA_ERROR',
          `Reader yielded more than the ${total} records of ${task.shardName} [${task.start}, ${task.end}) (task ${task.id})`,
        );
      }
      this.#place = { ...place, replay: false, start: task.start + pending.read };
      pending.read += batch.length;
      yield batch;
    }
    if (pending.read !== total) {
      throw new WorkerError(
        'DATA_ERROR',
        `Reader yielded ${pending.read} of the ${total} records of ${task.shardName} [${task.start}, ${task.end}) (task ${task.id})`,
      );
    }
  }

  /** The batches of records `[start, end)` of `task`'s shard, timed as get_batch. */
  async *#readRange(
    task: TaskAssignment,
    start: number,
    end: number,
  ): AsyncGenerator<RecordBatchLike<TRecord>> {
    const { readerFor, timers } = this.#options;
    const reader = readerFor(task);
    const range: RecordRange = { shardName: task.shardName, start, end };
    const iterator = (
      typeof reader.readBatches === 'function'
        ? reader.readBatches(range)
        : singleRecordBatches(reader, range)
    )[Symbol.asyncIterator]();
    try {
      for (;;) {
        const begin = performance.now();
        const result = await iterator.next();
        timers.add('get_batch', performance.now() - begin, task.id);
        if (result.done) break;
        yield result.value;
      }
    } finally {
      await iterator.return?.();
    }
  }
}

/** A task's first record as created: sent by the master when the task resumes past it. */
function originOf(task: TaskAssignment): number {
  const sent = task.extendedConfig[TASK_ORIGIN_KEY];
  const origin = sent === undefined ? task.start : Number(sent);
  if (!Number.isSafeInteger(origin) || origin > task.start) {
    throw new WorkerError(
      'DATA_ERROR',
      `Expected ${TASK_ORIGIN_KEY} <= ${task.start} for task ${task.id} but received ${JSON.stringify(sent)}`,
    );
  }
  return origin;
}

/** The records of a reader without `readBatches`, one per batch. */
async function* singleRecordBatches<TRecord>(
  reader: DataReader<TRecord>,
  range: RecordRange,
): AsyncGenerator<RecordBatchLike<TRecord>> {
  for await (const record of reader.readRecords(range)) {
    yield { length: 1, get: () => record, release: () => {} };
  }
}
