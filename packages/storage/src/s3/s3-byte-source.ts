import type { Readable } from 'node:stream';
import type { GetObjectCommandOutput, S3Client } from '@aws-sdk/client-s3';
import type { ObjectStat } from '../byte-source.js';
import { SIDECAR_SUFFIXES } from '../locations.js';
import { HttpStatusFailure, type RangeAnswer, withRetries } from '../remote/attempts.js';
import { parseContentRange } from '../remote/range.js';
import {
  type RangeRequest,
  RemoteByteSource,
  type RemoteSourceOptions,
} from '../remote/remote-byte-source.js';
import { RemoteError } from '../remote/remote-error.js';
import { DirectRangeHandler, type SdkRequestHandler } from './direct-range-handler.js';
import { formatS3Location, isSidecarKey, parseS3Location, type S3Location } from './s3-location.js';
import { environmentNamesS3Endpoint, loadS3Sdk, type S3Sdk } from './s3-sdk.js';

/** Static credentials, for callers that hold them; otherwise the AWS default chain is used. */
export interface S3StaticCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** Options of an {@link S3ByteSource}. Every field is optional. */
export interface S3ByteSourceOptions extends RemoteSourceOptions {
  /**
   * The S3 API endpoint (`http://127.0.0.1:9000`, an R2 or GCS XML endpoint, ...). Without it the
   * SDK uses `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`, else the profile's `endpoint_url`,
   * else AWS's regional endpoint.
   */
  readonly endpoint?: string;
  /** Region to sign for. Default: the SDK's (`AWS_REGION`, the profile), else `us-east-1`. */
  readonly region?: string;
  /**
   * Path-style addressing (`endpoint/bucket/key`), which S3-compatible stores need. Default: on when
   * an endpoint is set (this option or the `AWS_ENDPOINT_URL*` variables), off for AWS.
   */
  readonly forcePathStyle?: boolean;
  /** Unsigned requests, for public buckets: no credentials are looked up or sent. */
  readonly anonymous?: boolean;
  /** Profile of the shared config and credentials files (default: `AWS_PROFILE`, else `default`). */
  readonly profile?: string;
  /**
   * Fixed credentials. Without them the SDK's Node provider chain (`fromNodeProviderChain`) finds
   * them: environment, shared files and profiles (SSO, process), web identity tokens (EKS IRSA,
   * refreshed before they expire), and ECS container or EC2 instance metadata.
   */
  readonly credentials?: S3StaticCredentials;
  /** Keys per ListObjectsV2 page (default 1000, S3's maximum). */
  readonly listPageSize?: number;
  /**
   * Ranged GETs to `http://` and `https://` endpoints over the source's own connections
   * ({@link DirectRangeHandler}). Default: on, unless the environment variable `EDL_S3_DIRECT_RANGES`
   * is `0`; off sends every request through the AWS SDK's handler, for a store or proxy that
   * misbehaves with it.
   */
  readonly directRanges?: boolean;
}

/**
 * Objects of an S3-compatible object store (AWS S3, MinIO, Ceph RGW, R2, GCS's XML API) through the
 * AWS SDK v3, which is an optional dependency imported on first use.
 *
 * - `list('s3://bucket/prefix/')`: the objects directly under the prefix (ListObjectsV2 with
 *   delimiter `/`, every page), sorted by key; keys ending in `.idx` or `.index` (readers' sidecar
 *   indexes) and `/` (folder markers) are skipped, and each object's stat carries the sidecars
 *   listed next to it (`ObjectStat.sidecars`). `list('s3://bucket/key')` is the object itself,
 *   or, when no such object exists, the objects under `key/`.
 * - `stat`: HeadObject; the version is the ETag.
 * - `readRange`: GetObject with `Range` and `If-Match: <ETag>`, and the answer's ETag and
 *   Content-Range checked too, so a store that ignores `If-Match` still cannot mix two versions: a
 *   replaced object fails with `CHANGED` naming `s3://bucket/key`.
 *
 * Reads retry throttling (503 SlowDown, 429), 5xx, resets and timeouts with backoff and full jitter,
 * resuming a broken body from the byte where it broke (see {@link RemoteSourceOptions}); the SDK's own
 * retries are off so that every retry is counted in {@link S3ByteSource.stats} by cause.
 */
export class S3ByteSource extends RemoteByteSource {
  readonly scheme = 's3';
  private readonly listPageSize: number;
  private clientPromise: Promise<{ readonly sdk: S3Sdk; readonly client: S3Client }> | undefined;

  constructor(private readonly options: S3ByteSourceOptions = {}) {
    super(options);
    this.listPageSize = options.listPageSize ?? 1000;
    if (!Number.isInteger(this.listPageSize) || this.listPageSize < 1 || this.listPageSize > 1000) {
      throw new RangeError(`listPageSize must be an integer in [1, 1000], got ${options.listPageSize}`);
    }
  }

