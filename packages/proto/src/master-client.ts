import { create } from '@bufbuild/protobuf';
import { type Client, connectivityState, status as grpcStatus } from '@grpc/grpc-js';
import { BatchStreamTransport } from './batch-stream-transport.js';
import { MasterRpcError } from './errors.js';
import {
  type GetFileIndexRequest,
  GetJobStatusRequestSchema,
  type GetTaskRequest,
  type HeartbeatRequest,
  PingRequestSchema,
  ReportEvaluationMetricsRequestSchema,
  type ReportTaskResultRequest,
  ScaleWorkersRequestSchema,
} from './generated/edl/v1/master_pb.js';
import { GradientStreamTransport } from './gradient-stream-transport.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from './grpc-service.js';
import { createMasterChannel } from './master-channel.js';
import {
  type EvaluationMetricsReport,
  type GetTaskResult,
  type GradientReport,
  type JobStatusInfo,
  type ModelSnapshot,
  type ReportResult,
  type TaskResultReport,
  toRangeMessages,
} from './master-reports.js';
import { ParameterClient } from './parameter-client.js';
import { fromTaskMessage } from './task-assignment.js';
import type { NamedTensor } from './tensor.js';
import { UnaryTransport } from './unary-transport.js';
import { toSafeNumber, toWireInt } from './wire-numbers.js';
import { toWorkerStatsMessage, type WorkerStatsReport } from './worker-stats.js';

/**
 * The master's answer to {@link MasterClient.fileIndex}: the index bytes, nothing (it holds no index
 * of that version), or the size of an index over its message limit (the worker builds it itself).
 */
export type FileIndexAnswer =
  | { readonly index: Uint8Array }
  | { readonly tooLargeBytes: number; readonly limitBytes: number }
  | undefined;

/** Options of {@link MasterClient}. */
export interface MasterClientOptions {
  /** Deadline of each call in milliseconds (default 30,000). */
  readonly deadlineMs?: number;
  /** Largest message sent or received, in bytes (default 64 MiB). */
  readonly maxMessageBytes?: number;
  /** How long `connect` waits for the channel to be ready, in milliseconds (default 10,000). */
  readonly connectTimeoutMs?: number;
  /**
   * How getTask, reportTaskResult and heartbeat travel: 'unary' calls (default), or 'batch': on one
   * long-lived TaskBatchStream per client, several times cheaper per call. A call made while no
   * other is in flight goes at once; the calls made in the same event-loop turn while others are out
   * go together in one message (a process that runs many workers through one client sends one message
   * each way per turn instead of one per call). 'stream' is the former one-stream-per-call-sequence
   * transport, now the same as 'batch', which costs no more for one worker and far less for many
   * (bench/RESULTS.md, master-dispatch). Errors are the same MasterRpcErrors in every case; a broken
   * stream fails its pending calls with UNAVAILABLE and the next call opens a new one.
   */
  readonly transport?: 'unary' | 'stream' | 'batch';
  /**
   * How reportGradient travels: 'unary' calls (default), or 'stream': on one long-lived
   * GradientStream per client, a message each way per report (less than half the CPU and wall time
   * of a unary call for a model-sized message: bench/gradient-round-trip.mjs). The same replies and
   * MasterRpcErrors; a broken stream fails the reports in flight with UNAVAILABLE.
   */
  readonly gradientTransport?: 'unary' | 'stream';
}

/**
 * Typed client of the master. Every call carries the job token and a deadline; a failed call rejects
 * with a {@link MasterRpcError} whose `code` is the gRPC status name.
 *
 * ```ts
 * const master = await MasterClient.connect('127.0.0.1:50001', token);
 * const { task } = await master.getTask('worker-0');
 * ```
 */
export class MasterClient {
  readonly #client: Client;
  readonly #unary: UnaryTransport;
  /** The dispatch calls' stream, unless they go as unary calls. */
  readonly #stream: BatchStreamTransport | undefined;
  /** GetModel, ReportVariables and ReportGradient: the parameter store's calls. */
  readonly #parameters: ParameterClient;

