import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';

/** What a test does to an S3 API server by itself, beside the code under test. */
export interface S3Admin {
  /** A client for the test's own uploads (path-style, no retries, no flexible checksums). */
  readonly admin: S3Client;
  /** Creates `bucket`. */
  createBucket(bucket: string): Promise<void>;
  /** Uploads `data` as `bucket/key` and returns its ETag. */
  put(bucket: string, key: string, data: Uint8Array): Promise<string>;
}

/** An {@link S3Admin} for the server at `endpoint`, signing with `credentials`. */
export function s3Admin(
  endpoint: string,
  credentials: { readonly accessKeyId: string; readonly secretAccessKey: string },
): S3Admin {
  // The SDK's own switch for its Node-version warning, as S3ByteSource sets it for users.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const admin = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials,
    maxAttempts: 1,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return {
    admin,
    async createBucket(bucket) {
      await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    },
    async put(bucket, key, data) {
      const out = await admin.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: data }));
      return out.ETag ?? '';
    },
  };
}