  async list(location: string, options: { readonly signal?: AbortSignal } = {}): Promise<ObjectStat[]> {
    const { bucket, key } = parseS3Location(location);
    if (key !== '' && !key.endsWith('/')) {
      try {
        return [await this.stat(location, options)];
      } catch (error) {
        if (!(error instanceof RemoteError && error.code === 'NOT_FOUND')) throw error;
        const objects = await this.listPrefix({ bucket, key: `${key}/` }, location, options.signal);
        if (objects.length === 0) throw error;
        return objects;
      }
    }
    return this.listPrefix({ bucket, key }, location, options.signal);
  }

  async stat(location: string, options: { readonly signal?: AbortSignal } = {}): Promise<ObjectStat> {
    const { bucket, key } = parseS3Location(location);
    const url = formatS3Location(bucket, key);
    const { sdk, client } = await this.client(url);
    const head = await withRetries(this.call(url, 'stat', options.signal), (signal, timeouts) =>
      timeouts.untilAnswer(() =>
        sendS3(url, () =>
          client.send(new sdk.client.HeadObjectCommand({ Bucket: bucket, Key: key }), {
            abortSignal: signal,
          }),
        ),
      ),
    );
    if (head.ContentLength === undefined || head.ETag === undefined) {
      throw new RemoteError('BAD_RESPONSE', 'HeadObject answered without Content-Length or ETag', { url });
    }
    return { location: url, size: head.ContentLength, version: head.ETag };
  }

  protected async rangeRequest(object: ObjectStat): Promise<RangeRequest> {
    const { bucket, key } = parseS3Location(object.location);
    const url = formatS3Location(bucket, key);
    const { sdk, client } = await this.client(url);
    const send = async (start: number, count: number, signal: AbortSignal): Promise<RangeAnswer> => {
      const command = new sdk.client.GetObjectCommand({
        Bucket: bucket,
        Key: key,
        Range: `bytes=${start}-${start + count - 1}`,
        IfMatch: object.version,
      });
      const output = await sendS3(url, () => client.send(command, { abortSignal: signal }));
      const body = output.Body as (Readable & AsyncIterable<Uint8Array>) | undefined;
      const cancel = (reason: Error): void => {
        body?.destroy(reason);
      };
      try {
        if (body === undefined)
          throw new RemoteError('BAD_RESPONSE', 'GetObject answered without a body', { url });
        return { body, start: answerStart(output, object, start), cancel };
      } catch (error) {
        cancel(error instanceof Error ? error : new Error(String(error)));
        throw error;
      }
    };
    return { url, send };
  }

  /** Closes the SDK client's connections; the source must not be used afterwards. */
  async close(): Promise<void> {
    const pending = this.clientPromise;
    this.clientPromise = undefined;
    if (pending !== undefined) (await pending.catch(() => undefined))?.client.destroy();
  }

