import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectStat } from '../src/byte-source.js';
import { parseHead } from '../src/s3/direct-connection.js';
import { S3ByteSource, type S3ByteSourceOptions } from '../src/s3/s3-byte-source.js';
import { type ErrorAnswer, type Framing, FramingS3Server } from './support/framing-s3-server.js';
import { S3RVER_CREDENTIALS } from './support/s3rver-process.js';

const REPLACED: ErrorAnswer = {
  status: 412,
  reason: 'Precondition Failed',
  code: 'PreconditionFailed',
  message: 'At least one of the pre-conditions you specified did not hold',
};
const DENIED: ErrorAnswer = {
  status: 403,
  reason: 'Forbidden',
  code: 'AccessDenied',
  message: 'Access Denied',
};
const SLOW_DOWN: ErrorAnswer = {
  status: 503,
  reason: 'Slow Down',
  code: 'SlowDown',
  message: 'Please reduce your request rate.',
};

/** How a read ended: its bytes, or its error's code and text. */
async function outcome(
  read: Promise<Uint8Array>,
): Promise<{ bytes?: Buffer; code?: unknown; text?: string }> {
  try {
    return { bytes: Buffer.from(await read) };
  } catch (error) {
    return { code: (error as { code?: unknown }).code, text: String(error) };
  }
}

// Answers the direct path does not frame itself (chunked, close-delimited) go again through the
// AWS SDK's handler: the same bytes and the same errors as with the direct path switched off.
describe('S3ByteSource ranged GETs answered chunked or close-delimited', () => {
  let server: FramingS3Server;
  let stat: ObjectStat;
  const data = randomBytes(300_017);
  const sources: S3ByteSource[] = [];

  const sourceWith = (options: S3ByteSourceOptions = {}): S3ByteSource => {
    const source = new S3ByteSource({
      endpoint: server.endpoint,
      credentials: S3RVER_CREDENTIALS,
      baseDelayMs: 1,
      maxDelayMs: 5,
      maxAttempts: 3,
      ...options,
    });
    sources.push(source);
    return source;
  };

  beforeAll(async () => {
    server = await FramingS3Server.start(data);
    stat = await sourceWith().stat('s3://bucket/object.bin');
  });
  afterEach(() => {
    server.framing = 'length';
    server.error = undefined;
    server.headPadding = 0;
  });
  afterAll(async () => {
    for (const source of sources) await source.close();
    await server?.close();
  });

  const framings: readonly Framing[] = ['chunked', 'close'];

  it.each(framings)('reads a %s 206 byte-identical, as the SDK path does', async (framing) => {
    server.framing = framing;
    for (const source of [sourceWith(), sourceWith({ directRanges: false })]) {
      const into = new Uint8Array(100_000);
      const bytes = await source.readRange(stat, 12_345, 100_000, { into });
      expect(Buffer.from(bytes).equals(data.subarray(12_345, 112_345))).toBe(true);
      expect(source.stats.snapshot().retries['connection-reset']).toBe(0);
    }
  });

  it.each(framings)(
    'fails %s 412, 403 and 503 answers with the SDK path errors, naming the object',
    async (framing) => {
      server.framing = framing;
      const direct = sourceWith();
      const sdk = sourceWith({ directRanges: false });
      for (const [error, code] of [
        [REPLACED, 'CHANGED'],
        [DENIED, 'ACCESS_DENIED'],
        [SLOW_DOWN, undefined],
      ] as const) {
        server.error = error;
        const gets = server.gets;
        const viaDirect = await outcome(direct.readRange(stat, 0, 1000));
        const directGets = server.gets - gets;
        const viaSdk = await outcome(sdk.readRange(stat, 0, 1000));
        expect(viaDirect).toEqual(viaSdk);
        expect(viaDirect.text).toContain('s3://bucket/object.bin');
        expect(viaDirect.text).toContain(error.code);
        if (code !== undefined) expect(viaDirect.code).toBe(code);
        // Each attempt asked once over the direct path, then once more through the SDK's handler.
        expect(directGets).toBe(2 * (server.gets - gets - directGets));
      }
      expect(direct.stats.snapshot().retries.throttled).toBe(2);
      expect(direct.stats.snapshot().retries['connection-reset']).toBe(0);
    },
  );

  it('reads on over the kept-alive connection after an error answer framed by Content-Length', async () => {
    const source = sourceWith();
    server.error = REPLACED;
    expect((await outcome(source.readRange(stat, 0, 10))).code).toBe('CHANGED');
    server.error = undefined;
    expect(Buffer.from(await source.readRange(stat, 5, 10)).equals(data.subarray(5, 15))).toBe(true);
  });

  it('fails an answer head over 64 KiB instead of reading it without bound', async () => {
    server.headPadding = 70 * 1024;
    const failure = await outcome(sourceWith({ maxAttempts: 1 }).readRange(stat, 0, 10));
    expect(failure.text).toContain('over 64 KiB');
  });

  it('is switched off by EDL_S3_DIRECT_RANGES=0: every GET goes through the SDK handler once', async () => {
    server.framing = 'chunked';
    process.env.EDL_S3_DIRECT_RANGES = '0';
    try {
      const source = sourceWith();
      const gets = server.gets;
      expect(Buffer.from(await source.readRange(stat, 1, 10)).equals(data.subarray(1, 11))).toBe(true);
      expect(server.gets - gets).toBe(1);
    } finally {
      delete process.env.EDL_S3_DIRECT_RANGES;
    }
  });
});

