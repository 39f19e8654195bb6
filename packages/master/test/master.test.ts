import { accuracyPartial, GradientStatus, TaskType } from '@edl/proto';
import type { ParameterStoreOptions } from '@edl/ps';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../src/logger.js';
import { Master } from '../src/master.js';

const grad = (values: number[]) => [{ name: 'w', shape: [values.length], values: new Float32Array(values) }];

/** A training master of one-minibatch tasks over 8 records, whose model starts at `initial`. */
function stepMaster(parameterStore: ParameterStoreOptions, initial: number[]) {
  const m = new Master({
    jobType: 'training',
    trainingShards: [{ name: 's', start: 0, count: 8 }],
    minibatchSize: 2,
    numMinibatchesPerTask: 1,
    trainEndCallback: false,
    logger: silentLogger,
    parameterStore,
  });
  m.reportVariables('w0', grad(initial));
  return m;
}

/** Takes three tasks now; reports a gradient of `values` for the i-th, with `extra` fields. */
function taskReporter(m: Master, values: number[]) {
  const tasks = [m.getTask('w').task!, m.getTask('w').task!, m.getTask('w').task!];
  return (i: number, modelVersion: number, extra: { wantModel?: boolean; mirror?: boolean } = {}) =>
    m.reportGradient({
      workerId: 'w',
      taskId: tasks[i]!.id,
      rangeStart: tasks[i]!.start,
      rangeEnd: tasks[i]!.end,
      modelVersion,
      gradients: grad(values),
      ...extra,
    });
}

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

describe('Master: one round trip per step', () => {
  it('sends the model back with an accepted or stale gradient when asked', () => {
    const m = stepMaster(
      { mode: 'async', maxStaleness: 1, optimizer: { type: 'sgd', learningRate: 1 } },
      [0],
    );
    const send = taskReporter(m, [1]);
    const report = (i: number, modelVersion: number, wantModel: boolean) =>
      send(i, modelVersion, { wantModel });
    const accepted = report(0, 0, true);
    expect(accepted.status).toBe(GradientStatus.ACCEPTED);
    expect(accepted.modelVersion).toBe(1);
    expect(Array.from(accepted.variables![0]!.values)).toEqual([-1]);
    expect(report(1, 1, false).variables).toBeUndefined();
    // Version 2 now: a gradient of version 0 is 2 old, past the bound of 1.
    const stale = report(2, 0, true);
    expect(stale.status).toBe(GradientStatus.STALE);
    expect(stale.modelVersion).toBe(2);
    expect(Array.from(stale.variables![0]!.values)).toEqual([-2]);
    // A resend of an applied range is refused for its range, with no model.
    const again = report(0, 2, true);
    expect(again.status).toBe(GradientStatus.ALREADY_APPLIED);
    expect(again.variables).toBeUndefined();
    expect(m.gradientOutcomes).toEqual({
      applied: 2,
      stale: 1,
      rejected: 1,
      mirrored: 0,
      stalenessHistogram: [2, ...new Array(16).fill(0)],
    });
  });

  it('answers a pull of the version the worker holds with no variables', () => {
    const m = master();
    expect(m.getModel(-1, 0)).toEqual({ version: 0, initialized: true, unchanged: true, variables: [] });
    expect(m.getModel(-1, 5).variables).toHaveLength(1);
    expect(m.getModel(-1).unchanged).toBe(false);
  });

  it('hands its optimizer to a mirroring worker, and answers its gradient with a checksum when it was the whole update', () => {
    const m = stepMaster(
      { mode: 'async', maxStaleness: 4, optimizer: { type: 'adam', learningRate: 0.5 } },
      [0, 1],
    );
    const state = m.getModel(-1, undefined, true);
    expect(state.optimizer).toEqual({
      config: { type: 'adam', learningRate: 0.5, beta1: 0.9, beta2: 0.999, epsilon: 1e-7 },
      step: 0,
      slots: [],
    });
    // Without asking, no optimizer comes.
    expect(m.getModel(-1).optimizer).toBeUndefined();
    const send = taskReporter(m, [1, -2]);
    const report = (i: number, modelVersion: number) =>
      send(i, modelVersion, { wantModel: true, mirror: true });
    const first = report(0, 0);
    expect(first).toMatchObject({ status: GradientStatus.ACCEPTED, modelVersion: 1, mirrored: true });
    expect(first.variables).toBeUndefined();
    expect(first.modelChecksum).toBe(m.store.checksum());
    // The state after one update: Adam's step and both slots, named VARIABLE/SLOT.
    const after = m.getModel(-1, undefined, true).optimizer!;
    expect(after.step).toBe(1);
    expect(after.slots.map((slot) => slot.name).sort()).toEqual(['w/m', 'w/v']);
    // A gradient of version 0 applied onto version 1 is not the whole update of version 2: the
    // worker's replica lacks version 1, so the model comes back.
    const late = report(1, 0);
    expect(late).toMatchObject({ status: GradientStatus.ACCEPTED, modelVersion: 2 });
    expect(late.mirrored).toBeUndefined();
    expect(late.variables).toHaveLength(1);
    expect(m.gradientOutcomes).toMatchObject({ applied: 2, mirrored: 1 });
  });

  it('offers no optimizer, and mirrors nothing, when an update averages several gradients', () => {
    const m = stepMaster({ mode: 'sync', gradsToWait: 2, optimizer: { type: 'sgd', learningRate: 1 } }, [0]);
    expect(m.getModel(-1, undefined, true).optimizer).toBeUndefined();
    const task = m.getTask('w').task!;
    const reply = m.reportGradient({
      workerId: 'w',
      taskId: task.id,
      rangeStart: task.start,
      rangeEnd: task.end,
      modelVersion: 0,
      gradients: grad([1]),
      mirror: true,
    });
    expect(reply.status).toBe(GradientStatus.ACCEPTED);
    expect(reply.mirrored).toBeUndefined();
  });
});
