import type { CompletedPart, S3Client } from '@aws-sdk/client-s3';
import { checkInteger } from '@edl/common';
import { type RemoteCall, withRetries } from '../remote/attempts.js';
import { RemoteError } from '../remote/remote-error.js';
import { RemoteStats } from '../remote/remote-stats.js';
import { type RetrySettings, retrySettings } from '../remote/retry-policy.js';
import { createClient, sendS3 } from '../s3/s3-byte-source.js';
import { type S3ClientSettings, s3Defaults } from '../s3/s3-config.js';
import { formatS3Location, parseS3Location, type S3Location } from '../s3/s3-location.js';
import { loadS3Sdk, type S3Sdk } from '../s3/s3-sdk.js';
import type { ObjectSinkOptions } from './object-sink.js';
import { SinkBase } from './sink-base.js';

const MIB = 1024 * 1024;
/** S3's smallest part (all but the last) and largest part of a multipart upload. */
const MIN_PART_SIZE = 5 * MIB;
const MAX_PART_SIZE = 5 * 1024 * MIB;
/** S3's most parts per upload. */
const MAX_PARTS = 10_000;

/** A client and how to give it back: the shared default one stays, one of explicit settings is closed. */
interface Connection {
  readonly sdk: S3Sdk;
  readonly client: S3Client;
  release(): void;
}

let shared: { readonly settings: S3ClientSettings; readonly client: Promise<Connection> } | undefined;

/**
 * A client for `settings` (explicit ones) or for {@link s3Defaults}: the latter is made once per
 * configuration and kept, so writes do not look credentials up (an STS call under IRSA) each time.
 */
async function connect(url: string, settings: S3ClientSettings | undefined): Promise<Connection> {
  if (settings !== undefined) {
    const sdk = await loadS3Sdk(url);
    const client = createClient(sdk, settings);
    return { sdk, client, release: () => client.destroy() };
  }
  const defaults = s3Defaults();
  if (shared?.settings !== defaults) {
    const client = loadS3Sdk(url).then((sdk) => ({
      sdk,
      client: createClient(sdk, defaults),
      release: () => {},
    }));
    shared = { settings: defaults, client };
    client.catch(() => {
      if (shared?.client === client) shared = undefined;
    });
  }
  return shared.client;
}

/** One S3 request with the read side's retries (backoff with full jitter), counted in `call.stats`. */
function sendWithRetries<Output>(
  call: RemoteCall,
  send: (signal: AbortSignal) => Promise<Output>,
): Promise<Output> {
  return withRetries(call, (signal, timeouts) =>
    timeouts.untilAnswer(() => sendS3(call.url, () => send(signal))),
  );
}

/**
 * An S3 object written in parts: the bytes fill a part buffer; the first full part starts a
 * multipart upload, and each full part is uploaded (at most `partsInFlight` at once) while the
 * writer fills the next. Closing sends the last part and completes the upload, or, for an object
 * of at most one part, sends it by one PutObject. Each request retries as reads do; any failure, or
 * an abort, aborts the multipart upload, so no partial object and no pending upload remain.
 *
 * Multipart commands of `@aws-sdk/client-s3` rather than `@aws-sdk/lib-storage`'s `Upload`: the
 * client's own retries are off (every retry is counted by cause, as for reads), and `Upload` would
 * retry through them only; it also adds a dependency for what is four commands.
 */
