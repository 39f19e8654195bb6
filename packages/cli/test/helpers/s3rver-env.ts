import { configureS3 } from '@edl/storage';
import { afterAll, beforeAll } from 'vitest';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../../storage/test/support/s3rver-process.js';

/**
 * The environment of `edl` processes that reach the s3rver at `endpoint`: its account, a region and
 * the endpoint, as the AWS SDK reads them; this process's environment otherwise.
 */
export function s3rverEnv(endpoint: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL_S3: endpoint,
    EDL_DEBUG: '',
  };
}

/** An s3rver with the bucket `bucket`, which `edl` processes reach with {@link BucketS3rver.env}. */
export interface BucketS3rver {
  readonly s3: S3rverProcess;
  readonly env: NodeJS.ProcessEnv;
  /** Stops the s3rver and this process's S3 settings. */
  stop(): Promise<void>;
}

/**
 * Starts an s3rver with the bucket `bucket`, and points this process's @edl/storage at it, so that
 * a test reads and plants objects as the job does.
 */
export async function startBucketS3rver(): Promise<BucketS3rver> {
  const s3 = await startS3rver();
  await s3.createBucket('bucket');
  configureS3({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS, forcePathStyle: true });
  return {
    s3,
    env: s3rverEnv(s3.endpoint),
    stop: async () => {
      configureS3({});
      await s3.stop();
    },
  };
}

/**
 * An s3rver for the enclosing describe block: started before its tests, stopped after them. Call
 * the result from a test for the running s3rver.
 */
export function bucketS3rverForSuite(): () => BucketS3rver {
  let s3: BucketS3rver | undefined;
  beforeAll(async () => {
    s3 = await startBucketS3rver();
  }, 60_000);
  afterAll(async () => {
    await s3?.stop();
  });
  return () => {
    if (s3 === undefined) throw new Error('the suite s3rver is not running: call it from a test');
    return s3;
  };
}
