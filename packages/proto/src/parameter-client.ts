import { create } from '@bufbuild/protobuf';
import { describeValue } from '@edl/common';
import { EdlProtoError, MasterRpcError } from './errors.js';
import {
  GetModelRequestSchema,
  type ReportGradientRequest,
  ReportGradientRequestSchema,
  type ReportGradientResponse,
  ReportVariablesRequestSchema,
} from './generated/edl/v1/master_pb.js';
import type { GradientStreamTransport } from './gradient-stream-transport.js';
import {
  type GradientReport,
  type ModelSnapshot,
  type ReportResult,
  toRangeMessages,
} from './master-reports.js';
import { fromTensorMessage, type NamedTensor, toTensorMessage } from './tensor.js';
import type { UnaryTransport } from './unary-transport.js';
import { toSafeNumber, toWireInt } from './wire-numbers.js';

/**
 * The worker's side of the parameter store's calls (GetModel, ReportVariables, ReportGradient, the
 * last unary or on a GradientStream), over transports its owner opened and closes.
 * {@link MasterClient} delegates to it; kept apart from the dispatch calls because the store's
 * calls are @edl/ps's, served by the master today.
 */
export class ParameterClient {
  readonly #unary: UnaryTransport;
  /** The gradient reports' stream, unless they go as unary calls. */
  readonly #gradients: GradientStreamTransport | undefined;
  /** The server answered the GradientStream with UNIMPLEMENTED: reports go as unary calls. */
  #gradientStreamMissing = false;

  constructor(unary: UnaryTransport, gradients: GradientStreamTransport | undefined) {
    this.#unary = unary;
    this.#gradients = gradients;
  }

  /** See {@link MasterClient.getModel}. */
  async getModel(
    workerId: string,
    version: number,
    haveVersion: number | undefined,
    wantOptimizer: boolean,
  ): Promise<ModelSnapshot> {
    const response = await this.#unary.call(
      'getModel',
      create(GetModelRequestSchema, {
        workerId,
        version: toWireInt(version, 'version'),
        ...(haveVersion === undefined ? {} : { haveVersion: toWireInt(haveVersion, 'haveVersion') }),
        wantOptimizer,
      }),
    );
    const optimizer = response.optimizer;
    return {
      version: toSafeNumber(response.version, 'version'),
      initialized: response.initialized,
      unchanged: response.unchanged,
      variables: response.variables.map((t) => fromTensorMessage(t)),
      ...(optimizer === undefined
        ? {}
        : {
            optimizer: {
              config: parseOptimizerConfig(optimizer.configJson),
              step: toSafeNumber(optimizer.step, 'optimizer.step'),
              slots: optimizer.slots.map((t) => fromTensorMessage(t)),
            },
          }),
    };
  }

  /** See {@link MasterClient.reportVariables}. */
  async reportVariables(
    workerId: string,
    variables: readonly NamedTensor[],
  ): Promise<{ accepted: boolean; version: number }> {
    const response = await this.#unary.call(
      'reportVariables',
      create(ReportVariablesRequestSchema, { workerId, variables: variables.map((v) => toTensorMessage(v)) }),
    );
    return { accepted: response.accepted, version: toSafeNumber(response.version, 'version') };
  }

  /** See {@link MasterClient.reportGradient}. */
  async reportGradient(report: GradientReport): Promise<ReportResult> {
    const request = create(ReportGradientRequestSchema, {
      workerId: report.workerId,
      taskId: toWireInt(report.taskId, 'taskId'),
      rangeStart: toWireInt(report.rangeStart, 'rangeStart'),
      rangeEnd: toWireInt(report.rangeEnd, 'rangeEnd'),
      modelVersion: toWireInt(report.modelVersion, 'modelVersion'),
      // Views, not copies: the caller's arrays go straight into the encoded message.
      gradients: report.gradients.map((g) => toTensorMessage(g, { copy: false })),
      moreRanges: toRangeMessages(report.moreRanges),
      wantModel: report.wantModel === true,
      mirror: report.mirror === true,
      wantUpdate: report.wantUpdate === true,
    });
    const response = await this.#sendGradient(request);
    return {
      status: response.status,
      modelVersion: toSafeNumber(response.modelVersion, 'modelVersion'),
      taskProgress: toSafeNumber(response.taskProgress, 'taskProgress'),
      ...(response.hasModel ? { variables: response.variables.map((t) => fromTensorMessage(t)) } : {}),
      ...(response.mirrored ? { mirrored: true, modelChecksum: response.modelChecksum } : {}),
      ...(response.updateVersion === 0n
        ? {}
        : {
            update: {
              version: toSafeNumber(response.updateVersion, 'updateVersion'),
              gradients: toSafeNumber(response.updateGradients, 'updateGradients'),
              lrDivisor: toSafeNumber(response.updateLrDivisor, 'updateLrDivisor'),
            },
          }),
    };
  }

  /**
   * On the GradientStream when asked for, else (or once the master said it has none: a master from
   * before the stream answers UNIMPLEMENTED) as a unary call.
   */
  async #sendGradient(request: ReportGradientRequest): Promise<ReportGradientResponse> {
    const stream = this.#gradients;
    if (stream === undefined || this.#gradientStreamMissing)
      return this.#unary.call('reportGradient', request);
    try {
      return await stream.call(request);
    } catch (error) {
      if (!(error instanceof MasterRpcError) || error.code !== 'UNIMPLEMENTED') throw error;
      this.#gradientStreamMissing = true;
      stream.close();
      return this.#unary.call('reportGradient', request);
    }
  }

  /** Closes the GradientStream, if any; idempotent. Reports still pending fail with CANCELLED. */
  close(): void {
    this.#gradients?.close();
  }
}

/** The optimizer's JSON from the master: an object, or a protocol error naming what came instead. */
function parseOptimizerConfig(json: string): Readonly<Record<string, unknown>> {
  let config: unknown;
  try {
    config = JSON.parse(json);
  } catch (error) {
    throw new EdlProtoError(
      'BAD_RESPONSE',
      `The master sent optimizer settings that are not JSON: ${(error as Error).message}`,
    );
  }
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new EdlProtoError(
      'BAD_RESPONSE',
      `Expected an object for the master's optimizer settings but received ${describeValue(config)}`,
    );
  }
  return config as Readonly<Record<string, unknown>>;
}
