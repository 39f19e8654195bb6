// A task as the master tracks it, and the factory that cuts shards into tasks with ids in order.
import { SeededRandom } from '@edl/common';
import type { Shard } from '@edl/data';
import type { TaskQueue } from '../task-queue.js';
import type { QueuedTaskKind, RecordsByKind } from './types.js';

/** One task of the job, from its creation to its completion (kept across dispatches). */
export interface TaskRecord {
  readonly id: number;
  readonly kind: QueuedTaskKind;
  readonly shardName: string;
  /** First record of the task as created. */
  readonly start: number;
  readonly end: number;
  /** First record not yet applied: [start, progress) is done exactly once. */
  progress: number;
  readonly epoch: number;
  /** Evaluation tasks: the model version they evaluate. */
  readonly modelVersion: number;
  /** Evaluation tasks: the round they belong to. */
  readonly round: number;
  failures: number;
  readonly failureReasons: string[];
  worker?: string;
  leaseDeadline: number;
  /** Where the current dispatch started (progress at dispatch time). */
  dispatchedAt: number;
  /**
   * The worker reported the task done while some of its gradients were still on their way (a
   * prefetching pipeline consumes records before their minibatch is applied). Heartbeats no longer
   * renew the lease: the outstanding ranges must arrive within it, or the task comes back.
   */
  reportedDone?: boolean;
  /** Workers on which the task failed: it goes to another worker where one is alive. */
  failedOn?: Set<string>;
}

/** Where a task sits in its job: epoch, and for evaluation tasks the round and the model version. */
export interface TaskPlace {
  readonly epoch: number;
  readonly modelVersion: number;
  readonly round: number;
}

/**
 * Cuts the job's shards into tasks of `recordsPerTask` records that never cross a shard, numbering
 * them from 1 and shuffling training tasks with a seeded generator whose state is checkpointed.
 */
export class TaskFactory {
  readonly #shards: RecordsByKind<readonly Shard[]>;
  readonly #recordsPerTask: number;
  readonly #shuffle: boolean;
  #rng: SeededRandom;
  #nextTaskId = 1;

  constructor(
    shards: RecordsByKind<readonly Shard[]>,
    recordsPerTask: number,
    shuffle: boolean,
    seed: number,
  ) {
    this.#shards = shards;
    this.#recordsPerTask = recordsPerTask;
    this.#shuffle = shuffle;
    this.#rng = new SeededRandom(seed);
  }

  /** The id the next task gets (checkpointed). */
  get nextTaskId(): number {
    return this.#nextTaskId;
  }

  /** The shuffle generator's state (checkpointed). */
  get rngState(): number {
    return this.#rng.state;
  }

  /** Continues numbering and shuffling where a checkpointed factory stopped. */
  restore(nextTaskId: number, rngState: number): void {
    this.#nextTaskId = nextTaskId;
    this.#rng = new SeededRandom(rngState);
  }

  /**
   * Appends to `queue` the tasks of every shard of `kind` (training tasks shuffled when asked), and
   * returns how many tasks and records that is.
   */
  cut(
    kind: keyof RecordsByKind<unknown>,
    place: TaskPlace,
    queue: TaskQueue<TaskRecord>,
  ): { tasks: number; records: number } {
    const created: TaskRecord[] = [];
    let records = 0;
    for (const shard of this.#shards[kind]) {
      const end = shard.start + shard.count;
      for (let start = shard.start; start < end; start += this.#recordsPerTask) {
        created.push(
          this.create(kind, shard.name, start, Math.min(end, start + this.#recordsPerTask), place),
        );
      }
      records += shard.count;
    }
    if (this.#shuffle && kind === 'training') this.#rng.shuffle(created);
    for (const record of created) queue.push(record);
    return { tasks: created.length, records };
  }

  /** A new task with the next id, nothing of it applied. */
  create(kind: QueuedTaskKind, shardName: string, start: number, end: number, place: TaskPlace): TaskRecord {
    return {
      id: this.#nextTaskId++,
      kind,
      shardName,
      start,
      end,
      progress: start,
      epoch: place.epoch,
      modelVersion: place.modelVersion,
      round: place.round,
      failures: 0,
      failureReasons: [],
      leaseDeadline: 0,
      dispatchedAt: start,
    };
  }
}
