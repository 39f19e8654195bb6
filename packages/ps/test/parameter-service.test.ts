import { create, fromBinary } from '@bufbuild/protobuf';
import {
  fromTensorMessage,
  GetModelRequestSchema,
  type GradientReport,
  GradientStatus,
  ReportGradientRequestSchema,
  ReportGradientResponseSchema,
  ReportVariablesRequestSchema,
  toTensorMessage,
} from '@edl/proto';
import { describe, expect, it } from 'vitest';
import { ParameterStoreError } from '../src/errors.js';
import { type GradientLedger, ParameterService, type ReportReply } from '../src/parameter-service.js';
import { ParameterStore, type ParameterStoreOptions } from '../src/parameter-store.js';
import { parameterRpcHandlers } from '../src/rpc-handlers.js';

const w = (values: number[]) => [{ name: 'w', shape: [values.length], values: new Float32Array(values) }];

/**
 * A ledger of one task's record ranges, as the master keeps them: a range is applied when it starts
 * at the task's progress; a resend is ALREADY_APPLIED. It remembers what the service told it.
 */
class RangeLedger implements GradientLedger {
  progress = 0;
  evaluating: number | undefined;
  readonly newVersions: boolean[] = [];

  checkRanges(report: GradientReport): { ok: true } | { ok: false; reply: ReportReply } {
    if (report.rangeStart === this.progress) return { ok: true };
    const status =
      report.rangeStart < this.progress ? GradientStatus.ALREADY_APPLIED : GradientStatus.OUT_OF_ORDER;
    return { ok: false, reply: { status, modelVersion: -1, taskProgress: this.progress } };
  }

  keepsVersion(version: number): boolean {
    return this.evaluating === version;
  }

  recordApplied(report: GradientReport, versionChanged: boolean): number {
    this.progress = report.rangeEnd;
    this.newVersions.push(versionChanged);
    return this.progress;
  }
}

function service(options: ParameterStoreOptions = { optimizer: { type: 'sgd', learningRate: 1 } }) {
  const ledger = new RangeLedger();
  const store = new ParameterStore(options);
  return { ledger, store, service: new ParameterService(store, ledger) };
}

const report = (
  rangeStart: number,
  modelVersion: number,
  values: number[],
  more: Partial<GradientReport> = {},
) => ({
  workerId: 'worker-0',
  taskId: 1,
  rangeStart,
  rangeEnd: rangeStart + 10,
  modelVersion,
  gradients: w(values),
  ...more,
});

describe('ParameterService', () => {
  it('applies a gradient once: a resend is refused by the ledger and counted as rejected', () => {
    const { service: s, ledger, store } = service();
    expect(s.reportVariables('worker-0', w([10]))).toEqual({ accepted: true, version: 0 });
    expect(s.reportVariables('worker-1', w([99]))).toEqual({ accepted: false, version: 0 });
    expect(s.reportGradient(report(0, 0, [1]))).toEqual({
      status: GradientStatus.ACCEPTED,
      modelVersion: 1,
      taskProgress: 10,
    });
    expect(s.reportGradient(report(0, 0, [1])).status).toBe(GradientStatus.ALREADY_APPLIED);
    expect(store.getModel().variables[0]!.values[0]).toBe(9);
    expect(ledger.newVersions).toEqual([true]);
    expect(s.gradientOutcomes).toEqual({
      applied: 1,
      stale: 0,
      rejected: 1,
      mirrored: 0,
      stalenessHistogram: [1, ...Array(16).fill(0)],
    });
  });

  it('answers a stale gradient with the model when asked, without touching the ledger', () => {
    const { service: s, ledger } = service({ mode: 'sync', optimizer: { type: 'sgd', learningRate: 1 } });
    s.reportVariables('worker-0', w([10]));
    s.reportGradient(report(0, 0, [1]));
    const stale = s.reportGradient(report(10, 0, [1], { wantModel: true }));
    expect(stale).toMatchObject({ status: GradientStatus.STALE, modelVersion: 1, taskProgress: 10 });
    expect(Array.from(stale.variables![0]!.values)).toEqual([9]);
    expect(ledger.progress).toBe(10);
    expect(s.gradientOutcomes.stale).toBe(1);
  });

  it('tells the ledger when an update made no version (a sync batch still filling)', () => {
    const { service: s, ledger } = service({ mode: 'sync', gradsToWait: 2 });
    s.reportVariables('worker-0', w([0]));
    s.reportGradient(report(0, 0, [1]));
    s.reportGradient(report(10, 0, [1]));
    expect(ledger.newVersions).toEqual([false, true]);
  });

  it('pins the version an evaluation still reads before replacing it', () => {
    const { service: s, ledger } = service();
    s.reportVariables('worker-0', w([5]));
    ledger.evaluating = 0;
    s.reportGradient(report(0, 0, [1]));
    expect(Array.from(s.getModel(0).variables[0]!.values)).toEqual([5]);
    ledger.evaluating = undefined;
    s.reportGradient(report(10, 1, [1]));
    expect(() => s.getModel(1)).toThrow(ParameterStoreError);
  });

  it('answers a mirrored gradient with a checksum instead of the model', () => {
    const { service: s, store } = service({
      mode: 'async',
      optimizer: { type: 'momentum', learningRate: 0.1 },
    });
    expect(s.getModel(-1)).toEqual({ version: 0, initialized: false, unchanged: false, variables: [] });
    s.reportVariables('worker-0', w([1, 2]));
    const pulled = s.getModel(-1, undefined, true);
    expect(pulled.optimizer).toMatchObject({ config: { type: 'momentum', learningRate: 0.1 }, step: 0 });
    const reply = s.reportGradient(report(0, 0, [1, 1], { mirror: true, wantModel: true }));
    expect(reply).toEqual({
      status: GradientStatus.ACCEPTED,
      modelVersion: 1,
      taskProgress: 10,
      mirrored: true,
      modelChecksum: store.checksum(),
    });
    // Computed on an older version: applied, but the worker's replica cannot follow: the model comes.
    const late = s.reportGradient(report(10, 0, [1, 1], { mirror: true, wantModel: true }));
    expect(late.mirrored).toBeUndefined();
    expect(late.variables).toHaveLength(1);
    expect(s.getModel(-1, 2)).toEqual({ version: 2, initialized: true, unchanged: true, variables: [] });
    expect(s.gradientOutcomes).toMatchObject({ applied: 2, mirrored: 1 });
  });
});

