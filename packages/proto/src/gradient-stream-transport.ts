import { type Client, type ClientDuplexStream, status as grpcStatus } from '@grpc/grpc-js';
import { MasterRpcError } from './errors.js';
import type { ReportGradientRequest, ReportGradientResponse } from './generated/edl/v1/master_pb.js';
import { openMasterStream } from './master-stream.js';

interface PendingReport {
  readonly resolve: (response: ReportGradientResponse) => void;
  readonly reject: (error: MasterRpcError) => void;
}

type GradientStream = ClientDuplexStream<ReportGradientRequest, ReportGradientResponse>;

const METHOD = 'reportGradient';

/**
 * ReportGradient calls on one long-lived GradientStream: a gradient-sized message up and a model
 * back per step cost grpc-js less than half the CPU and wall time of a unary call
 * (bench/gradient-round-trip.mjs), which opens an HTTP/2 stream with headers, metadata and
 * trailers for every step. The master answers in order, so replies are matched first in, first
 * out. A refused report ends the stream with its status (the same MasterRpcError as the unary
 * call); a broken stream, or a call past its deadline, fails every report in flight (UNAVAILABLE,
 * DEADLINE_EXCEEDED: the caller's retries resend them, and the master's range check answers
 * ALREADY_APPLIED for one that got through); the next report opens a new stream.
 */
export class GradientStreamTransport {
  readonly #client: Client;
  readonly #token: string;
  readonly #deadlineMs: number;
  #stream: GradientStream | undefined;
  /** Reports in flight, oldest first: the order the master answers them. */
  #pending: PendingReport[] = [];
  #deadlineTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(client: Client, token: string, deadlineMs: number) {
    this.#client = client;
    this.#token = token;
    this.#deadlineMs = deadlineMs;
  }

  call(request: ReportGradientRequest): Promise<ReportGradientResponse> {
    if (this.#closed)
      return Promise.reject(new MasterRpcError(METHOD, grpcStatus.CANCELLED, 'client closed'));
    this.#stream ??= this.#open();
    const stream = this.#stream;
    return new Promise<ReportGradientResponse>((resolve, reject) => {
      this.#pending.push({ resolve, reject });
      this.#armDeadline();
      stream.write(request);
    });
  }

  /** Ends the stream; reports still in flight fail with CANCELLED. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stream?.end();
    this.#stream = undefined;
    this.#fail(grpcStatus.CANCELLED, 'client closed');
  }

  #open(): GradientStream {
    const stream: GradientStream = openMasterStream(
      this.#client,
      this.#token,
      'gradientStream',
      'gradient stream',
      (response: ReportGradientResponse) => {
        if (this.#stream !== stream) return;
        const pending = this.#pending.shift();
        if (this.#pending.length === 0) this.#clearDeadline();
        else this.#armDeadline(true);
        pending?.resolve(response);
      },
      (code, details) => {
        if (this.#stream !== stream) return;
        this.#stream = undefined;
        this.#fail(code, details);
      },
    );
    return stream;
  }

  #fail(code: number, details: string): void {
    this.#clearDeadline();
    const pending = this.#pending;
    this.#pending = [];
    for (const report of pending) report.reject(new MasterRpcError(METHOD, code, details));
  }

  /**
   * The oldest report's deadline (from when it, or the reply before it, came: every reply shows the
   * stream alive). Past it, the stream is cancelled: a late reply would be matched to the next report.
   */
  #armDeadline(restart = false): void {
    if (this.#deadlineTimer !== undefined && !restart) return;
    this.#clearDeadline();
    // Unreferenced: the open stream keeps the process alive while reports are in flight.
    this.#deadlineTimer = setTimeout(() => {
      this.#deadlineTimer = undefined;
      const stream = this.#stream;
      this.#stream = undefined;
      this.#fail(grpcStatus.DEADLINE_EXCEEDED, `no answer within ${this.#deadlineMs} ms`);
      stream?.cancel();
    }, this.#deadlineMs).unref();
  }

  #clearDeadline(): void {
    if (this.#deadlineTimer !== undefined) clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
  }
}
