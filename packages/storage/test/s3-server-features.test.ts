import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type S3rverProcess, startS3rver } from './support/s3rver-process.js';

// What the test S3 server (npm's s3rver) really serves, checked before the S3 source relies on it.
// test/README.md records these findings with the version; a change here means updating it.
describe('s3rver features', () => {
  let s3: S3rverProcess;
  const data = Buffer.from('0123456789abcdefghij');

  beforeAll(async () => {
    s3 = await startS3rver();
    await s3.createBucket('features');
    for (const key of ['p/a', 'p/b', 'p/c', 'p/d', 'p/e']) await s3.put('features', key, data);
  });
  afterAll(() => s3.stop());

  it('is the version the README names', () => {
    expect(s3.version).toBe('3.7.1');
  });

  it('serves Range with 206 and Content-Range', async () => {
    const out = await s3.admin.send(
      new GetObjectCommand({ Bucket: 'features', Key: 'p/a', Range: 'bytes=3-7' }),
    );
    expect(out.$metadata.httpStatusCode).toBe(206);
    expect(out.ContentRange).toBe('bytes 3-7/20');
    expect(await out.Body?.transformToString()).toBe('34567');
  });

  it('paginates ListObjectsV2 with MaxKeys and continuation tokens', async () => {
    const keys: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await s3.admin.send(
        new ListObjectsV2Command({ Bucket: 'features', Prefix: 'p/', MaxKeys: 2, ContinuationToken: token }),
      );
      pages++;
      keys.push(...(page.Contents ?? []).map((entry) => entry.Key ?? ''));
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    expect(pages).toBe(3);
    expect(keys).toEqual(['p/a', 'p/b', 'p/c', 'p/d', 'p/e']);
  });

  it('ignores If-Match: a wrong ETag still gets the bytes (no 412)', async () => {
    const out = await s3.admin.send(
      new GetObjectCommand({ Bucket: 'features', Key: 'p/a', Range: 'bytes=0-1', IfMatch: '"not-the-etag"' }),
    );
    expect(out.$metadata.httpStatusCode).toBe(206);
    await out.Body?.transformToString();
  });

  it('checks the access key id but not the SigV4 signature (any secret is accepted)', async () => {
    const client = (accessKeyId: string, secretAccessKey: string) =>
      new S3Client({
        endpoint: s3.endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        maxAttempts: 1,
        credentials: { accessKeyId, secretAccessKey },
      });
    const wrongSecret = client('S3RVER', 'not-the-secret');
    const head = await wrongSecret.send(new HeadObjectCommand({ Bucket: 'features', Key: 'p/a' }));
    expect(head.ContentLength).toBe(20);
    const unknownKey = client('NO-SUCH-KEY-ID', 'S3RVER');
    await expect(
      unknownKey.send(new HeadObjectCommand({ Bucket: 'features', Key: 'p/a' })),
    ).rejects.toMatchObject({
      $metadata: { httpStatusCode: 403 },
    });
    wrongSecret.destroy();
    unknownKey.destroy();
  });

  it('serves multipart upload', async () => {
    const part1 = Buffer.alloc(5 * 1024 * 1024, 1);
    const part2 = Buffer.from('tail');
    const { UploadId } = await s3.admin.send(
      new CreateMultipartUploadCommand({ Bucket: 'features', Key: 'mp' }),
    );
    const etags: string[] = [];
    for (const [index, body] of [part1, part2].entries()) {
      const part = await s3.admin.send(
        new UploadPartCommand({ Bucket: 'features', Key: 'mp', UploadId, PartNumber: index + 1, Body: body }),
      );
      etags.push(part.ETag ?? '');
    }
    await s3.admin.send(
      new CompleteMultipartUploadCommand({
        Bucket: 'features',
        Key: 'mp',
        UploadId,
        MultipartUpload: { Parts: etags.map((ETag, index) => ({ ETag, PartNumber: index + 1 })) },
      }),
    );
    const out = await s3.admin.send(new GetObjectCommand({ Bucket: 'features', Key: 'mp' }));
    const bytes = Buffer.from((await out.Body?.transformToByteArray()) ?? []);
    expect(bytes.equals(Buffer.concat([part1, part2]))).toBe(true);
  });
});
