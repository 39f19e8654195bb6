/** The exact-size encoders of model-carrying messages write the same bytes as the generated toBinary. */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import {
  GetModelResponseSchema,
  GradientStatus,
  ReportGradientRequestSchema,
  ReportGradientResponseSchema,
  ReportVariablesRequestSchema,
} from '../src/generated/edl/v1/master_pb.js';
import {
  encodeGetModelResponse,
  encodeReportGradientRequest,
  encodeReportGradientResponse,
  encodeReportVariablesRequest,
} from '../src/model-message-codec.js';
import { toTensorMessage } from '../src/tensor.js';

function tensors(seed: number) {
  let state = seed;
  const next = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state;
  };
  return [
    // A scalar, an empty tensor, a non-ASCII name, a large one (multi-byte lengths).
    { name: 'bias', shape: [], values: new Float32Array([next() / 7]) },
    { name: '', shape: [0, 3], values: new Float32Array(0) },
    { name: 'dense/kernel_é', shape: [40, 20], values: Float32Array.from({ length: 800 }, next) },
    { name: 'conv1/kernel', shape: [3, 3, 1, 8], values: Float32Array.from({ length: 72 }, next) },
  ].map((t) => toTensorMessage(t));
}

describe('model message codec', () => {
  it('ReportGradientRequest: the same bytes as toBinary, with and without every field', () => {
    const messages = [
      create(ReportGradientRequestSchema, {}),
      create(ReportGradientRequestSchema, {
        workerId: 'worker-12',
        taskId: 7n,
        rangeStart: 300n,
        rangeEnd: 2n ** 40n,
        modelVersion: -1n,
        gradients: tensors(1),
        moreRanges: [
          { taskId: 8n, rangeStart: 0n, rangeEnd: 20n },
          { taskId: 0n, rangeStart: 0n, rangeEnd: 0n },
        ],
        wantModel: true,
        mirror: true,
      }),
      // A worker whose dense variables are on the shards: no tensor, the update asked for.
      create(ReportGradientRequestSchema, {
        workerId: 'worker-3',
        taskId: 2n,
        modelVersion: 9n,
        wantUpdate: true,
      }),
    ];
    for (const message of messages) {
      const bytes = encodeReportGradientRequest(message);
      expect(Buffer.compare(bytes, Buffer.from(toBinary(ReportGradientRequestSchema, message)))).toBe(0);
      const decoded = fromBinary(ReportGradientRequestSchema, bytes);
      expect(decoded.gradients.map((g) => [g.name, g.shape, g.data.length])).toEqual(
        message.gradients.map((g) => [g.name, g.shape, g.data.length]),
      );
      expect([decoded.modelVersion, decoded.wantModel, decoded.moreRanges.length]).toEqual([
        message.modelVersion,
        message.wantModel,
        message.moreRanges.length,
      ]);
    }
  });

  it('ReportGradientResponse, GetModelResponse, ReportVariablesRequest: the same bytes as toBinary', () => {
    const response = create(ReportGradientResponseSchema, {
      status: GradientStatus.STALE,
      modelVersion: 123456789n,
      taskProgress: 64n,
      variables: tensors(2),
      hasModel: true,
    });
    expect(
      Buffer.compare(
        encodeReportGradientResponse(response),
        Buffer.from(toBinary(ReportGradientResponseSchema, response)),
      ),
    ).toBe(0);
    // A mirrored answer: no model, a checksum (fixed32, the high bit set to catch sign mistakes).
    for (const modelChecksum of [0x9e3779b9, 1]) {
      const mirrored = create(ReportGradientResponseSchema, {
        status: GradientStatus.ACCEPTED,
        modelVersion: 8n,
        taskProgress: 128n,
        mirrored: true,
        modelChecksum,
      });
      const bytes = encodeReportGradientResponse(mirrored);
      expect(Buffer.compare(bytes, Buffer.from(toBinary(ReportGradientResponseSchema, mirrored)))).toBe(0);
      expect(fromBinary(ReportGradientResponseSchema, bytes).modelChecksum).toBe(modelChecksum);
    }
    // The update a step joins, for a worker whose dense variables are on the shards.
    const update = create(ReportGradientResponseSchema, {
      status: GradientStatus.ACCEPTED,
      modelVersion: 41n,
      taskProgress: 20n,
      updateVersion: 41n,
      updateGradients: 4n,
      updateLrDivisor: 3n,
    });
    const updateBytes = encodeReportGradientResponse(update);
    expect(Buffer.compare(updateBytes, Buffer.from(toBinary(ReportGradientResponseSchema, update)))).toBe(0);
    const decodedUpdate = fromBinary(ReportGradientResponseSchema, updateBytes);
    expect([
      decodedUpdate.updateVersion,
      decodedUpdate.updateGradients,
      decodedUpdate.updateLrDivisor,
    ]).toEqual([41n, 4n, 3n]);
    const empty = create(ReportGradientResponseSchema, {});
    expect(encodeReportGradientResponse(empty).length).toBe(0);
    for (const model of [
      create(GetModelResponseSchema, { version: 5n, initialized: true, variables: tensors(3) }),
      create(GetModelResponseSchema, { version: 5n, initialized: true, unchanged: true }),
      create(GetModelResponseSchema, {
        version: 5n,
        initialized: true,
        variables: tensors(5),
        optimizer: { configJson: '{"type":"adam"}', step: 5n, slots: tensors(6) },
      }),
    ]) {
      expect(
        Buffer.compare(encodeGetModelResponse(model), Buffer.from(toBinary(GetModelResponseSchema, model))),
      ).toBe(0);
    }
    const offer = create(ReportVariablesRequestSchema, { workerId: 'w', variables: tensors(4) });
    expect(
      Buffer.compare(
        encodeReportVariablesRequest(offer),
        Buffer.from(toBinary(ReportVariablesRequestSchema, offer)),
      ),
    ).toBe(0);
  });

  it('sends a view of the values when asked not to copy', () => {
    const values = new Float32Array([1, 2, 3]);
    const view = toTensorMessage({ name: 'w', shape: [3], values }, { copy: false });
    const copy = toTensorMessage({ name: 'w', shape: [3], values });
    values[0] = 9;
    expect(new Float32Array(view.data.buffer, view.data.byteOffset, 3)[0]).toBe(9);
    expect(new Float32Array(copy.data.slice().buffer)[0]).toBe(1);
  });
});
