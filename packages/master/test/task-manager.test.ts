import { GradientStatus, type TaskAssignment, TaskType } from '@edl/proto';
import { describe, expect, it } from 'vitest';
import { JobFailedError } from '../src/errors.js';
import { TaskManager } from '../src/task-manager.js';
import type { TaskManagerEvent, TaskManagerOptions } from '../src/tasks/types.js';

function manager(options: Partial<TaskManagerOptions> = {}) {
  let now = 1_000;
  const events: TaskManagerEvent[] = [];
  let version = 0;
  const tm = new TaskManager({
    jobType: 'training',
    trainingShards: [
      { name: 'a', start: 0, count: 10 },
      { name: 'b', start: 100, count: 5 },
    ],
    minibatchSize: 2,
    numMinibatchesPerTask: 2,
    leaseMs: 100,
    now: () => now,
    modelVersion: () => version,
    onEvent: (e) => events.push(e),
    ...options,
  });
  return {
    tm,
    events,
    tick: (ms: number) => {
      now += ms;
    },
    setVersion: (v: number) => {
      version = v;
    },
  };
}

/** Applies a whole task range through the exactly-once path, as the master does for gradients. */
function applyAll(tm: TaskManager, worker: string, task: TaskAssignment, step = 2): void {
  for (let start = task.start; start < task.end; start += step) {
    const end = Math.min(task.end, start + step);
    const check = tm.checkRange(worker, task.id, start, end);
    expect(check.ok).toBe(true);
    tm.advance(task.id, end);
  }
}

describe('TaskManager: cutting and dispatch', () => {
  it('cuts tasks of minibatchSize x numMinibatchesPerTask records that never cross a shard', () => {
    const { tm } = manager({ trainEndCallback: false });
    const ranges: string[] = [];
    for (let task = tm.getTask('w'); task && task.type === TaskType.TRAINING; task = tm.getTask('w')) {
      ranges.push(`${task.shardName}[${task.start},${task.end})`);
      applyAll(tm, 'w', task);
    }
    expect(ranges).toEqual(['a[0,4)', 'a[4,8)', 'a[8,10)', 'b[100,104)', 'b[104,105)']);
    expect(tm.finished).toBe(true);
    expect(tm.status()).toMatchObject({ state: 'succeeded', recordsDone: 15, recordsTotal: 15 });
  });

  it('returns WAIT while tasks are in flight and todo is empty, and never starts the next epoch early', () => {
    const { tm } = manager({ numEpochs: 2, trainingShards: [{ name: 'a', start: 0, count: 8 }] });
    const t1 = tm.getTask('w1')!;
    const t2 = tm.getTask('w2')!;
    expect([t1.epoch, t2.epoch]).toEqual([0, 0]);
    applyAll(tm, 'w1', t1);
    expect(tm.getTask('w1')?.type).toBe(TaskType.WAIT);
    applyAll(tm, 'w2', t2);
    const next = tm.getTask('w1')!;
    expect(next).toMatchObject({ type: TaskType.TRAINING, epoch: 1, start: 0, end: 4 });
  });

  it('shuffles task order reproducibly from the seed, and differently for another seed', () => {
    const order = (seed: number) => {
      const { tm } = manager({ shuffle: true, seed, trainingShards: [{ name: 's', start: 0, count: 64 }] });
      const starts: number[] = [];
      for (let i = 0; i < 16; i++) starts.push(tm.getTask(`w${i}`)!.start);
      return starts;
    };
    expect(order(7)).toEqual(order(7));
    expect(order(7)).not.toEqual(order(8));
    expect([...order(7)].sort((x, y) => x - y)).toEqual(Array.from({ length: 16 }, (_, i) => i * 4));
  });

  it('dispatches a single TRAIN_END_CALLBACK task after the last epoch, then ends the job', () => {
    const { tm, events } = manager({ trainingShards: [{ name: 'a', start: 0, count: 4 }] });
    applyAll(tm, 'w', tm.getTask('w')!);
    const end = tm.getTask('w')!;
    expect(end.type).toBe(TaskType.TRAIN_END_CALLBACK);
    expect(tm.getTask('w2')?.type).toBe(TaskType.WAIT);
    expect(tm.reportTaskResult('w', end.id, 0, '')).toBe(true);
    expect(tm.getTask('w')).toBeUndefined();
    expect(events.at(-1)).toEqual({ type: 'job-succeeded' });
  });
});

