import { create } from '@bufbuild/protobuf';
import {
  ChannelCredentials,
  Client,
  type ClientDuplexStream,
  connectivityState,
  status as grpcStatus,
  Metadata,
  type ServiceError,
} from '@grpc/grpc-js';
import { MasterRpcError } from './errors.js';
import {
  GetJobStatusRequestSchema,
  GetModelRequestSchema,
  type GetTaskRequest,
  type GradientStatus,
  type HeartbeatRequest,
  type MetricPartial,
  PingRequestSchema,
  ReportEvaluationMetricsRequestSchema,
  ReportGradientRequestSchema,
  type ReportTaskResultRequest,
  ReportVariablesRequestSchema,
  ScaleWorkersRequestSchema,
  type TaskBatchStreamRequest,
  type TaskBatchStreamResponse,
  type TaskStreamRequest,
  type TaskStreamResponse,
} from './generated/edl/v1/master_pb.js';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  JOB_TOKEN_METADATA_KEY,
  masterServiceDefinition,
} from './grpc-service.js';
import { fromTaskMessage, type TaskAssignment } from './task-assignment.js';
import { fromTensorMessage, type NamedTensor, toTensorMessage } from './tensor.js';
import { toSafeNumber, toWireInt } from './wire-numbers.js';
import { toWorkerStatsMessage, type WorkerStatsReport } from './worker-stats.js';

/** Options of {@link MasterClient}. */
export interface MasterClientOptions {
  /** Deadline of each call in milliseconds (default 30,000). */
  readonly deadlineMs?: number;
  /** Largest message sent or received, in bytes (default 64 MiB). */
  readonly maxMessageBytes?: number;
  /** How long `connect` waits for the channel to be ready, in milliseconds (default 10,000). */
  readonly connectTimeoutMs?: number;
  /**
   * How getTask, reportTaskResult and heartbeat travel: 'unary' calls (default); 'stream':
   * multiplexed on one long-lived TaskStream per client, several times cheaper per call; or 'batch':
   * on one TaskBatchStream, the calls made in the same event-loop turn sent together in one message
   * (a call made while no other is in flight goes at once)
   * (for a process that runs many workers through one client: one message each way per turn instead
   * of one per call). Errors are the same MasterRpcErrors in every case; a broken stream fails its
   * pending calls with UNAVAILABLE and the next call opens a new one.
   */
  readonly transport?: 'unary' | 'stream' | 'batch';
}

/** Most calls sent in one TaskBatchStreamRequest. */
const MAX_BATCH_CALLS = 512;
/**
 * Most bytes (estimated from above) of one TaskBatchStreamRequest: batching must never make a message
 * bigger than the master accepts when its calls, sent one by one, would each fit.
 */
const MAX_BATCH_BYTES = 16 * 1024;

/** An upper bound of the encoded size of a stream call (UTF-8 takes at most 3 bytes per UTF-16 unit). */
function callBytes(call: StreamCall): number {
  const v = call.value;
  if (v === undefined) return 48;
  return 48 + 3 * (v.workerId.length + ('error' in v ? v.error.length : 0));
}

type StreamCall = NonNullable<TaskStreamRequest['call']>;
type StreamResult = TaskStreamResponse['result'];

interface PendingCall {
  readonly method: string;
  readonly resolve: (result: StreamResult) => void;
  readonly reject: (error: MasterRpcError) => void;
  /** performance.now() after which the call fails with DEADLINE_EXCEEDED. */
  readonly deadline: number;
}

type AnyDuplex =
  | ClientDuplexStream<TaskStreamRequest, TaskStreamResponse>
  | ClientDuplexStream<TaskBatchStreamRequest, TaskBatchStreamResponse>;

/** The model as a worker sees it. */
export interface ModelSnapshot {
  readonly version: number;
  /** False until some worker reported the initial variables. */
  readonly initialized: boolean;
  /** True when the master still has the version the caller holds: `variables` is then empty. */
  readonly unchanged?: boolean;
  readonly variables: NamedTensor[];
}

