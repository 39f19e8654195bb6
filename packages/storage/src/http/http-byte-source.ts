import type { ObjectStat } from '../byte-source.js';
import { fetchThroughEnvProxy } from '../proxy/env-proxy.js';
import {
  type AttemptTimeouts,
  HttpStatusFailure,
  type RangeAnswer,
  withRetries,
} from '../remote/attempts.js';
import { parseContentRange } from '../remote/range.js';
import {
  type RangeRequest,
  RemoteByteSource,
  type RemoteSourceOptions,
} from '../remote/remote-byte-source.js';
import { displayUrl, RemoteError } from '../remote/remote-error.js';

/** Options of an {@link HttpByteSource}. Every field is optional. */
export interface HttpByteSourceOptions extends RemoteSourceOptions {
  /** The scheme this source is registered for (default `https`); it reads `http://` URLs either way. */
  readonly scheme?: 'http' | 'https';
  /**
   * Called once per URL whose reads cannot be pinned to a version (no ETag, no Last-Modified).
   * Default: `process.emitWarning` with code `EDL_UNPINNED_OBJECT`.
   */
  readonly onWarning?: (message: string) => void;
}

/** Prefix of the versions pinned on `Last-Modified` (servers that send no strong ETag). */
const LAST_MODIFIED_VERSION = 'Last-Modified: ';

/**
 * Single objects served over `https://` or `http://` (a file server, a bucket's public URL, a
 * presigned URL), read with Node's built-in `fetch`: `stat` is a HEAD (a `Range: bytes=0-0` GET where
 * HEAD is refused), `readRange` a GET with `Range`.
 *
 * Reads are pinned to the version `stat` saw: a strong ETag is sent as `If-Match` and compared with
 * the answer's; without one, `Last-Modified` is sent as `If-Unmodified-Since` and compared, with the
 * size; a server sending neither cannot have its objects pinned, which is warned once per URL (the
 * size is still checked). A replaced object fails with `CHANGED`. A server that ignores `Range` is
 * read from its first byte, the bytes before the range discarded as they stream.
 *
 * Network settings, as Node's `fetch` (undici) honours them: `NODE_EXTRA_CA_CERTS` (a PEM bundle of
 * private CAs, read once at process start) is trusted by `fetch` as by every TLS connection.
 * `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` are honoured on every Node version (Node's `fetch`
 * alone ignores them unless started with `NODE_USE_ENV_PROXY=1`): a URL they send through a proxy
 * is requested through node:https and a CONNECT tunnel ({@link fetchThroughEnvProxy}).
 */
export class HttpByteSource extends RemoteByteSource {
  readonly scheme: 'http' | 'https';
  private readonly onWarning: (message: string) => void;
  private readonly warned = new Set<string>();

  constructor(options: HttpByteSourceOptions = {}) {
    super(options);
    this.scheme = options.scheme ?? 'https';
    this.onWarning =
      options.onWarning ?? ((message) => process.emitWarning(message, { code: 'EDL_UNPINNED_OBJECT' }));
  }

  /** The one object a URL names (HTTP has no listing). */
  async list(location: string, options: { readonly signal?: AbortSignal } = {}): Promise<ObjectStat[]> {
    return [await this.stat(location, options)];
  }

  async stat(location: string, options: { readonly signal?: AbortSignal } = {}): Promise<ObjectStat> {
    const target = checkHttpUrl(location);
    const call = this.call(displayUrl(location), 'stat', options.signal);
    const head = await withRetries(call, (signal, timeouts) => sendHead(target, signal, timeouts));
    const version = pinnedVersion(head.headers);
    if (version === undefined && !this.warned.has(location)) {
      this.warned.add(location);
      this.onWarning(
        `${displayUrl(location)} cannot be pinned to a version: the server sends neither a strong ETag nor ` +
          'Last-Modified, so a replacement of the same size would not be detected',
      );
    }
    return { location, size: head.size, version };
  }

  protected async rangeRequest(object: ObjectStat): Promise<RangeRequest> {
    const target = checkHttpUrl(object.location);
    const url = displayUrl(object.location);
    const send = async (start: number, count: number, signal: AbortSignal): Promise<RangeAnswer> => {
      const headers: Record<string, string> = {
        ...target.headers,
        range: `bytes=${start}-${start + count - 1}`,
      };
      const version = object.version;
      if (version?.startsWith(LAST_MODIFIED_VERSION)) {
        headers['if-unmodified-since'] = version.slice(LAST_MODIFIED_VERSION.length);
      } else if (version !== undefined) {
        headers['if-match'] = version;
      }
      const response = await fetchThroughEnvProxy(target.url, { headers, signal });
      try {
        const answerStart = checkAnswer(response, object, start, url);
        if (response.body === null) throw new RemoteError('BAD_RESPONSE', 'the answer has no body', { url });
        // The attempt's signal, which the stall detector aborts first, already ends a fetch body.
        return { body: response.body, start: answerStart, cancel: () => undefined };
      } catch (error) {
        await response.body?.cancel().catch(() => undefined);
        throw error;
      }
    };
    return { url, send };
  }
}