describe('TaskManager: exactly-once ranges', () => {
  it('accepts only the next unapplied range, and tells duplicates and gaps apart', () => {
    const { tm } = manager();
    const task = tm.getTask('w')!;
    expect(tm.checkRange('w', task.id, 0, 2)).toMatchObject({ ok: true });
    tm.advance(task.id, 2);
    expect(tm.checkRange('w', task.id, 0, 2)).toEqual({
      ok: false,
      status: GradientStatus.ALREADY_APPLIED,
      progress: 2,
    });
    expect(tm.checkRange('w', task.id, 3, 4)).toEqual({
      ok: false,
      status: GradientStatus.OUT_OF_ORDER,
      progress: 2,
    });
    expect(tm.checkRange('other', task.id, 2, 4)).toEqual({
      ok: false,
      status: GradientStatus.TASK_NOT_HELD,
      progress: -1,
    });
    expect(() => tm.checkRange('w', task.id, 2, 9)).toThrow(
      new RangeError(`Expected a non-empty range inside [0, 4) of task ${task.id} but received [2, 9)`),
    );
    tm.advance(task.id, 4);
    // The task finished on its last range; a resent last gradient is a duplicate, not an error.
    expect(tm.checkRange('w', task.id, 2, 4)).toMatchObject({
      ok: false,
      status: GradientStatus.ALREADY_APPLIED,
    });
    expect(tm.reportTaskResult('w', task.id, 4, '')).toBe(true);
  });

  it('gives a failed task back as its remaining range only, under the same id', () => {
    const { tm, events } = manager();
    const task = tm.getTask('w1')!;
    tm.checkRange('w1', task.id, 0, 2);
    tm.advance(task.id, 2);
    expect(tm.reportTaskResult('w1', task.id, 2, 'out of memory')).toBe(true);
    const again = tm.getTask('w2')!;
    expect(again).toMatchObject({ id: task.id, start: 2, end: 4 });
    // Its first record as created comes along (window shuffles count their windows from it).
    expect(task.extendedConfig).toEqual({});
    expect(again.extendedConfig).toEqual({ taskStart: String(task.start) });
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'task-recovered', taskId: task.id, remaining: 2, failures: 1 }),
    );
    expect(tm.status().recordsDone).toBe(2);
  });

  it('waits, within the lease, for the gradients of a task reported done before they arrived', () => {
    const { tm, tick } = manager();
    const task = tm.getTask('w')!;
    tm.checkRange('w', task.id, 0, 2);
    tm.advance(task.id, 2);
    // A prefetching worker consumed the last records before their minibatch was applied.
    expect(tm.reportTaskResult('w', task.id, 4, '')).toBe(true);
    tick(60);
    expect(tm.checkRange('w', task.id, 2, 4)).toMatchObject({ ok: true });
    expect(tm.advance(task.id, 4)).toEqual({ progress: 4, completed: true });
    expect(tm.status().recordsDone).toBe(4);
  });

  it('gives back a task reported done whose last gradients never come, heartbeats notwithstanding', () => {
    const { tm, tick } = manager();
    const task = tm.getTask('w')!;
    tm.checkRange('w', task.id, 0, 2);
    tm.advance(task.id, 2);
    tm.reportTaskResult('w', task.id, 4, '');
    tick(60);
    tm.heartbeat('w');
    tick(60);
    expect(tm.expireLeases()).toBe(1);
    expect(tm.getTask('w2')).toMatchObject({ id: task.id, start: 2, end: 4 });
  });
});

