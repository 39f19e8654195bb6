import { create } from '@bufbuild/protobuf';
import { checkInteger, checkNonEmptyString } from '@edl/common';
import {
  bindInsecure,
  CallErrorSchema,
  createGrpcServer,
  DEFAULT_MAX_MESSAGE_BYTES,
  fromRangeMessages,
  fromWorkerStatsMessage,
  GetJobStatusResponseSchema,
  type GetTaskResponse,
  grpcError,
  type HeartbeatResponse,
  jobTokenCheck,
  masterServiceDefinition,
  PingResponseSchema,
  ReportEvaluationMetricsResponseSchema,
  type ReportTaskResultResponse,
  ScaleWorkersResponseSchema,
  shutdownGracefully,
  type TaskBatchStreamRequest,
  type TaskBatchStreamResponse,
  type TaskStreamRequest,
  type TaskStreamResponse,
  tokenCheckedUnary,
  toSafeNumber,
  toTaskMessage,
  toWireInt,
  WRONG_TOKEN_DETAILS,
} from '@edl/proto';
import {
  type ServerDuplexStream,
  type ServerUnaryCall,
  type ServiceError,
  type sendUnaryData,
  status,
  type UntypedServiceImplementation,
} from '@edl/proto/grpc';
import { ParameterStoreError, parameterRpcHandlers } from '@edl/ps';
import { MasterError } from './errors.js';
import { fileIndexHandler } from './file-index-service.js';
import { widenReceiveWindow } from './http2-window.js';
import type { Master } from './master.js';

/** Options of {@link serveMaster}. */
export interface MasterServerOptions {
  /** Interface to listen on (default 127.0.0.1: reachable from this machine only). */
  readonly host?: string;
  /** Port (default 0: any free port). */
  readonly port?: number;
  /** The job token every call must carry in the `x-edl-job-token` metadata. */
  readonly token: string;
  /** Largest message received or sent, in bytes (default 64 MiB). */
  readonly maxMessageBytes?: number;
  /** Admin hook behind the ScaleWorkers RPC; without it ScaleWorkers fails with FAILED_PRECONDITION. */
  readonly scaleWorkers?: (numWorkers: number) => Promise<number>;
  /** Number of workers reported by GetJobStatus. */
  readonly numWorkers?: () => number;
  /**
   * The index cache directories GetFileIndex answers from (`indexCacheDirsOf` of the job's readers); without
   * them it answers that it holds no index, and workers build their own.
   */
  readonly indexCacheDirs?: readonly string[];
}

/** A running gRPC server of a master. */
export interface MasterServer {
  /** host:port to give workers. */
  readonly address: string;
  readonly port: number;
  /**
   * Stops accepting calls, lets calls in flight finish for up to `graceMs`, then cuts the rest. Open
   * TaskStreams and TaskBatchStreams are ended at once (their calls so far are answered).
   */
  shutdown(graceMs?: number): Promise<void>;
}

/** Maps an exception of the master or its parameter store to a gRPC status: arguments, state, or a bug. */
function toStatus(error: unknown): Partial<ServiceError> {
  if (error instanceof RangeError || error instanceof TypeError)
    return grpcError(status.INVALID_ARGUMENT, error.message);
  if (error instanceof MasterError || error instanceof ParameterStoreError)
    return grpcError(status.FAILED_PRECONDITION, `${error.code}: ${error.message}`);
  return grpcError(status.INTERNAL, error instanceof Error ? error.message : String(error));
}

/**
 * Serves a {@link Master} over gRPC (@grpc/grpc-js). Every call must carry the job token
 * (UNAUTHENTICATED otherwise); bad arguments give INVALID_ARGUMENT, requests the master cannot honour
 * in its state FAILED_PRECONDITION.
 */
