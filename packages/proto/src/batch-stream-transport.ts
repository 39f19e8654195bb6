import { type Client, type ClientDuplexStream, status as grpcStatus } from '@grpc/grpc-js';
import { MasterRpcError } from './errors.js';
import type {
  TaskBatchStreamRequest,
  TaskBatchStreamResponse,
  TaskStreamRequest,
  TaskStreamResponse,
} from './generated/edl/v1/master_pb.js';
import { openMasterStream } from './master-stream.js';

/** One call on the stream: getTask, reportTaskResult or heartbeat. */
export type StreamCall = NonNullable<TaskStreamRequest['call']>;
/** The answer to one stream call. */
export type StreamResult = TaskStreamResponse['result'];

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

interface PendingCall {
  readonly method: string;
  readonly resolve: (result: StreamResult) => void;
  readonly reject: (error: MasterRpcError) => void;
  /** performance.now() after which the call fails with DEADLINE_EXCEEDED. */
  readonly deadline: number;
}

type BatchStream = ClientDuplexStream<TaskBatchStreamRequest, TaskBatchStreamResponse>;

/**
 * The dispatch calls (getTask, reportTaskResult, heartbeat) multiplexed on one long-lived
 * TaskBatchStream per client. A call made while no other is in flight goes at once (Nagle's rule: one
 * worker per client pays what a per-call stream would); calls made while others are out go together
 * at the end of the event-loop turn, one message for the whole turn (a process that runs many
 * workers through one client). Every call keeps its own deadline; a broken stream fails its pending
 * calls with UNAVAILABLE and the next call opens a new one.
 */
export class BatchStreamTransport {
  readonly #client: Client;
  readonly #token: string;
  readonly #deadlineMs: number;
  #stream: BatchStream | undefined;
  /** Calls in flight, in the order sent: all share one deadline, so oldest first. */
  readonly #pending = new Map<number, PendingCall>();
  /** One timer for every pending call (a timer per call costs more than the call itself). */
  #deadlineTimer: NodeJS.Timeout | undefined;
  /** Calls waiting for the end of this event-loop turn. */
  #queued: TaskStreamRequest[] = [];
  #queuedBytes = 0;
  #flushScheduled = false;
  #nextCallId = 1;
  #closed = false;

  constructor(client: Client, token: string, deadlineMs: number) {
    this.#client = client;
    this.#token = token;
    this.#deadlineMs = deadlineMs;
  }

  call(method: string, call: StreamCall): Promise<StreamResult> {
    if (this.#closed)
      return Promise.reject(new MasterRpcError(method, grpcStatus.CANCELLED, 'client closed'));
    this.#stream ??= this.#open();
    const callId = this.#nextCallId;
    this.#nextCallId = (this.#nextCallId % 0xffffffff) + 1;
    return new Promise<StreamResult>((resolve, reject) => {
      const deadline = performance.now() + this.#deadlineMs;
      this.#pending.set(callId, { method, resolve, reject, deadline });
      // Unreferenced: the open stream keeps the process alive while calls are pending, and a
      // finished worker must not wait for the timer of its last call.
      this.#deadlineTimer ??= setTimeout(this.#checkDeadlines, this.#deadlineMs).unref();
      const request: TaskStreamRequest = { $typeName: 'edl.v1.TaskStreamRequest', callId, call };
      if (this.#pending.size === 1) {
        // Nothing else in flight, so nothing to wait for: send it now. Calls made while this one is
        // out go together at the end of the turn.
        this.#stream?.write({ $typeName: 'edl.v1.TaskBatchStreamRequest', calls: [request] });
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
    });
  }

  /** Ends the stream; calls still pending fail with CANCELLED. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stream?.end();
    this.#failPending(grpcStatus.CANCELLED, 'client closed');
    if (this.#deadlineTimer !== undefined) clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
  }

  #open(): BatchStream {
    const stream: BatchStream = openMasterStream(
      this.#client,
      this.#token,
      'taskBatchStream',
      'task stream',
      (response: TaskBatchStreamResponse) => {
        for (const result of response.results) this.#settle(result);
      },
      (code, details) => {
        if (this.#stream === stream) this.#stream = undefined;
        this.#failPending(code, details);
      },
    );
    return stream;
  }

  #settle(response: TaskStreamResponse): void {
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
  }

  #failPending(code: number, details: string): void {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#queued = [];
    this.#queuedBytes = 0;
    for (const call of pending) call.reject(new MasterRpcError(call.method, code, details));
  }

  /** Fails the calls past their deadline, then waits for the next oldest one. */
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
    this.#stream?.write({ $typeName: 'edl.v1.TaskBatchStreamRequest', calls });
  };
}