export class S3ObjectSink extends SinkBase {
  private readonly settings: RetrySettings;
  private readonly stats: RemoteStats;
  private part: Uint8Array;
  private filled = 0;
  private uploadId: string | undefined;
  private partsStarted = 0;
  private readonly completed: CompletedPart[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private failure: unknown;

  private constructor(
    private readonly target: S3Location,
    private readonly connection: Connection,
    private readonly partSize: number,
    private readonly partsInFlight: number,
    private readonly options: ObjectSinkOptions,
  ) {
    super(formatS3Location(target.bucket, target.key));
    this.settings = retrySettings(options);
    this.stats = options.stats ?? new RemoteStats();
    this.part = new Uint8Array(partSize);
  }

  /** Checks the options and connects; nothing is sent before the first part is full or close. */
  static async open(location: string, options: ObjectSinkOptions = {}): Promise<S3ObjectSink> {
    const target = parseS3Location(location);
    if (target.key === '' || target.key.endsWith('/')) {
      throw new TypeError(`not an S3 object key (a prefix cannot be written): ${location}`);
    }
    const partSize = checkInteger(options.partSize ?? 8 * MIB, 'partSize', MIN_PART_SIZE, MAX_PART_SIZE);
    const partsInFlight = checkInteger(options.partsInFlight ?? 4, 'partsInFlight', 1, 64);
    retrySettings(options);
    const url = formatS3Location(target.bucket, target.key);
    return new S3ObjectSink(target, await connect(url, options.s3), partSize, partsInFlight, options);
  }

  protected async writeChunk(chunk: Uint8Array): Promise<void> {
    for (let taken = 0; taken < chunk.byteLength; ) {
      const count = Math.min(chunk.byteLength - taken, this.partSize - this.filled);
      this.part.set(chunk.subarray(taken, taken + count), this.filled);
      this.filled += count;
      taken += count;
      if (this.filled === this.partSize) await this.sendFullPart();
    }
  }

  protected async commit(): Promise<void> {
    const { sdk, client } = this.connection;
    const bucket = this.target.bucket;
    const key = this.target.key;
    if (this.uploadId === undefined) {
      const body = this.part.subarray(0, this.filled);
      await sendWithRetries(this.call('put'), (signal) =>
        client.send(new sdk.client.PutObjectCommand({ Bucket: bucket, Key: key, Body: body }), {
          abortSignal: signal,
        }),
      );
      this.connection.release();
      return;
    }
    if (this.filled > 0) this.startPart(this.part.subarray(0, this.filled));
    await this.settle();
    const uploadId = this.uploadId;
    const parts = [...this.completed].sort((a, b) => (a.PartNumber ?? 0) - (b.PartNumber ?? 0));
    await sendWithRetries(this.call('complete the multipart upload'), (signal) =>
      client.send(
        new sdk.client.CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
        }),
        { abortSignal: signal },
      ),
    );
    this.uploadId = undefined;
    this.connection.release();
  }

  protected async discard(): Promise<void> {
    // Parts still uploading would otherwise land after the abort and be kept (and billed).
    await Promise.allSettled(this.inFlight);
    const uploadId = this.uploadId;
    this.uploadId = undefined;
    try {
      if (uploadId === undefined) return;
      const { sdk, client } = this.connection;
      await sendWithRetries(this.call('abort the multipart upload', false), (signal) =>
        client.send(
          new sdk.client.AbortMultipartUploadCommand({
            Bucket: this.target.bucket,
            Key: this.target.key,
            UploadId: uploadId,
          }),
          { abortSignal: signal },
        ),
      ).catch((error: unknown) => {
        throw new RemoteError(
          'UNAVAILABLE',
          `the multipart upload ${uploadId} could not be aborted (a bucket lifecycle rule with ` +
            `AbortIncompleteMultipartUpload removes it): ${error instanceof Error ? error.message : String(error)}`,
          { url: this.location, cause: error },
        );
      });
    } finally {
      this.connection.release();
    }
  }

  /** Uploads the full part buffer and takes a fresh one; waits while `partsInFlight` are uploading. */
  private async sendFullPart(): Promise<void> {
    if (this.uploadId === undefined) await this.createUpload();
    while (this.inFlight.size >= this.partsInFlight) await Promise.race(this.inFlight);
    this.throwIfFailed();
    if (this.partsStarted + 1 >= MAX_PARTS) {
      throw new RangeError(
        `${this.location}: more than ${MAX_PARTS} parts of ${this.partSize} bytes; use a larger partSize`,
      );
    }
    this.startPart(this.part);
    this.part = new Uint8Array(this.partSize);
    this.filled = 0;
  }

  private async createUpload(): Promise<void> {
    const { sdk, client } = this.connection;
    const created = await sendWithRetries(this.call('start a multipart upload'), (signal) =>
      client.send(
        new sdk.client.CreateMultipartUploadCommand({ Bucket: this.target.bucket, Key: this.target.key }),
        { abortSignal: signal },
      ),
    );
    if (created.UploadId === undefined) {
      throw new RemoteError('BAD_RESPONSE', 'CreateMultipartUpload answered without an UploadId', {
        url: this.location,
      });
    }
    this.uploadId = created.UploadId;
  }

  private startPart(body: Uint8Array): void {
    const partNumber = ++this.partsStarted;
    const { sdk, client } = this.connection;
    const uploadId = this.uploadId;
    const upload = sendWithRetries(this.call(`upload part ${partNumber}`), (signal) =>
      client.send(
        new sdk.client.UploadPartCommand({
          Bucket: this.target.bucket,
          Key: this.target.key,
          UploadId: uploadId,
          PartNumber: partNumber,
          Body: body,
        }),
        { abortSignal: signal },
      ),
    )
      .then((output) => {
        if (output.ETag === undefined) {
          throw new RemoteError('BAD_RESPONSE', `UploadPart ${partNumber} answered without an ETag`, {
            url: this.location,
          });
        }
        this.completed.push({ PartNumber: partNumber, ETag: output.ETag });
      })
      // Kept, not thrown: the writer sees it at its next part or at close, and no rejection goes unheard.
      .catch((error: unknown) => {
        this.failure ??= error;
      });
    const tracked = upload.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  private async settle(): Promise<void> {
    await Promise.allSettled(this.inFlight);
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** A request of this write; `withCallerSignal` false for the clean-up that must run after an abort. */
  private call(action: string, withCallerSignal = true): RemoteCall {
    return {
      url: this.location,
      action,
      settings: this.settings,
      stats: this.stats,
      signal: withCallerSignal ? this.options.signal : undefined,
    };
  }
}

/** Deletes an S3 object (DeleteObject, retried as reads are); a missing key is no error. */
export async function deleteS3Object(location: string, options: ObjectSinkOptions = {}): Promise<void> {
  const { bucket, key } = parseS3Location(location);
  const url = formatS3Location(bucket, key);
  const { sdk, client, release } = await connect(url, options.s3);
  try {
    await sendWithRetries(
      {
        url,
        action: 'delete',
        settings: retrySettings(options),
        stats: options.stats ?? new RemoteStats(),
        signal: options.signal,
      },
      (signal) =>
        client.send(new sdk.client.DeleteObjectCommand({ Bucket: bucket, Key: key }), {
          abortSignal: signal,
        }),
    );
  } finally {
    release();
  }
}