describe('parseHead (the direct path answer heads)', () => {
  it('reads the status, headers and length, joining repeated headers', () => {
    const head = parseHead('HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\nX-A: 1\r\nx-a: 2');
    expect(head).toEqual({
      statusCode: 206,
      reason: 'Partial Content',
      headers: { 'content-length': '10', 'x-a': '1, 2' },
      bodyBytes: 10,
      keepAlive: true,
    });
  });

  it('accepts a repeated Content-Length that agrees, and refuses one that does not or is not digits', () => {
    expect(parseHead('HTTP/1.1 206 OK\r\nContent-Length: 10\r\nContent-Length: 10').bodyBytes).toBe(10);
    for (const bad of ['10\r\nContent-Length: 11', '0x10', '1e3', '-1', '', '12 34', '99999999999999999']) {
      expect(() => parseHead(`HTTP/1.1 206 OK\r\nContent-Length: ${bad}`)).toThrow(/a bad Content-Length/);
    }
  });

  it('keeps HTTP/1.0 answers alive only when they say so, and HTTP/1.1 ones unless they say close', () => {
    expect(parseHead('HTTP/1.0 206 OK\r\nContent-Length: 1').keepAlive).toBe(false);
    expect(parseHead('HTTP/1.0 206 OK\r\nContent-Length: 1\r\nConnection: keep-alive').keepAlive).toBe(true);
    expect(parseHead('HTTP/1.1 206 OK\r\nContent-Length: 1\r\nConnection: close').keepAlive).toBe(false);
  });

  it('hands chunked and close-delimited answers back, and refuses what is not HTTP/1.x', () => {
    expect(() => parseHead('HTTP/1.1 412 Precondition Failed\r\nTransfer-Encoding: chunked')).toThrow(
      /a 412 answer to a ranged GET not framed by a Content-Length/,
    );
    expect(() => parseHead('HTTP/1.1 206 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked')).toThrow(
      /a 206 answer to a ranged GET not framed by a Content-Length/,
    );
    expect(() => parseHead('HTTP/1.0 206 OK')).toThrow(
      /a 206 answer to a ranged GET not framed by a Content-Length/,
    );
    expect(parseHead('HTTP/1.1 204 No Content').bodyBytes).toBe(0);
    expect(() => parseHead('HTTP/2 206')).toThrow(/not an HTTP\/1\.x answer/);
    expect(() => parseHead('HTTP/1.1 206 OK\r\nno colon here')).toThrow(/a malformed header line/);
  });
});