  private async listPrefix(
    prefix: S3Location,
    location: string,
    signal?: AbortSignal,
  ): Promise<ObjectStat[]> {
    const url = formatS3Location(prefix.bucket, prefix.key);
    const { sdk, client } = await this.client(url);
    const objects: ObjectStat[] = [];
    const sidecars = new Map<string, ObjectStat>();
    let continuationToken: string | undefined;
    do {
      const page = await withRetries(this.call(location, 'list', signal), (attemptSignal, timeouts) =>
        timeouts.untilAnswer(() =>
          sendS3(url, () =>
            client.send(
              new sdk.client.ListObjectsV2Command({
                Bucket: prefix.bucket,
                Prefix: prefix.key,
                Delimiter: '/',
                MaxKeys: this.listPageSize,
                ContinuationToken: continuationToken,
              }),
              { abortSignal: attemptSignal },
            ),
          ),
        ),
      );
      for (const entry of page.Contents ?? []) {
        const key = entry.Key;
        if (key === undefined || key.endsWith('/')) continue;
        if (entry.Size === undefined || entry.ETag === undefined) {
          throw new RemoteError('BAD_RESPONSE', `ListObjectsV2 gave ${key} without Size or ETag`, { url });
        }
        const stat = {
          location: formatS3Location(prefix.bucket, key),
          size: entry.Size,
          version: entry.ETag,
        };
        if (isSidecarKey(key)) sidecars.set(stat.location, stat);
        else objects.push(stat);
      }
      continuationToken = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (continuationToken !== undefined);
    // What the listing says of each object's sidecars spares readers a HEAD per object.
    return objects
      .map((object) => ({ ...object, sidecars: sidecarsOf(object.location, sidecars) }))
      .sort((a, b) => (a.location < b.location ? -1 : a.location > b.location ? 1 : 0));
  }

  private client(url: string): Promise<{ readonly sdk: S3Sdk; readonly client: S3Client }> {
    this.clientPromise ??= loadS3Sdk(url).then((sdk) => ({
      sdk,
      client: withDirectRanges(sdk, createClient(sdk, this.options), this.options.directRanges),
    }));
    const pending = this.clientPromise;
    pending.catch(() => {
      if (this.clientPromise === pending) this.clientPromise = undefined;
    });
    return pending;
  }
}

/**
 * The client with its ranged GETs sent over the byte source's own connections, whose bodies are
 * read straight into the reader's buffers ({@link DirectRangeHandler}); left as it is when proxy
 * variables are set, which the SDK's handler honours through its agents, or when switched off.
 */
function withDirectRanges(sdk: S3Sdk, client: S3Client, enabled: boolean | undefined): S3Client {
  if (sdk.proxyAgents !== undefined || !(enabled ?? process.env.EDL_S3_DIRECT_RANGES !== '0')) return client;
  const config = client.config as { requestHandler: unknown };
  config.requestHandler = new DirectRangeHandler(config.requestHandler as SdkRequestHandler);
  return client;
}

/** The listed sidecars of the object at `location`, in {@link SIDECAR_SUFFIXES} order. */
function sidecarsOf(location: string, listed: ReadonlyMap<string, ObjectStat>): ObjectStat[] {
  const found: ObjectStat[] = [];
  for (const suffix of SIDECAR_SUFFIXES) {
    const sidecar = listed.get(`${location}${suffix}`);
    if (sidecar !== undefined) found.push(sidecar);
  }
  return found;
}

/** An SDK client for `options` (shared by the byte source and the object sink): SDK retries off, path-style for endpoints. */
export function createClient(sdk: S3Sdk, options: S3ByteSourceOptions): S3Client {
  const anonymous = options.anonymous === true;
  // Through the proxies the environment names (the STS and SSO calls of the chain too).
  const requestHandler = sdk.proxyAgents === undefined ? undefined : { ...sdk.proxyAgents };
  return new sdk.client.S3Client({
    ...(requestHandler === undefined ? {} : { requestHandler }),
    region: options.region ?? regionOrDefault(sdk),
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    forcePathStyle:
      options.forcePathStyle ?? (options.endpoint !== undefined || environmentNamesS3Endpoint()),
    credentials: anonymous
      ? { accessKeyId: '', secretAccessKey: '' }
      : (options.credentials ??
        sdk.credentialProviders.fromNodeProviderChain({
          profile: options.profile,
          ...(requestHandler === undefined ? {} : { clientConfig: { requestHandler } }),
        })),
    // An unsigned request: the signer hands the request on untouched, so no Authorization header.
    ...(anonymous ? { signer: { sign: async <Request>(request: Request) => request } } : {}),
    maxAttempts: 1,
    followRegionRedirects: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/** The region the SDK finds (`AWS_REGION`, the profile), else `us-east-1` (redirects fix the rest). */
function regionOrDefault(sdk: S3Sdk): () => Promise<string> {
  let region: Promise<string> | undefined;
  return () => {
    region ??= (async () => {
      const probe = new sdk.client.S3Client({});
      try {
        return await probe.config.region();
      } catch {
        return 'us-east-1';
      } finally {
        probe.destroy();
      }
    })();
    return region;
  };
}

interface SdkFailure {
  readonly name?: string;
  readonly message?: string;
  readonly $metadata?: { readonly httpStatusCode?: number };
}

/** Runs one SDK call, turning its failed answers into {@link HttpStatusFailure}s. */
export async function sendS3<Output>(url: string, send: () => Promise<Output>): Promise<Output> {
  try {
    return await send();
  } catch (error) {
    const failure = error as SdkFailure;
    const status = failure.$metadata?.httpStatusCode;
    if (typeof status === 'number' && status >= 300) {
      const message = failure.message === 'UnknownError' ? undefined : failure.message;
      throw new HttpStatusFailure(status, serverCode(failure.name, status), message);
    }
    if (failure.name === 'CredentialsProviderError') {
      throw new RemoteError(
        'ACCESS_DENIED',
        'no AWS credentials found (environment, shared config and credentials files, web identity token, ' +
          'container or instance metadata); configure them, or read a public bucket anonymously',
        { url, cause: error },
      );
    }
    throw error;
  }
}

function serverCode(name: string | undefined, status: number): string | undefined {
  // Bodiless answers (HEAD) get names like "NotFound" or "403" from the SDK; a bare status adds nothing.
  return name === undefined || name === String(status) || name === 'Unknown' ? undefined : name;
}

/** The answer's first byte, after checking it is the pinned version of the object. */
function answerStart(output: GetObjectCommandOutput, object: ObjectStat, asked: number): number {
  if (output.ETag !== object.version) {
    throw new RemoteError(
      'CHANGED',
      `the object was replaced since it was stat'ed (ETag ${output.ETag ?? 'missing'}, expected ${object.version}); ` +
        'restart from a fresh listing',
      { url: object.location },
    );
  }
  const range = parseContentRange(output.ContentRange);
  if (range === undefined) return 0;
  if (range.total !== undefined && range.total !== object.size) {
    throw new RemoteError('CHANGED', `the object is now ${range.total} bytes, not ${object.size}`, {
      url: object.location,
    });
  }
  if (range.start !== asked) {
    throw new RemoteError('BAD_RESPONSE', `asked for byte ${asked}, got a range from ${range.start}`, {
      url: object.location,
    });
  }
  return range.start;
}
