import { create } from '@bufbuild/protobuf';
import { checkNonEmptyString } from '@edl/common';
import {
  encodeReportGradientResponse,
  fromRangeMessages,
  fromTensorMessage,
  type GetModelRequest,
  type GetModelResponse,
  GetModelResponseSchema,
  type NamedTensor,
  type ReportGradientRequest,
  type ReportGradientResponse,
  ReportGradientResponseSchema,
  type ReportVariablesRequest,
  type ReportVariablesResponse,
  ReportVariablesResponseSchema,
  type Tensor,
  toSafeNumber,
  toTensorMessage,
  toWireInt,
} from '@edl/proto';
import type { ParameterEndpoints } from './parameter-service.js';

/** Gradient names whose decoding arrays are kept for reuse (more than any model has variables). */
const MAX_SCRATCH_GRADIENTS = 4096;

/**
 * The parameter store's RPCs of `MasterService` as synchronous request -> reply functions. The
 * server that registers them wraps them with its token check and error mapping: RangeError and
 * TypeError are bad arguments, a {@link ParameterStoreError} a failed precondition.
 */
export interface ParameterRpcHandlers {
  getModel(request: GetModelRequest): GetModelResponse;
  reportVariables(request: ReportVariablesRequest): ReportVariablesResponse;
  reportGradient(request: ReportGradientRequest): ReportGradientResponse;
  /**
   * One report of a GradientStream, its reply encoded at once: a stream's reply may wait behind
   * the one before it and be written after other gradients changed the store's arrays, so it is
   * encoded from views now rather than copied.
   */
  gradientStreamReply(request: ReportGradientRequest): Buffer;
}

/**
 * The GetModel, ReportVariables, ReportGradient and GradientStream handlers over `endpoints` (the
 * master, or a {@link ParameterService}). Each call of this function has its own gradient decoding
 * arrays: call it once per server.
 */
export function parameterRpcHandlers(endpoints: ParameterEndpoints): ParameterRpcHandlers {
  /**
   * Decoding arrays of gradients, reused from one report to the next: the store reads a gradient
   * only within its synchronous reportGradient call (it applies it, or copies it into a sync
   * batch), and a fresh 4-bytes-per-weight array per step was most of the master's garbage.
   */
  const gradientScratch = new Map<string, Float32Array>();
  const decodeGradient = (message: Tensor): NamedTensor => {
    const decoded = fromTensorMessage(message, gradientScratch.get(message.name));
    // Bounded: names beyond a model's worth (a worker sending junk) get arrays of their own.
    if (gradientScratch.has(message.name) || gradientScratch.size < MAX_SCRATCH_GRADIENTS) {
      gradientScratch.set(message.name, decoded.values);
    }
    return decoded;
  };

  const reportGradient = (r: ReportGradientRequest): ReportGradientResponse => {
    const reply = endpoints.reportGradient({
      workerId: checkNonEmptyString(r.workerId, 'workerId'),
      taskId: toSafeNumber(r.taskId, 'taskId'),
      rangeStart: toSafeNumber(r.rangeStart, 'rangeStart'),
      rangeEnd: toSafeNumber(r.rangeEnd, 'rangeEnd'),
      modelVersion: toSafeNumber(r.modelVersion, 'modelVersion'),
      gradients: r.gradients.map(decodeGradient),
      moreRanges: fromRangeMessages(r.moreRanges),
      wantModel: r.wantModel,
      mirror: r.mirror,
      ...(r.wantUpdate ? { wantUpdate: true } : {}),
    });
    return create(ReportGradientResponseSchema, {
      status: reply.status,
      modelVersion: toWireInt(reply.modelVersion, 'modelVersion'),
      taskProgress: toWireInt(reply.taskProgress, 'taskProgress'),
      hasModel: reply.variables !== undefined,
      // Views of the store's arrays: the reply is encoded before another gradient can change them
      // (a unary reply at once by grpc-js, a GradientStream reply by gradientStreamReply).
      variables: reply.variables?.map((v) => toTensorMessage(v, { copy: false })) ?? [],
      mirrored: reply.mirrored === true,
      modelChecksum: reply.modelChecksum ?? 0,
      updateVersion: toWireInt(reply.update?.version ?? 0, 'updateVersion'),
      updateGradients: toWireInt(reply.update?.gradients ?? 0, 'updateGradients'),
      updateLrDivisor: toWireInt(reply.update?.lrDivisor ?? 0, 'updateLrDivisor'),
    });
  };

  return {
    getModel(r) {
      const model = endpoints.getModel(
        toSafeNumber(r.version, 'version'),
        r.haveVersion === undefined ? undefined : toSafeNumber(r.haveVersion, 'haveVersion'),
        r.wantOptimizer,
      );
      const { optimizer } = model;
      return create(GetModelResponseSchema, {
        version: toWireInt(model.version, 'version'),
        initialized: model.initialized,
        unchanged: model.unchanged,
        // Views of the store's arrays, not copies: grpc-js serializes the reply within this call,
        // before any other gradient can change them.
        variables: model.variables.map((v) => toTensorMessage(v, { copy: false })),
        ...(optimizer === undefined
          ? {}
          : {
              optimizer: {
                configJson: JSON.stringify(optimizer.config),
                step: toWireInt(optimizer.step, 'optimizer.step'),
                // Copies already (ParameterStore.optimizerState).
                slots: optimizer.slots.map((v) => toTensorMessage(v, { copy: false })),
              },
            }),
      });
    },
    reportVariables(r) {
      const result = endpoints.reportVariables(
        checkNonEmptyString(r.workerId, 'workerId'),
        r.variables.map((t) => fromTensorMessage(t)),
      );
      return create(ReportVariablesResponseSchema, {
        accepted: result.accepted,
        version: toWireInt(result.version, 'version'),
      });
    },
    reportGradient,
    gradientStreamReply: (r) => encodeReportGradientResponse(reportGradient(r)),
  };
}