/** A record range of a task. */
export interface TaskRangeRef {
  readonly taskId: number;
  readonly rangeStart: number;
  readonly rangeEnd: number;
}

/**
 * A gradient computed from records [rangeStart, rangeEnd) of a task on model `modelVersion`. The
 * gradient arrays are sent without a copy: do not change them until `reportGradient` resolves.
 */
export interface GradientReport {
  readonly workerId: string;
  readonly taskId: number;
  readonly rangeStart: number;
  readonly rangeEnd: number;
  readonly modelVersion: number;
  readonly gradients: readonly NamedTensor[];
  /** Ranges of other tasks in the same minibatch (one per task); applied with the first or not at all. */
  readonly moreRanges?: readonly TaskRangeRef[];
  /** Ask for the model in the reply (ACCEPTED or STALE), saving the next step's pull. */
  readonly wantModel?: boolean;
}

/** Metric partial sums computed from records [rangeStart, rangeEnd) of an evaluation task. */
export interface EvaluationMetricsReport {
  readonly workerId: string;
  readonly taskId: number;
  readonly rangeStart: number;
  readonly rangeEnd: number;
  readonly modelVersion: number;
  readonly metrics: Readonly<Record<string, MetricPartial>>;
  /** Ranges of other evaluation tasks in the same minibatch (one per task). */
  readonly moreRanges?: readonly TaskRangeRef[];
}

function toRangeMessages(ranges: readonly TaskRangeRef[] | undefined) {
  return (ranges ?? []).map((r) => ({
    taskId: toWireInt(r.taskId, 'moreRanges.taskId'),
    rangeStart: toWireInt(r.rangeStart, 'moreRanges.rangeStart'),
    rangeEnd: toWireInt(r.rangeEnd, 'moreRanges.rangeEnd'),
  }));
}

/** The end of a task as a worker reports it. */
export interface TaskResultReport {
  readonly workerId: string;
  readonly taskId: number;
  /** Records of the task consumed (authoritative for prediction and train-end tasks). */
  readonly recordsDone?: number;
  /** Set when the task failed; its remaining range goes back to todo. */
  readonly error?: string;
}

/** The answer to `getTask`. */
export interface GetTaskResult {
  /** Absent once the job is over (and then `jobFinished` is true). */
  readonly task?: TaskAssignment;
  readonly jobFinished: boolean;
  /** Why the job failed, when it did; empty otherwise. */
  readonly jobError: string;
}

/** The answer to `reportGradient` and `reportEvaluationMetrics`. */
export interface ReportResult {
  readonly status: GradientStatus;
  /** The model version after the report (gradients only; 0 for metrics). */
  readonly modelVersion: number;
  /** The task's progress after the report: its first record not yet applied. */
  readonly taskProgress: number;
  /** With `wantModel`: the variables at `modelVersion`, when the master sent them. */
  readonly variables?: NamedTensor[];
}