describe('parameterRpcHandlers', () => {
  it('serves GetModel, ReportVariables and ReportGradient from wire messages, unary and streamed alike', () => {
    const { service: s } = service();
    const handlers = parameterRpcHandlers(s);
    const variables = handlers.reportVariables(
      create(ReportVariablesRequestSchema, {
        workerId: 'worker-0',
        variables: w([4, 8]).map((t) => toTensorMessage(t)),
      }),
    );
    expect(variables).toMatchObject({ accepted: true, version: 0n });
    const gradient = (rangeStart: number, modelVersion: number) =>
      create(ReportGradientRequestSchema, {
        workerId: 'worker-0',
        taskId: 1n,
        rangeStart: BigInt(rangeStart),
        rangeEnd: BigInt(rangeStart + 10),
        modelVersion: BigInt(modelVersion),
        gradients: w([1, 2]).map((t) => toTensorMessage(t)),
        wantModel: true,
      });
    const unary = handlers.reportGradient(gradient(0, 0));
    expect(unary).toMatchObject({
      status: GradientStatus.ACCEPTED,
      modelVersion: 1n,
      taskProgress: 10n,
      hasModel: true,
    });
    const streamed = fromBinary(ReportGradientResponseSchema, handlers.gradientStreamReply(gradient(10, 1)));
    expect(streamed).toMatchObject({
      status: GradientStatus.ACCEPTED,
      modelVersion: 2n,
      taskProgress: 20n,
      hasModel: true,
    });
    const model = handlers.getModel(create(GetModelRequestSchema, { workerId: 'worker-0', version: -1n }));
    expect(model.version).toBe(2n);
    // 4 - 1 - 1 and 8 - 2 - 2 (SGD, learning rate 1).
    expect(Array.from(fromTensorMessage(model.variables[0]!).values)).toEqual([2, 4]);
    expect(() => handlers.reportGradient(create(ReportGradientRequestSchema, { workerId: '' }))).toThrow(
      TypeError,
    );
  });
});

describe('ParameterService with dense variables on the shards (wantUpdate)', () => {
  it('names the update each tensorless step joins, as applyGradient applies it, and applies nothing', () => {
    const sync = service({ mode: 'sync', gradsToWait: 2, optimizer: { type: 'sgd', learningRate: 1 } });
    sync.service.reportVariables('worker-0', w([5]));
    const tensorless = (start: number, version: number) =>
      sync.service.reportGradient({ ...report(start, version, []), gradients: [], wantUpdate: true });
    // Both gradients of version 0 join the update that makes version 1: the shards average them.
    expect(tensorless(0, 0).update).toEqual({ version: 1, gradients: 2, lrDivisor: 1 });
    expect(tensorless(10, 0)).toMatchObject({
      modelVersion: 1,
      update: { version: 1, gradients: 2, lrDivisor: 1 },
    });
    expect(tensorless(20, 1).update).toEqual({ version: 2, gradients: 2, lrDivisor: 1 });
    expect(Array.from(sync.store.getModel().variables[0]?.values ?? [])).toEqual([5]);

    const modulated = service({
      mode: 'async',
      maxStaleness: 8,
      stalenessModulation: true,
      optimizer: { type: 'sgd', learningRate: 1 },
    });
    modulated.service.reportVariables('worker-0', w([0]));
    for (let i = 0; i < 3; i++)
      modulated.service.reportGradient({ ...report(i * 10, i, []), gradients: [], wantUpdate: true });
    // Computed on version 0 and applied onto version 3: a third of the rate.
    expect(
      modulated.service.reportGradient({ ...report(30, 0, []), gradients: [], wantUpdate: true }).update,
    ).toEqual({ version: 4, gradients: 1, lrDivisor: 3 });
    // Without wantUpdate the reply is as before.
    expect(modulated.service.reportGradient(report(40, 4, [1])).update).toBeUndefined();
  });
});