export async function serveMaster(master: Master, options: MasterServerOptions): Promise<MasterServer> {
  const authorized = jobTokenCheck(options.token);
  const maxBytes = checkInteger(
    options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    'maxMessageBytes',
    1024,
  );
  const server = createGrpcServer(maxBytes);
  const afterBind = widenReceiveWindow(server);

  /** Wraps a synchronous handler with the token check and error mapping. */
  const unary = tokenCheckedUnary(authorized, toStatus);

  const d = masterServiceDefinition;
  type In<K extends keyof typeof d> = Parameters<(typeof d)[K]['requestSerialize']>[0];

  // The three dispatch calls build their replies as literals: `create` walks the schema on every
  // call and costs as much as the dispatch decision.
  const getTask = (r: In<'getTask'>): GetTaskResponse => {
    const reply = master.getTask(checkNonEmptyString(r.workerId, 'workerId'));
    return {
      $typeName: 'edl.v1.GetTaskResponse',
      task: reply.task ? toTaskMessage(reply.task) : undefined,
      jobFinished: reply.jobFinished,
      jobError: reply.jobError,
    };
  };
  const reportTaskResult = (r: In<'reportTaskResult'>): ReportTaskResultResponse => ({
    $typeName: 'edl.v1.ReportTaskResultResponse',
    accepted: master.reportTaskResult(
      checkNonEmptyString(r.workerId, 'workerId'),
      toSafeNumber(r.taskId, 'taskId'),
      toSafeNumber(r.recordsDone, 'recordsDone'),
      r.error,
    ),
  });
  const heartbeat = (r: In<'heartbeat'>): HeartbeatResponse => {
    const reply = master.heartbeat(
      checkNonEmptyString(r.workerId, 'workerId'),
      r.stats === undefined ? undefined : fromWorkerStatsMessage(r.stats),
    );
    return {
      $typeName: 'edl.v1.HeartbeatResponse',
      shouldStop: reply.shouldStop,
      modelVersion: toWireInt(reply.modelVersion, 'modelVersion'),
    };
  };

  /** GetModel, ReportVariables and ReportGradient (unary and streamed): the parameter store's. */
  const parameters = parameterRpcHandlers(master);

  /** Ends each open TaskStream / TaskBatchStream (at shutdown: they would hold it for the whole grace). */
  const openStreams = new Set<() => void>();

  /** One call of a TaskStream or TaskBatchStream; a failure answers that call only. */
  const streamCall = (request: TaskStreamRequest): TaskStreamResponse => {
    let result: TaskStreamResponse['result'];
    try {
      const c = request.call;
      if (c.case === 'getTask') result = { case: 'getTask', value: getTask(c.value) };
      else if (c.case === 'reportTaskResult')
        result = { case: 'reportTaskResult', value: reportTaskResult(c.value) };
      else if (c.case === 'heartbeat') result = { case: 'heartbeat', value: heartbeat(c.value) };
      else throw new RangeError('Expected a call in a TaskStreamRequest but received none');
    } catch (error) {
      const failure = toStatus(error);
      result = {
        case: 'error',
        value: create(CallErrorSchema, {
          code: failure.code ?? status.INTERNAL,
          details: failure.details ?? '',
        }),
      };
    }
    return { $typeName: 'edl.v1.TaskStreamResponse', callId: request.callId, result };
  };

  /**
   * A bidi stream of calls: the token is checked once, when the stream opens (it is the job's token
   * and cannot change while the stream lives); a stream without it is refused before any call.
   */
  function callStream<Req, Res>(answer: (request: Req) => Res) {
    return (call: ServerDuplexStream<Req, Res>) => {
      if (!authorized(call.metadata)) {
        call.emit('error', grpcError(status.UNAUTHENTICATED, WRONG_TOKEN_DETAILS));
        return;
      }
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        openStreams.delete(end);
        call.end();
      };
      openStreams.add(end);
      // After `end` (shutdown), a call still on its way is not run: its client sees the stream
      // end and fails it as UNAVAILABLE, so it is retried, never half-done.
      call.on('data', (request: Req) => {
        if (ended) return;
        let response: Res;
        try {
          response = answer(request);
        } catch (error) {
          // A call that cannot be answered alone (GradientStream: no error slot in its reply) ends
          // the stream with its status; nothing after it on this stream runs.
          ended = true;
          openStreams.delete(end);
          call.emit('error', toStatus(error));
          return;
        }
        call.write(response);
      });
      call.on('end', end);
      call.on('error', () => {
        ended = true;
        openStreams.delete(end);
      });
      call.on('close', () => openStreams.delete(end));
    };
  }

  /**
   * ReportGradient on one stream per worker, answered in order. A refused report ends the stream
   * with the status its unary call would get: the worker sees that error for that report and opens
   * a new stream.
   */
  const gradientStream = callStream(parameters.gradientStreamReply);

  /** The dispatch fast path: the same three calls, multiplexed on one stream per worker. */
  const taskStream = callStream<TaskStreamRequest, TaskStreamResponse>(streamCall);
  /** The same calls in batches (many workers of one process): answered in order, one batch each. */
  const taskBatchStream = callStream<TaskBatchStreamRequest, TaskBatchStreamResponse>((batch) => ({
    $typeName: 'edl.v1.TaskBatchStreamResponse',
    results: batch.calls.map(streamCall),
  }));

  const implementation = {
    getTask: unary(getTask),
    reportTaskResult: unary(reportTaskResult),
    getModel: unary(parameters.getModel),
    reportVariables: unary(parameters.reportVariables),
    reportGradient: unary(parameters.reportGradient),
    reportEvaluationMetrics: unary((r: In<'reportEvaluationMetrics'>) => {
      const reply = master.reportEvaluationMetrics({
        workerId: checkNonEmptyString(r.workerId, 'workerId'),
        taskId: toSafeNumber(r.taskId, 'taskId'),
        rangeStart: toSafeNumber(r.rangeStart, 'rangeStart'),
        rangeEnd: toSafeNumber(r.rangeEnd, 'rangeEnd'),
        metrics: r.metrics,
        moreRanges: fromRangeMessages(r.moreRanges),
      });
      return create(ReportEvaluationMetricsResponseSchema, {
        status: reply.status,
        taskProgress: toWireInt(reply.taskProgress, 'taskProgress'),
      });
    }),
    heartbeat: unary(heartbeat),
    scaleWorkers: (call: ServerUnaryCall<In<'scaleWorkers'>, unknown>, callback: sendUnaryData<unknown>) => {
      if (!authorized(call.metadata)) {
        callback(grpcError(status.UNAUTHENTICATED, WRONG_TOKEN_DETAILS));
        return;
      }
      if (options.scaleWorkers === undefined) {
        callback(grpcError(status.FAILED_PRECONDITION, 'this master has no instance manager to scale'));
        return;
      }
      let n: number;
      try {
        n = checkInteger(call.request.numWorkers, 'numWorkers', 0, 10_000);
      } catch (error) {
        callback(toStatus(error));
        return;
      }
      options.scaleWorkers(n).then(
        (numWorkers) => callback(null, create(ScaleWorkersResponseSchema, { numWorkers })),
        (error: unknown) => callback(toStatus(error)),
      );
    },
    getJobStatus: unary((_r: In<'getJobStatus'>) => {
      const s = master.status();
      return create(GetJobStatusResponseSchema, {
        state: s.state,
        error: s.error?.message ?? '',
        epoch: s.epoch,
        numEpochs: s.numEpochs,
        modelVersion: toWireInt(s.modelVersion, 'modelVersion'),
        todoTasks: s.todoTasks,
        doingTasks: s.doingTasks,
        recordsDone: toWireInt(s.recordsDone, 'recordsDone'),
        recordsTotal: toWireInt(s.recordsTotal, 'recordsTotal'),
        numWorkers: options.numWorkers?.() ?? 0,
      });
    }),
    ping: unary((_r: In<'ping'>) => create(PingResponseSchema, {})),
    taskStream,
    taskBatchStream,
    gradientStream,
    getFileIndex: fileIndexHandler(authorized, options.indexCacheDirs ?? [], maxBytes),
  };
  server.addService(masterServiceDefinition, implementation as unknown as UntypedServiceImplementation);

  const { address, port } = await bindInsecure(server, options.host ?? '127.0.0.1', options.port ?? 0);
  afterBind?.();
  let stopped: Promise<void> | undefined;
  return {
    address,
    port,
    shutdown(graceMs = 5_000) {
      // Every call a stream delivered so far has been answered (handlers are synchronous): end
      // the streams so that tryShutdown need not wait for the workers to close them.
      stopped ??= shutdownGracefully(server, graceMs, () => {
        for (const end of [...openStreams]) end();
      });
      return stopped;
    },
  };
}