/** A URL fetch accepts, and the headers its user info becomes (fetch refuses URLs with credentials). */
interface Target {
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
}

function checkHttpUrl(location: string): Target {
  let url: URL;
  try {
    url = new URL(location);
  } catch {
    throw new TypeError(`not an http(s) URL: ${displayUrl(location)}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TypeError(`not an http(s) URL: ${displayUrl(location)}`);
  }
  if (url.username === '' && url.password === '') return { url, headers: {} };
  const user = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  url.username = '';
  url.password = '';
  return { url, headers: { authorization: `Basic ${Buffer.from(user).toString('base64')}` } };
}

interface HeadAnswer {
  readonly size: number;
  readonly headers: Headers;
}

/** HEAD, or where the server refuses HEAD (405, 501), a GET of the first byte. */
async function sendHead(target: Target, signal: AbortSignal, timeouts: AttemptTimeouts): Promise<HeadAnswer> {
  const { url, headers } = target;
  const head = await timeouts.untilAnswer(() =>
    fetchThroughEnvProxy(url, { method: 'HEAD', headers, signal }),
  );
  if (head.ok) {
    const size = Number(head.headers.get('content-length') ?? Number.NaN);
    if (Number.isSafeInteger(size)) return { size, headers: head.headers };
  } else if (head.status !== 405 && head.status !== 501) {
    throw new HttpStatusFailure(head.status, undefined, head.statusText);
  }
  const probe = await timeouts.untilAnswer(() =>
    fetchThroughEnvProxy(url, { headers: { ...headers, range: 'bytes=0-0' }, signal }),
  );
  await probe.body?.cancel().catch(() => undefined);
  if (!probe.ok) throw new HttpStatusFailure(probe.status, undefined, probe.statusText);
  const size =
    probe.status === 206
      ? parseContentRange(probe.headers.get('content-range'))?.total
      : Number(probe.headers.get('content-length') ?? Number.NaN);
  if (size === undefined || !Number.isSafeInteger(size)) {
    throw new RemoteError('BAD_RESPONSE', 'the server tells no size (no Content-Length or Content-Range)', {
      url: displayUrl(url.href),
    });
  }
  return { size, headers: probe.headers };
}

/** A strong ETag, else `Last-Modified: <date>`, else `undefined`. */
function pinnedVersion(headers: Headers): string | undefined {
  return strongEtag(headers) ?? lastModifiedVersion(headers);
}

function strongEtag(headers: Headers): string | undefined {
  const etag = headers.get('etag');
  return etag?.startsWith('"') ? etag : undefined;
}

function lastModifiedVersion(headers: Headers): string | undefined {
  const lastModified = headers.get('last-modified');
  return lastModified === null ? undefined : `${LAST_MODIFIED_VERSION}${lastModified}`;
}

/** Checks a range answer's status and version; returns the object byte its body starts at. */
function checkAnswer(response: Response, object: ObjectStat, asked: number, url: string): number {
  if (response.status !== 200 && response.status !== 206) {
    throw new HttpStatusFailure(response.status, undefined, response.statusText);
  }
  const pinnedOnDate = object.version?.startsWith(LAST_MODIFIED_VERSION) === true;
  const version = pinnedOnDate ? lastModifiedVersion(response.headers) : strongEtag(response.headers);
  if (object.version !== undefined && version !== undefined && version !== object.version) {
    throw new RemoteError(
      'CHANGED',
      `the object was replaced since it was stat'ed (${version}, expected ${object.version}); restart from a fresh listing`,
      { url },
    );
  }
  const range = parseContentRange(response.headers.get('content-range'));
  const total =
    response.status === 206 ? range?.total : Number(response.headers.get('content-length') ?? Number.NaN);
  if (total !== undefined && Number.isSafeInteger(total) && total !== object.size) {
    throw new RemoteError('CHANGED', `the object is now ${total} bytes, not ${object.size}`, { url });
  }
  if (response.status === 200) return 0;
  if (range === undefined || range.start !== asked) {
    throw new RemoteError(
      'BAD_RESPONSE',
      `asked for byte ${asked}, got Content-Range ${range?.start ?? 'none'}`,
      {
        url,
      },
    );
  }
  return range.start;
}