/** The job's progress, from `getJobStatus`. */
export interface JobStatusInfo {
  readonly state: 'running' | 'succeeded' | 'failed';
  readonly error: string;
  readonly epoch: number;
  readonly numEpochs: number;
  readonly modelVersion: number;
  readonly todoTasks: number;
  readonly doingTasks: number;
  readonly recordsDone: number;
  readonly recordsTotal: number;
  readonly numWorkers: number;
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
  readonly #token: string;
  readonly #deadlineMs: number;
  readonly #useStream: boolean;
  readonly #batch: boolean;
  #stream: AnyDuplex | undefined;
  /** Calls in flight on the stream, in the order sent: all share one deadline, so oldest first. */
  readonly #pending = new Map<number, PendingCall>();
  /** One timer for every pending stream call (a timer per call costs more than the call itself). */
  #deadlineTimer: NodeJS.Timeout | undefined;
  /** Batch transport: calls waiting for the end of this event-loop turn. */
  #queued: TaskStreamRequest[] = [];
  #queuedBytes = 0;
  #flushScheduled = false;
  #nextCallId = 1;
  #closed = false;

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
    this.#token = token;
    this.#deadlineMs = options.deadlineMs ?? 30_000;
    this.#useStream = options.transport === 'stream' || options.transport === 'batch';
    this.#batch = options.transport === 'batch';
    this.#client = new Client(address, ChannelCredentials.createInsecure(), {
      'grpc.max_receive_message_length': maxBytes,
      'grpc.max_send_message_length': maxBytes,
      // Loopback and LAN calls are tiny and frequent: no need for the default connection backoff cap.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 2_000,
      // Channelz bookkeeping (call counters, traces) costs on every call and nothing reads it.
      'grpc.enable_channelz': 0,
      // Retries are the caller's (withRetries); grpc-js's own would keep a copy of every message
      // sent, a model-sized copy per gradient push.
      'grpc.enable_retries': 0,
      // A model comes back with every gradient: with HTTP/2's default 64 KiB window a 1 MB model
      // needs a dozen WINDOW_UPDATE round trips; a 16 MiB window takes it in one go.
      'grpc-node.flow_control_window': 16 * 1024 * 1024,
    });
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
    const response = this.#useStream
      ? ((await this.#streamCall('getTask', { case: 'getTask', value: request })).value as Awaited<
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
    return this.#call('getTask', request);
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
    if (this.#useStream) {
      const result = await this.#streamCall('reportTaskResult', { case: 'reportTaskResult', value: request });
      return { accepted: result.case === 'reportTaskResult' && result.value.accepted };
    }
    const response = await this.#call('reportTaskResult', request);
    return { accepted: response.accepted };
  }

  /**
   * Pulls the model: the latest (`version` < 0, the default) or a pinned evaluation version. With
   * `haveVersion`, the version the caller holds, an unchanged model comes back as `unchanged` with
   * no variables.
   */
  async getModel(workerId: string, version = -1, haveVersion?: number): Promise<ModelSnapshot> {
    const response = await this.#call(
      'getModel',
      create(GetModelRequestSchema, {
        workerId,
        version: toWireInt(version, 'version'),
        ...(haveVersion === undefined ? {} : { haveVersion: toWireInt(haveVersion, 'haveVersion') }),
      }),
    );
    return {
      version: toSafeNumber(response.version, 'version'),
      initialized: response.initialized,
      unchanged: response.unchanged,
      variables: response.variables.map(fromTensorMessage),
    };
  }

  /** Offers freshly initialised variables; the master keeps the first offer only. */
  async reportVariables(
    workerId: string,
    variables: readonly NamedTensor[],
  ): Promise<{ accepted: boolean; version: number }> {
    const response = await this.#call(
      'reportVariables',
      create(ReportVariablesRequestSchema, { workerId, variables: variables.map((v) => toTensorMessage(v)) }),
    );
    return { accepted: response.accepted, version: toSafeNumber(response.version, 'version') };
  }

  /**
   * Pushes a gradient. Check `status`: STALE means pull the model and recompute the same minibatch;
   * ALREADY_APPLIED means a previous attempt got through; TASK_NOT_HELD means drop the task.
   */
  async reportGradient(report: GradientReport): Promise<ReportResult> {
    const response = await this.#call(
      'reportGradient',
      create(ReportGradientRequestSchema, {
        workerId: report.workerId,
        taskId: toWireInt(report.taskId, 'taskId'),
        rangeStart: toWireInt(report.rangeStart, 'rangeStart'),
        rangeEnd: toWireInt(report.rangeEnd, 'rangeEnd'),
        modelVersion: toWireInt(report.modelVersion, 'modelVersion'),
        // Views, not copies: the caller's arrays go straight into the encoded message.
        gradients: report.gradients.map((g) => toTensorMessage(g, { copy: false })),
        moreRanges: toRangeMessages(report.moreRanges),
        wantModel: report.wantModel === true,
      }),
    );
    return {
      status: response.status,
      modelVersion: toSafeNumber(response.modelVersion, 'modelVersion'),
      taskProgress: toSafeNumber(response.taskProgress, 'taskProgress'),
      ...(response.hasModel ? { variables: response.variables.map(fromTensorMessage) } : {}),
    };
  }

  /** Pushes the metric partial sums of a range of an evaluation task. */
  async reportEvaluationMetrics(report: EvaluationMetricsReport): Promise<ReportResult> {
    const response = await this.#call(
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
    if (this.#useStream) {
      const result = await this.#streamCall('heartbeat', { case: 'heartbeat', value: request });
      if (result.case !== 'heartbeat')
        throw new MasterRpcError('heartbeat', grpcStatus.INTERNAL, 'wrong reply type');
      response = result.value;
    } else {
      response = await this.#call('heartbeat', request);
    }
    return {
      shouldStop: response.shouldStop,
      modelVersion: toSafeNumber(response.modelVersion, 'modelVersion'),
    };
  }

  /** Admin: asks the master's instance manager to run `numWorkers` workers; resolves to the new target. */
  async scaleWorkers(numWorkers: number): Promise<number> {
    const response = await this.#call('scaleWorkers', create(ScaleWorkersRequestSchema, { numWorkers }));
    return response.numWorkers;
  }

  /** Admin: the job's progress. */
  async getJobStatus(): Promise<JobStatusInfo> {
    const r = await this.#call('getJobStatus', create(GetJobStatusRequestSchema, {}));
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

  /** A no-op round trip (liveness probe, benchmark baseline). */
  async ping(): Promise<void> {
    await this.#call('ping', create(PingRequestSchema, {}));
  }

  /** Closes the channel; idempotent. Calls still pending fail with CANCELLED. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stream?.end();
    this.#failPending(grpcStatus.CANCELLED, 'client closed');
    if (this.#deadlineTimer !== undefined) clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
    this.#client.close();
  }

  #openStream(): AnyDuplex {
    const metadata = new Metadata();
    metadata.set(JOB_TOKEN_METADATA_KEY, this.#token);
    const settle = (response: TaskStreamResponse) => {
      const pending = this.#pending.get(response.callId);
      if (pending === undefined) return;
      this.#pending.delete(response.callId);
      if (response.result.case === 'error') {
        pending.reject(
          new MasterRpcError(pending.method, response.result.value.code, response.result.value.details),
        );
      } else {
        pending.resolve(response.result);
      }
    };
    let stream: AnyDuplex;
    if (this.#batch) {
      const definition = masterServiceDefinition.taskBatchStream;
      const batchStream = this.#client.makeBidiStreamRequest(
        definition.path,
        definition.requestSerialize as (value: TaskBatchStreamRequest) => Buffer,
        definition.responseDeserialize as (bytes: Buffer) => TaskBatchStreamResponse,
        metadata,
        {},
      );
      batchStream.on('data', (response: TaskBatchStreamResponse) => {
        for (const result of response.results) settle(result);
      });
      stream = batchStream;
    } else {
      const definition = masterServiceDefinition.taskStream;
      const callStream = this.#client.makeBidiStreamRequest(
        definition.path,
        definition.requestSerialize as (value: TaskStreamRequest) => Buffer,
        definition.responseDeserialize as (bytes: Buffer) => TaskStreamResponse,
        metadata,
        {},
      );
      callStream.on('data', settle);
      stream = callStream;
    }
    const broken = (code: number, details: string) => {
      if (this.#stream === stream) this.#stream = undefined;
      this.#failPending(code, details);
    };
    stream.on('error', (error: ServiceError) => broken(error.code, error.details || error.message));
    stream.on('end', () => broken(grpcStatus.UNAVAILABLE, 'task stream ended'));
    return stream;
  }

  #failPending(code: number, details: string): void {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#queued = [];
    this.#queuedBytes = 0;
    for (const call of pending) call.reject(new MasterRpcError(call.method, code, details));
  }

  /** Fails the stream calls past their deadline, then waits for the next oldest one. */
  #checkDeadlines = (): void => {
    this.#deadlineTimer = undefined;
    const now = performance.now();
    for (const [callId, call] of this.#pending) {
      if (call.deadline > now) {
        this.#deadlineTimer = setTimeout(this.#checkDeadlines, Math.ceil(call.deadline - now)).unref();
        return;
      }
      this.#pending.delete(callId);
      call.reject(
        new MasterRpcError(
          call.method,
          grpcStatus.DEADLINE_EXCEEDED,
          `no answer within ${this.#deadlineMs} ms`,
        ),
      );
    }
  };

  #flush = (): void => {
    this.#flushScheduled = false;
    const calls = this.#queued;
    if (calls.length === 0) return;
    this.#queued = [];
    this.#queuedBytes = 0;
    (this.#stream as ClientDuplexStream<TaskBatchStreamRequest, TaskBatchStreamResponse> | undefined)?.write({
      $typeName: 'edl.v1.TaskBatchStreamRequest',
      calls,
    });
  };

  #streamCall(method: string, call: StreamCall): Promise<StreamResult> {
    if (this.#closed)
      return Promise.reject(new MasterRpcError(method, grpcStatus.CANCELLED, 'client closed'));
    this.#stream ??= this.#openStream();
    const callId = this.#nextCallId;
    this.#nextCallId = (this.#nextCallId % 0xffffffff) + 1;
    return new Promise<StreamResult>((resolve, reject) => {
      const deadline = performance.now() + this.#deadlineMs;
      this.#pending.set(callId, { method, resolve, reject, deadline });
      // Unreferenced: the open stream keeps the process alive while calls are pending, and a
      // finished worker must not wait for the timer of its last call.
      this.#deadlineTimer ??= setTimeout(this.#checkDeadlines, this.#deadlineMs).unref();
      const request: TaskStreamRequest = { $typeName: 'edl.v1.TaskStreamRequest', callId, call };
      if (this.#batch) {
        if (this.#pending.size === 1) {
          // Nothing else in flight, so nothing to wait for (Nagle's rule): send it now. Calls made
          // while this one is out go together at the end of the turn.
          (
            this.#stream as ClientDuplexStream<TaskBatchStreamRequest, TaskBatchStreamResponse> | undefined
          )?.write({ $typeName: 'edl.v1.TaskBatchStreamRequest', calls: [request] });
          return;
        }
        // Calls of this turn go out together at its end; a full batch goes at once.
        const bytes = callBytes(call);
        if (this.#queuedBytes + bytes > MAX_BATCH_BYTES) this.#flush();
        this.#queued.push(request);
        this.#queuedBytes += bytes;
        if (this.#queued.length >= MAX_BATCH_CALLS) this.#flush();
        else if (!this.#flushScheduled) {
          this.#flushScheduled = true;
          setImmediate(this.#flush);
        }
      } else {
        (this.#stream as ClientDuplexStream<TaskStreamRequest, TaskStreamResponse> | undefined)?.write(
          request,
        );
      }
    });
  }

  #call<K extends keyof typeof masterServiceDefinition>(
    method: K,
    request: Parameters<(typeof masterServiceDefinition)[K]['requestSerialize']>[0],
  ): Promise<ReturnType<(typeof masterServiceDefinition)[K]['responseDeserialize']>> {
    type Response = ReturnType<(typeof masterServiceDefinition)[K]['responseDeserialize']>;
    const definition = masterServiceDefinition[method] as (typeof masterServiceDefinition)[K];
    const metadata = new Metadata();
    metadata.set(JOB_TOKEN_METADATA_KEY, this.#token);
    return new Promise<Response>((resolve, reject) => {
      this.#client.makeUnaryRequest(
        definition.path,
        definition.requestSerialize as (value: typeof request) => Buffer,
        definition.responseDeserialize as (bytes: Buffer) => Response,
        request,
        metadata,
        { deadline: Date.now() + this.#deadlineMs },
        (error: ServiceError | null, response?: Response) => {
          if (error)
            reject(
              new MasterRpcError(String(method), error.code, error.details || error.message, {
                cause: error,
              }),
            );
          else if (response === undefined) reject(new MasterRpcError(String(method), 13, 'empty response'));
          else resolve(response);
        },
      );
    });
  }
}