describe('TaskManager: leases and failures', () => {
  it('sends a task back to todo when its worker misses the lease, and heartbeats keep it', () => {
    const { tm, tick } = manager();
    const t1 = tm.getTask('alive')!;
    const t2 = tm.getTask('silent')!;
    tick(60);
    expect(tm.heartbeat('alive')).toBe(1);
    tick(60);
    expect(tm.expireLeases()).toBe(1);
    expect(tm.tasksOf('alive')).toEqual([t1.id]);
    expect(tm.tasksOf('silent')).toEqual([]);
    expect(tm.getTask('third')).toMatchObject({ id: t2.id, start: t2.start });
    // The silent worker wakes up: its task went elsewhere.
    expect(tm.checkRange('silent', t2.id, t2.start, t2.start + 2)).toMatchObject({
      status: GradientStatus.TASK_NOT_HELD,
    });
  });

  it('fails the job loudly when a task fails maxTaskFailures times', () => {
    const { tm, events } = manager({ maxTaskFailures: 2 });
    const task = tm.getTask('w1')!;
    tm.reportTaskResult('w1', task.id, 0, 'bad record 3');
    expect(tm.getTask('w2')!.id).toBe(task.id);
    tm.recoverWorker('w2', 'worker process exited with signal SIGKILL', true);
    expect(tm.finished).toBe(true);
    expect(tm.getTask('w3')).toBeUndefined();
    const error = tm.error!;
    expect(error).toBeInstanceOf(JobFailedError);
    expect(error.code).toBe('TASK_FAILED');
    expect(error.message).toBe(
      `Task ${task.id} (training records [0, 4) of 'a' (epoch 0)) failed 2 times, the limit (maxTaskFailures): ` +
        'worker w1: failed: bad record 3; worker w2: worker process exited with signal SIGKILL',
    );
    expect(events.at(-1)).toMatchObject({ type: 'job-failed' });
  });

  it('does not count a deliberate scale-down as a failure', () => {
    const { tm } = manager({ maxTaskFailures: 1 });
    const task = tm.getTask('w1')!;
    expect(tm.recoverWorker('w1', 'scaled down', false)).toBe(1);
    expect(tm.finished).toBe(false);
    expect(tm.getTask('w2')!.id).toBe(task.id);
  });
});

describe('TaskManager: job types', () => {
  const evaluationShards = [{ name: 'val', start: 0, count: 6 }];

  it('training-with-evaluation: evaluates every N versions first, at a fixed version, and at the end', () => {
    const { tm, events, setVersion } = manager({
      jobType: 'training-with-evaluation',
      evaluationShards,
      evaluationSteps: 2,
      trainEndCallback: false,
      trainingShards: [{ name: 'a', start: 0, count: 8 }],
    });
    const train = tm.getTask('w')!;
    applyAll(tm, 'w', train);
    setVersion(1);
    expect(tm.onModelVersion(1)).toBeUndefined();
    setVersion(2);
    expect(tm.onModelVersion(2)).toBe(2);
    setVersion(3);
    const evalTask = tm.getTask('w')!;
    expect(evalTask).toMatchObject({
      type: TaskType.EVALUATION,
      modelVersion: 2,
      shardName: 'val',
      start: 0,
      end: 4,
    });
    expect(tm.onModelVersion(4)).toBeUndefined();
    expect(events).toContainEqual(expect.objectContaining({ type: 'evaluation-skipped', modelVersion: 4 }));
    applyAll(tm, 'w', evalTask);
    const evalTask2 = tm.getTask('w')!;
    expect(evalTask2.type).toBe(TaskType.EVALUATION);
    applyAll(tm, 'w', evalTask2);
    expect(events).toContainEqual({ type: 'evaluation-completed', round: 1, modelVersion: 2 });
    applyAll(tm, 'w', tm.getTask('w')!);
    // Training done at version 4, last evaluated 2: a final round evaluates version 4.
    setVersion(4);
    const final = tm.getTask('w')!;
    expect(final).toMatchObject({ type: TaskType.EVALUATION, modelVersion: 4 });
    applyAll(tm, 'w', final);
    applyAll(tm, 'w', tm.getTask('w')!);
    expect(tm.getTask('w')).toBeUndefined();
    expect(tm.status().state).toBe('succeeded');
  });

  it('evaluation-only: one round over the evaluation shards at the current version', () => {
    const { tm, setVersion } = manager({ jobType: 'evaluation', evaluationShards, trainingShards: [] });
    setVersion(9);
    const t = tm.getTask('w')!;
    expect(t).toMatchObject({ type: TaskType.EVALUATION, modelVersion: 9 });
    applyAll(tm, 'w', t);
    applyAll(tm, 'w', tm.getTask('w')!);
    expect(tm.getTask('w')).toBeUndefined();
    expect(tm.status()).toMatchObject({ state: 'succeeded', recordsDone: 6, recordsTotal: 6 });
  });

  it('prediction-only: progress comes from task results, a partial failure keeps the done part', () => {
    const { tm } = manager({ jobType: 'prediction', predictionShards: [{ name: 'p', start: 0, count: 4 }] });
    const t = tm.getTask('w')!;
    expect(t.type).toBe(TaskType.PREDICTION);
    tm.reportTaskResult('w', t.id, 3, 'disk full');
    const again = tm.getTask('w')!;
    expect(again).toMatchObject({ id: t.id, start: 3, end: 4 });
    tm.reportTaskResult('w', again.id, 1, '');
    expect(tm.getTask('w')).toBeUndefined();
    expect(tm.status()).toMatchObject({ state: 'succeeded', recordsDone: 4 });
  });

  it('rejects a job without the shards its type needs', () => {
    expect(
      () => new TaskManager({ jobType: 'evaluation', trainingShards: [{ name: 'a', start: 0, count: 1 }] }),
    ).toThrow(
      new TypeError(
        'Expected at least one shard for evaluationShards but received none (job type evaluation)',
      ),
    );
    expect(
      () =>
        new TaskManager({
          jobType: 'training',
          trainingShards: [{ name: 'a', start: 0, count: 1 }],
          minibatchSize: 0,
        }),
    ).toThrow(new RangeError('Expected a positive integer for minibatchSize but received 0'));
  });
});