  constructor(
    readonly address: string,
    token: string,
    readonly options: MasterClientOptions = {},
  ) {
    if (typeof address !== 'string' || address.length === 0) {
      throw new TypeError(`Expected a host:port string for address but received ${String(address)}`);
    }
    if (typeof token !== 'string' || token.length === 0) {
      throw new TypeError(`Expected a non-empty string for token but received ${String(token)}`);
    }
    const maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    const deadlineMs = options.deadlineMs ?? 30_000;
    this.#client = createMasterChannel(address, maxBytes);
    this.#unary = new UnaryTransport(this.#client, token, deadlineMs);
    this.#stream =
      options.transport === 'stream' || options.transport === 'batch'
        ? new BatchStreamTransport(this.#client, token, deadlineMs)
        : undefined;
    this.#parameters = new ParameterClient(
      this.#unary,
      options.gradientTransport === 'stream'
        ? new GradientStreamTransport(this.#client, token, deadlineMs)
        : undefined,
    );
  }

  /** Creates a client and waits until its channel is connected (or `connectTimeoutMs` passes). */
  static async connect(
    address: string,
    token: string,
    options: MasterClientOptions = {},
  ): Promise<MasterClient> {
    const client = new MasterClient(address, token, options);
    await client.waitForReady(options.connectTimeoutMs ?? 10_000);
    return client;
  }

  /** Resolves once the channel is connected; rejects with UNAVAILABLE after `timeoutMs`. */
  waitForReady(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#client.waitForReady(Date.now() + timeoutMs, (error) => {
        if (error)
          reject(new MasterRpcError('connect', 14, `${this.address}: ${error.message}`, { cause: error }));
        else resolve();
      });
    });
  }

  /** True while the channel is connected. */
  get connected(): boolean {
    return this.#client.getChannel().getConnectivityState(false) === connectivityState.READY;
  }

  /** Asks for the next task. `task` is absent and `jobFinished` true once the job is over. */
  async getTask(workerId: string): Promise<GetTaskResult> {
    // Literals rather than `create` on the dispatch calls: `create` walks the schema every time.
    const request: GetTaskRequest = { $typeName: 'edl.v1.GetTaskRequest', workerId };
    const response = this.#stream
      ? ((await this.#stream.call('getTask', { case: 'getTask', value: request })).value as Awaited<
          ReturnType<MasterClient['getTaskMessage']>
        >)
      : await this.getTaskMessage(request);
    return {
      ...(response.task ? { task: fromTaskMessage(response.task) } : {}),
      jobFinished: response.jobFinished,
      jobError: response.jobError,
    };
  }

  /** The raw unary GetTask call (benchmarks and tests; prefer getTask). */
  getTaskMessage(request: GetTaskRequest) {
    return this.#unary.call('getTask', request);
  }

  /** Reports the end (or failure) of a task. */
  async reportTaskResult(report: TaskResultReport): Promise<{ accepted: boolean }> {
    const request: ReportTaskResultRequest = {
      $typeName: 'edl.v1.ReportTaskResultRequest',
      workerId: report.workerId,
      taskId: toWireInt(report.taskId, 'taskId'),
      recordsDone: toWireInt(report.recordsDone ?? 0, 'recordsDone'),
      error: report.error ?? '',
    };
    if (this.#stream) {
      const result = await this.#stream.call('reportTaskResult', {
        case: 'reportTaskResult',
        value: request,
      });
      return { accepted: result.case === 'reportTaskResult' && result.value.accepted };
    }
    const response = await this.#unary.call('reportTaskResult', request);
    return { accepted: response.accepted };
  }

  /**
   * Pulls the model: the latest (`version` < 0, the default) or a pinned evaluation version. With
   * `haveVersion`, the version the caller holds, an unchanged model comes back as `unchanged` with
   * no variables. With `wantOptimizer`, the optimizer's state comes too, when the master's updates
   * can be mirrored.
   */
  async getModel(
    workerId: string,
    version = -1,
    haveVersion?: number,
    options: { readonly wantOptimizer?: boolean } = {},
  ): Promise<ModelSnapshot> {
    return this.#parameters.getModel(workerId, version, haveVersion, options.wantOptimizer === true);
  }

  /** Offers freshly initialised variables; the master keeps the first offer only. */
  async reportVariables(
    workerId: string,
    variables: readonly NamedTensor[],
  ): Promise<{ accepted: boolean; version: number }> {
    return this.#parameters.reportVariables(workerId, variables);
  }

  /**
   * Pushes a gradient. Check `status`: STALE means pull the model and recompute the same minibatch;
   * ALREADY_APPLIED means a previous attempt got through; TASK_NOT_HELD means drop the task.
   */
  async reportGradient(report: GradientReport): Promise<ReportResult> {
    return this.#parameters.reportGradient(report);
  }

  /** Pushes the metric partial sums of a range of an evaluation task. */
  async reportEvaluationMetrics(report: EvaluationMetricsReport): Promise<ReportResult> {
    const response = await this.#unary.call(
      'reportEvaluationMetrics',
      create(ReportEvaluationMetricsRequestSchema, {
        workerId: report.workerId,
        taskId: toWireInt(report.taskId, 'taskId'),
        rangeStart: toWireInt(report.rangeStart, 'rangeStart'),
        rangeEnd: toWireInt(report.rangeEnd, 'rangeEnd'),
        modelVersion: toWireInt(report.modelVersion, 'modelVersion'),
        metrics: { ...report.metrics },
        moreRanges: toRangeMessages(report.moreRanges),
      }),
    );
    return {
      status: response.status,
      modelVersion: 0,
      taskProgress: toSafeNumber(response.taskProgress, 'taskProgress'),
    };
  }

  /** Renews the leases of every task this worker holds. */
  async heartbeat(
    workerId: string,
    stats?: WorkerStatsReport,
  ): Promise<{ shouldStop: boolean; modelVersion: number }> {
    const request: HeartbeatRequest = {
      $typeName: 'edl.v1.HeartbeatRequest',
      workerId,
      ...(stats === undefined ? {} : { stats: toWorkerStatsMessage(stats) }),
    };
    let response: { shouldStop: boolean; modelVersion: bigint };
    if (this.#stream) {
      const result = await this.#stream.call('heartbeat', { case: 'heartbeat', value: request });
      if (result.case !== 'heartbeat')
        throw new MasterRpcError('heartbeat', grpcStatus.INTERNAL, 'wrong reply type');
      response = result.value;
    } else {
      response = await this.#unary.call('heartbeat', request);
    }
    return {
      shouldStop: response.shouldStop,
      modelVersion: toSafeNumber(response.modelVersion, 'modelVersion'),
    };
  }

  /** Admin: asks the master's instance manager to run `numWorkers` workers; resolves to the new target. */
  async scaleWorkers(numWorkers: number): Promise<number> {
    const response = await this.#unary.call(
      'scaleWorkers',
      create(ScaleWorkersRequestSchema, { numWorkers }),
    );
    return response.numWorkers;
  }

  /** Admin: the job's progress. */
  async getJobStatus(): Promise<JobStatusInfo> {
    const r = await this.#unary.call('getJobStatus', create(GetJobStatusRequestSchema, {}));
    return {
      state: r.state === 'succeeded' || r.state === 'failed' ? r.state : 'running',
      error: r.error,
      epoch: r.epoch,
      numEpochs: r.numEpochs,
      modelVersion: toSafeNumber(r.modelVersion, 'modelVersion'),
      todoTasks: r.todoTasks,
      doingTasks: r.doingTasks,
      recordsDone: toSafeNumber(r.recordsDone, 'recordsDone'),
      recordsTotal: toSafeNumber(r.recordsTotal, 'recordsTotal'),
      numWorkers: r.numWorkers,
    };
  }

  /**
   * The master's cached index of version `version` (an ETag) of the remote object `location`, of
   * `kind` (`recordio`, `tfrecord`, or a text reader's index key): what a worker pod asks before
   * walking the object's headers itself. An index of any other version is never answered.
   */
  async fileIndex(kind: string, location: string, version: string): Promise<FileIndexAnswer> {
    const request: GetFileIndexRequest = { $typeName: 'edl.v1.GetFileIndexRequest', kind, location, version };
    const response = await this.#unary.call('getFileIndex', request);
    if (response.tooLargeBytes > 0n) {
      return {
        tooLargeBytes: toSafeNumber(response.tooLargeBytes, 'tooLargeBytes'),
        limitBytes: toSafeNumber(response.limitBytes, 'limitBytes'),
      };
    }
    return response.found ? { index: response.index } : undefined;
  }

  /** A no-op round trip (liveness probe, benchmark baseline). */
  async ping(): Promise<void> {
    await this.#unary.call('ping', create(PingRequestSchema, {}));
  }

  /** Closes the channel; idempotent. Calls still pending fail with CANCELLED. */
  close(): void {
    this.#stream?.close();
    this.#parameters.close();
    this.#client.close();
  }
}
