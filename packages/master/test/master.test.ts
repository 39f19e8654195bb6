import { accuracyPartial, GradientStatus, TaskType } from '@edl/proto';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../src/logger.js';
import { Master } from '../src/master.js';

const grad = (values: number[]) => [{ name: 'w', shape: [values.length], values: new Float32Array(values) }];

function master(jobType: 'training' | 'training-with-evaluation' = 'training') {
  const m = new Master({
    jobType,
    trainingShards: [{ name: 's', start: 0, count: 8 }],
    evaluationShards: [{ name: 'v', start: 0, count: 4 }],
    evaluationSteps: 1,
    minibatchSize: 2,
    numMinibatchesPerTask: 2,
    trainEndCallback: false,
    logger: silentLogger,
    parameterStore: { mode: 'async', maxStaleness: 100, optimizer: { type: 'sgd', learningRate: 1 } },
  });
  m.reportVariables('w0', grad([0]));
  return m;
}

describe('Master: gradients of minibatches that span tasks', () => {
  it('applies all ranges of a report together, and refuses a resend as a whole', () => {
    const m = master();
    const a = m.getTask('w').task!;
    const b = m.getTask('w').task!;
    m.reportGradient({
      workerId: 'w',
      taskId: a.id,
      rangeStart: a.start,
      rangeEnd: a.start + 2,
      modelVersion: 0,
      gradients: grad([1]),
    });
    // One minibatch: the last 2 records of task a and the first 2 of task b.
    const spanning = {
      workerId: 'w',
      taskId: a.id,
      rangeStart: a.start + 2,
      rangeEnd: a.end,
      modelVersion: 1,
      gradients: grad([1]),
      moreRanges: [{ taskId: b.id, rangeStart: b.start, rangeEnd: b.start + 2 }],
    };
    expect(m.reportGradient(spanning)).toEqual({
      status: GradientStatus.ACCEPTED,
      modelVersion: 2,
      taskProgress: a.end,
    });
    expect(m.taskManager.inFlight()).toEqual([
      expect.objectContaining({ taskId: b.id, progress: b.start + 2 }),
    ]);
    expect(m.reportGradient(spanning).status).toBe(GradientStatus.ALREADY_APPLIED);
    expect(m.store.version).toBe(2);
    expect(m.status().recordsDone).toBe(6);
  });

  it('applies nothing when one of the ranges is not next in line', () => {
    const m = master();
    const a = m.getTask('w').task!;
    const b = m.getTask('w').task!;
    const reply = m.reportGradient({
      workerId: 'w',
      taskId: a.id,
      rangeStart: a.start,
      rangeEnd: a.start + 2,
      modelVersion: 0,
      gradients: grad([1]),
      moreRanges: [{ taskId: b.id, rangeStart: b.start + 2, rangeEnd: b.end }],
    });
    expect(reply.status).toBe(GradientStatus.OUT_OF_ORDER);
    expect(m.store.version).toBe(0);
    expect(m.status().recordsDone).toBe(0);
    expect(() =>
      m.reportGradient({
        workerId: 'w',
        taskId: a.id,
        rangeStart: a.start,
        rangeEnd: a.start + 2,
        modelVersion: 0,
        gradients: grad([1]),
        moreRanges: [{ taskId: a.id, rangeStart: a.start + 2, rangeEnd: a.end }],
      }),
    ).toThrow(new RangeError(`Expected one range per task in a report but received task ${a.id} twice`));
  });
});

describe('Master: evaluation during training', () => {
  it('evaluates the pinned version even after the model moved on, and refuses gradients for eval tasks', () => {
    const m = master('training-with-evaluation');
    const t = m.getTask('w').task!;
    m.reportGradient({
      workerId: 'w',
      taskId: t.id,
      rangeStart: t.start,
      rangeEnd: t.start + 2,
      modelVersion: 0,
      gradients: grad([-5]),
    });
    // Version 1 triggers a round (evaluationSteps 1): its tasks come first, for version 1.
    const e = m.getTask('w').task!;
    expect(e).toMatchObject({ type: TaskType.EVALUATION, modelVersion: 1 });
    m.reportGradient({
      workerId: 'w',
      taskId: t.id,
      rangeStart: t.start + 2,
      rangeEnd: t.end,
      modelVersion: 1,
      gradients: grad([-1]),
    });
    expect(m.getModel(1).variables[0]!.values[0]).toBe(5);
    expect(m.getModel(-1).variables[0]!.values[0]).toBe(6);
    expect(() =>
      m.reportGradient({
        workerId: 'w',
        taskId: e.id,
        rangeStart: e.start,
        rangeEnd: e.start + 2,
        modelVersion: 2,
        gradients: grad([1]),
      }),
    ).toThrow(/is a evaluation task, not a training task/);
    const reply = m.reportEvaluationMetrics({
      workerId: 'w',
      taskId: e.id,
      rangeStart: e.start,
      rangeEnd: e.end,
      metrics: { accuracy: accuracyPartial([1, 0, 1, 0], [1, 0, 0, 0]) },
    });
    expect(reply.status).toBe(GradientStatus.ACCEPTED);
    expect(m.evaluation.results).toEqual([
      expect.objectContaining({ round: 1, modelVersion: 1, records: 4, metrics: { accuracy: 0.75 } }),
    ]);
  });
});