describe('TaskManager: checkpoint state', () => {
  it('restores unfinished work with its progress; in-flight tasks come back as their remaining range', () => {
    const shards = { trainingShards: [{ name: 'a', start: 0, count: 16 }] };
    const { tm } = manager({ numEpochs: 2, shuffle: true, seed: 3, ...shards });
    const t1 = tm.getTask('w1')!;
    tm.checkRange('w1', t1.id, t1.start, t1.start + 2);
    tm.advance(t1.id, t1.start + 2);
    const t2 = tm.getTask('w2')!;
    applyAll(tm, 'w2', t2);
    const state = JSON.parse(JSON.stringify(tm.toJSON()));

    const { tm: restored } = manager({ numEpochs: 2, shuffle: true, seed: 3, ...shards });
    restored.restore(state);
    expect(restored.status()).toMatchObject({ recordsDone: 2 + (t2.end - t2.start), doingTasks: 0 });
    const seen = new Map<string, number>();
    for (
      let task = restored.getTask('w');
      task && task.type === TaskType.TRAINING;
      task = restored.getTask('w')
    ) {
      for (let r = task.start; r < task.end; r++) {
        const key = `${task.epoch}:${task.shardName}:${r}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
      }
      applyAll(restored, 'w', task, 1);
    }
    // Epoch 0 resumes without the applied records; epoch 1 is complete.
    expect(seen.has(`0:${t1.shardName}:${t1.start}`)).toBe(false);
    expect(seen.has(`0:${t1.shardName}:${t1.start + 2}`)).toBe(true);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(seen.size).toBe(16 - 2 - 4 + 16);
  });

  it('refuses a checkpoint of other data', () => {
    const { tm } = manager();
    const state = tm.toJSON();
    const { tm: other } = manager({ trainingShards: [{ name: 'z', start: 0, count: 3 }] });
    expect(() => other.restore(state)).toThrow(/The checkpoint was made for other data or task sizes/);
  });
});

describe('TaskManager: kills never fail a healthy job', () => {
  it('counts a crash against the task the worker was processing only, never its read-ahead tasks', () => {
    const { tm, events } = manager({ maxTaskFailures: 1, trainEndCallback: false });
    const first = tm.getTask('w1')!;
    const ahead1 = tm.getTask('w1')!;
    const ahead2 = tm.getTask('w1')!;
    expect(tm.recoverWorker('w1', 'worker process exited with signal SIGKILL', true)).toBe(3);
    // maxTaskFailures 1: the first task's failure fails the job, the read-ahead ones do not count.
    expect(tm.error?.message).toBe(
      `Task ${first.id} (training records [0, 4) of 'a' (epoch 0)) failed 1 times, the limit (maxTaskFailures): ` +
        'worker w1: worker process exited with signal SIGKILL',
    );
    const recovered = events.filter((e) => e.type === 'task-recovered');
    expect(recovered.map((e) => [e.taskId, e.counted, e.failures])).toEqual([
      [ahead1.id, false, 0],
      [ahead2.id, false, 0],
      [first.id, true, 1],
    ]);
    expect(recovered[0]).toMatchObject({
      reason: 'worker process exited with signal SIGKILL (not started: not counted)',
    });
  });

  it('does not count a crash that interrupted a task after progress, nor a task already reported done', () => {
    const { tm } = manager({ maxTaskFailures: 1, trainEndCallback: false });
    const done = tm.getTask('w1')!;
    const busy = tm.getTask('w1')!;
    tm.checkRange('w1', done.id, 0, 2);
    tm.advance(done.id, 2);
    tm.reportTaskResult('w1', done.id, 4, '');
    tm.checkRange('w1', busy.id, 4, 6);
    tm.advance(busy.id, 6);
    tm.recoverWorker('w1', 'worker process exited with signal SIGKILL', true);
    expect(tm.finished).toBe(false);
    // Recovered tasks run first, each from where it stopped.
    expect([tm.getTask('w2'), tm.getTask('w2')].map((t) => [t!.id, t!.start])).toEqual(
      expect.arrayContaining([
        [done.id, 2],
        [busy.id, 6],
      ]),
    );
  });

  it('fails the job when a record crashes every worker: progress stops at it', () => {
    const { tm } = manager({ maxTaskFailures: 3, trainEndCallback: false });
    const task = tm.getTask('w0')!;
    tm.checkRange('w0', task.id, 0, 2);
    tm.advance(task.id, 2);
    tm.recoverWorker('w0', 'killed by a record at 2', true);
    for (let i = 1; i <= 3; i++) {
      expect(tm.finished).toBe(false);
      expect(tm.getTask(`w${i}`)).toMatchObject({ id: task.id, start: 2 });
      tm.recoverWorker(`w${i}`, 'killed by a record at 2', true);
    }
    expect(tm.error?.code).toBe('TASK_FAILED');
    expect(tm.error?.message).toMatch(/failed 3 times/);
  });

  it('gives a failed task to a different worker while another one is alive', () => {
    const { tm, tick } = manager({
      trainEndCallback: false,
      trainingShards: [{ name: 'a', start: 0, count: 8 }],
    });
    const t1 = tm.getTask('w1')!;
    expect(tm.heartbeat('w2')).toBe(0);
    tm.reportTaskResult('w1', t1.id, 0, 'tensor shape mismatch');
    // w1 gets the next fresh task, not the one that failed on it; w2 gets the failed one.
    const t2 = tm.getTask('w1')!;
    expect(t2.id).not.toBe(t1.id);
    expect(tm.getTask('w2')).toMatchObject({ id: t1.id });
    applyAll(tm, 'w1', t2);
    tm.reportTaskResult('w1', t2.id, 4, '');
    tm.reportTaskResult('w2', t1.id, 0, 'tensor shape mismatch again');
    // Only w1 is left in the queue's way: it WAITs while w2 is alive...
    tm.heartbeat('w2');
    expect(tm.getTask('w1')).toMatchObject({ type: TaskType.WAIT });
    // ... and takes the task once w2 has been silent for a lease.
    tick(150);
    expect(tm.getTask('w1')).toMatchObject({ id: t1.id, type: TaskType.TRAINING });
  });

  it('counts done and total per kind, and keeps the failure code in checkpoints', () => {
    const { tm, setVersion } = manager({
      jobType: 'training-with-evaluation',
      evaluationShards: [{ name: 'val', start: 0, count: 6 }],
      trainEndCallback: false,
      trainingShards: [{ name: 'a', start: 0, count: 8 }],
    });
    for (let task = tm.getTask('w'); task && !tm.finished; task = tm.getTask('w')) {
      applyAll(tm, 'w', task);
      setVersion(1);
    }
    expect(tm.status()).toMatchObject({
      state: 'succeeded',
      recordsDone: 8,
      recordsTotal: 8,
      records: {
        training: { done: 8, total: 8 },
        evaluation: { done: 6, total: 6 },
        prediction: { done: 0, total: 0 },
      },
    });
    expect(tm.toJSON()).toMatchObject({
      recordsDone: 14,
      recordsDoneByKind: { training: 8, evaluation: 6, prediction: 0 },
    });
    const failing = manager();
    failing.tm.getTask('w');
    failing.tm.fail('WORKER_RELAUNCHES_EXHAUSTED', 'gave up');
    const state = failing.tm.toJSON();
    expect(state).toMatchObject({ failed: 'gave up', failedCode: 'WORKER_RELAUNCHES_EXHAUSTED' });
    const restored = manager().tm;
    restored.restore(state);
    expect(restored.error?.code).toBe('WORKER_RELAUNCHES_EXHAUSTED');
  });
});

describe('TaskManager: failure as a phase', () => {
  it('keeps the code of a task that failed the job through a checkpoint, with its remaining range', () => {
    const { tm, events } = manager({ trainEndCallback: false });
    const task = tm.getTask('w1') as TaskAssignment;
    tm.checkRange('w1', task.id, task.start, task.start + 2);
    tm.advance(task.id, task.start + 2);
    expect(tm.reportTaskResult('w1', task.id, 2, 'NON_FINITE: the loss is NaN')).toBe(true);
    expect(tm.status()).toMatchObject({ state: 'failed', phase: 'failed', error: { code: 'NON_FINITE' } });
    expect(events.filter((e) => e.type === 'job-failed')).toHaveLength(1);
    // A second failure keeps the first one.
    tm.fail('WORKER_RELAUNCHES_EXHAUSTED', 'gave up');
    expect(tm.error?.code).toBe('NON_FINITE');
    expect(events.filter((e) => e.type === 'job-failed')).toHaveLength(1);

    const state = JSON.parse(JSON.stringify(tm.toJSON()));
    expect(state).toMatchObject({ phase: 'failed', failedCode: 'NON_FINITE' });
    const { tm: restored, events: restoredEvents } = manager({ trainEndCallback: false });
    restored.restore(state);
    expect(restored.finished).toBe(true);
    expect(restored.error).toBeInstanceOf(JobFailedError);
    expect(restored.error).toMatchObject({
      code: 'NON_FINITE',
      message: `Task ${task.id} failed on worker w1: the loss is NaN`,
    });
    expect(restored.status()).toMatchObject({ state: 'failed', phase: 'failed', recordsDone: 2 });
    // Nothing is lost: the failed task is saved with the rest of its range.
    expect(restored.toJSON().tasks).toContainEqual(
      expect.objectContaining({ id: task.id, progress: task.start + 2, end: task.end }),
    );
    expect(restored.getTask('w2')).toBeUndefined();
    expect(restoredEvents).toEqual([]);
  });

  it('restores a failed job from a checkpoint written before failed was a phase', () => {
    const { tm } = manager();
    tm.getTask('w');
    const current = tm.toJSON();
    // The shape of older checkpoints: the phase the job failed in, the message, no code.
    const older = { ...current, phase: 'training' as const, failed: 'Task 1 failed 3 times' };
    const restored = manager().tm;
    restored.restore(older);
    expect(restored.status()).toMatchObject({ state: 'failed', phase: 'failed' });
    expect(restored.error).toMatchObject({ code: 'TASK_FAILED', message: 'Task 1 failed 3 times' });
    expect(restored.getTask('w')).toBeUndefined();
  });

  it('keeps the reasons of counted task failures through a checkpoint', () => {
    const { tm } = manager({ maxTaskFailures: 3, trainEndCallback: false });
    const task = tm.getTask('w1') as TaskAssignment;
    tm.reportTaskResult('w1', task.id, 0, 'out of memory');
    expect(tm.getTask('w2')?.id).toBe(task.id);
    tm.reportTaskResult('w2', task.id, 0, 'disk full');
    const restored = manager({ maxTaskFailures: 3, trainEndCallback: false }).tm;
    restored.restore(JSON.parse(JSON.stringify(tm.toJSON())));
    expect(restored.getTask('w3')?.id).toBe(task.id);
    restored.reportTaskResult('w3', task.id, 0, 'segfault');
    expect(restored.error?.code).toBe('TASK_FAILED');
    expect(restored.error?.message).toContain(
      'worker w1: failed: out of memory; worker w2: failed: disk full; worker w3: failed: segfault',
    );
  });
});
