import { fatalTaskErrorCode } from '@edl/proto';
import { describe, expect, it } from 'vitest';
import { TaskManager } from '../src/task-manager.js';
import type { TaskManagerEvent } from '../src/tasks/types.js';

function manager() {
  const events: TaskManagerEvent[] = [];
  const tm = new TaskManager({
    jobType: 'training',
    trainingShards: [{ name: 'a', start: 0, count: 10 }],
    minibatchSize: 2,
    numMinibatchesPerTask: 2,
    leaseMs: 100,
    maxTaskFailures: 3,
    now: () => 1_000,
    modelVersion: () => 0,
    onEvent: (e) => events.push(e),
  });
  return { tm, events };
}

describe('TaskManager: fatal task errors', () => {
  it('fails the job on the first NON_FINITE report, without retrying the task', () => {
    const { tm, events } = manager();
    const task = tm.getTask('w1');
    expect(task?.id).toBeDefined();
    const id = task?.id as number;
    expect(
      tm.reportTaskResult('w1', id, 0, 'NON_FINITE: Non-finite training step on task 1: the loss is NaN'),
    ).toBe(true);
    expect(tm.finished).toBe(true);
    const failed = events.find((e) => e.type === 'job-failed');
    expect(failed).toMatchObject({
      type: 'job-failed',
      error: {
        code: 'NON_FINITE',
        message: `Task ${id} failed on worker w1: Non-finite training step on task 1: the loss is NaN`,
      },
    });
    expect(tm.status()).toMatchObject({ state: 'failed' });
    // Nothing more is handed out.
    expect(tm.getTask('w2')?.type).not.toBe(task?.type);
  });

  it('retries an ordinary failure up to maxTaskFailures', () => {
    const { tm } = manager();
    const task = tm.getTask('w1');
    expect(tm.reportTaskResult('w1', task?.id as number, 0, 'out of memory')).toBe(true);
    expect(tm.finished).toBe(false);
    expect(tm.getTask('w2')?.id).toBe(task?.id);
  });

  it('recognises only the fatal codes at the start of the error text', () => {
    expect(fatalTaskErrorCode('NON_FINITE: the loss is NaN')).toBe('NON_FINITE');
    expect(fatalTaskErrorCode('datasetFn failed: NON_FINITE: x')).toBeUndefined();
    expect(fatalTaskErrorCode('NON_FINITE')).toBeUndefined();
  });
});
