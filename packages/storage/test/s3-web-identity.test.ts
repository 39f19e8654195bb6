import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { S3ByteSource } from '../src/s3/s3-byte-source.js';
import { FaultProxy, type SeenRequest } from './support/fault-proxy.js';
import { type S3rverProcess, startS3rver } from './support/s3rver-process.js';
import { type IssuedCredentials, StsServer } from './support/sts-server.js';

const BUCKET = 'irsa';
const ROLE_ARN = 'arn:aws:iam::123456789012:role/edl-test';
const FIRST_KEY = 'ASIAEDLIRSA00000001';
const SECOND_KEY = 'ASIAEDLIRSA00000002';
const HOUR_MS = 3_600_000;

/** Every variable through which the SDK's Node chain could find credentials before the token file. */
const CHAIN_VARIABLES = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_PROFILE',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_ENDPOINT_URL',
  'AWS_ENDPOINT_URL_S3',
];

/** Credentials the STS hands out: `<label>-secret` and `<label>-session` with `accessKeyId`. */
function credentials(accessKeyId: string, label: string, expiresInMs: number): IssuedCredentials {
  return { accessKeyId, secretAccessKey: `${label}-secret`, sessionToken: `${label}-session`, expiresInMs };
}

/** The access key id of a SigV4-signed request (from `Credential=<id>/<date>/...`). */
function signingKeyId(request: SeenRequest): string | undefined {
  return /Credential=([^/]+)\//.exec(request.headers.authorization ?? '')?.[1];
}

describe('S3ByteSource with web identity credentials (EKS IRSA) from an STS endpoint', () => {
  let s3: S3rverProcess;
  let proxy: FaultProxy;
  let sts: StsServer;
  let directory: string;
  const token = `edl-test-oidc-token-${randomBytes(8).toString('hex')}`;
  const data = randomBytes(64 * 1024);
  const url = `s3://${BUCKET}/train/part-0.rio`;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'edl-irsa-'));
    const tokenFile = join(directory, 'token');
    await writeFile(tokenFile, token);
    sts = await StsServer.start();
    // s3rver refuses every access key id it does not know: only the STS's keys (and its admin key) pass.
    s3 = await startS3rver({ accessKeyIds: [FIRST_KEY, SECOND_KEY] });
    await s3.createBucket(BUCKET);
    await s3.put(BUCKET, 'train/part-0.rio', data);
    proxy = await FaultProxy.start(Number(new URL(s3.endpoint).port));
    for (const name of CHAIN_VARIABLES) vi.stubEnv(name, undefined);
    // No shared config or credentials file, and no instance metadata: the token file is the only source.
    vi.stubEnv('AWS_CONFIG_FILE', join(directory, 'no-config'));
    vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', join(directory, 'no-credentials'));
    vi.stubEnv('AWS_EC2_METADATA_DISABLED', 'true');
    // What EKS's pod identity webhook sets for a pod whose service account names an IAM role.
    vi.stubEnv('AWS_WEB_IDENTITY_TOKEN_FILE', tokenFile);
    vi.stubEnv('AWS_ROLE_ARN', ROLE_ARN);
    vi.stubEnv('AWS_REGION', 'us-east-1');
    vi.stubEnv('AWS_ENDPOINT_URL_STS', sts.origin);
  });

  afterAll(async () => {
    vi.unstubAllEnvs();
    await proxy?.close();
    await s3?.stop();
    await sts?.close();
    if (directory !== undefined) await rm(directory, { recursive: true, force: true });
  });

  it('reads with the credentials the STS endpoint hands out for the token file', async () => {
    sts.issue(credentials(FIRST_KEY, 'first', HOUR_MS));
    const source = new S3ByteSource({ endpoint: proxy.endpoint, baseDelayMs: 5 });
    const seenBefore = proxy.requests.length;
    try {
      const [stat] = await source.list(url);
      expect(stat).toMatchObject({ location: url, size: data.byteLength });
      if (stat === undefined) return;
      const bytes = await source.readRange(stat, 1000, 30_000);
      expect(Buffer.from(bytes).equals(data.subarray(1000, 31_000))).toBe(true);
    } finally {
      await source.close();
    }
    expect(sts.calls).toEqual([
      expect.objectContaining({ webIdentityToken: token, roleArn: ROLE_ARN, issuedAccessKeyId: FIRST_KEY }),
    ]);
    const s3Requests = proxy.requests.slice(seenBefore);
    expect(s3Requests.map((request) => request.method)).toEqual(['HEAD', 'GET']);
    for (const request of s3Requests) {
      expect(signingKeyId(request)).toBe(FIRST_KEY);
      expect(request.headers['x-amz-security-token']).toBe('first-session');
    }
  });

  it('calls the STS endpoint again when the credentials expire, and signs later requests with the new ones', async () => {
    sts.calls.length = 0;
    // The SDK treats credentials expiring within 5 minutes as due and refreshes them; these expire
    // in 1 s, so they are also past their expiry by the time the range is read.
    const firstExpiresInMs = 1000;
    sts.issue(credentials(FIRST_KEY, 'first', firstExpiresInMs), credentials(SECOND_KEY, 'second', HOUR_MS));
    const source = new S3ByteSource({ endpoint: proxy.endpoint, baseDelayMs: 5 });
    const seenBefore = proxy.requests.length;
    try {
      const [stat] = await source.list(url);
      if (stat === undefined) throw new Error(`no object at ${url}`);
      await new Promise((resolve) => setTimeout(resolve, firstExpiresInMs + 500));
      const first = await source.readRange(stat, 0, 4096);
      const second = await source.readRange(stat, 4096, 4096);
      expect(Buffer.from(first).equals(data.subarray(0, 4096))).toBe(true);
      expect(Buffer.from(second).equals(data.subarray(4096, 8192))).toBe(true);
    } finally {
      await source.close();
    }
    // Twice, each time with the token file's content; the second credentials last an hour, so no third call.
    expect(sts.calls.map((call) => [call.webIdentityToken, call.issuedAccessKeyId])).toEqual([
      [token, FIRST_KEY],
      [token, SECOND_KEY],
    ]);
    const [head, ...gets] = proxy.requests.slice(seenBefore);
    expect(head?.method).toBe('HEAD');
    expect(head === undefined ? undefined : signingKeyId(head)).toBe(FIRST_KEY);
    expect(
      gets.map((request) => [request.method, signingKeyId(request), request.headers['x-amz-security-token']]),
    ).toEqual([
      ['GET', SECOND_KEY, 'second-session'],
      ['GET', SECOND_KEY, 'second-session'],
    ]);
  });

  it('fails with one line naming the object when s3rver refuses the access key the STS handed out', async () => {
    sts.calls.length = 0;
    sts.issue(credentials('ASIAEDLIRSAUNKNOWN01', 'unknown', HOUR_MS));
    const source = new S3ByteSource({ endpoint: proxy.endpoint, baseDelayMs: 5 });
    try {
      const failure = await source.stat(url).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(Error);
      const message = (failure as Error).message;
      expect(message).toContain(url);
      expect(message).toContain('403');
      expect(message).not.toContain('\n');
      expect(message).not.toContain('unknown-secret');
    } finally {
      await source.close();
    }
    expect(sts.calls).toHaveLength(1);
  });
});
