// What s3rver does not check, checked against a production S3 gateway: Ceph's radosgw (Debian's
// radosgw, ceph-mon, ceph-osd), started by support/radosgw-process.ts as a one-node cluster in a
// temp folder. s3rver ignores If-Match and accepts any secret (README.md); radosgw answers a
// replaced object with 412 and a wrong signature with 403. Where radosgw is not installed the tests
// are skipped with the reason printed, except in CI (CI=true), where a missing radosgw fails them.
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RemoteError } from '../src/remote/remote-error.js';
import { S3ByteSource } from '../src/s3/s3-byte-source.js';
import { openWriter } from '../src/sink/object-sink.js';
import {
  RADOSGW_CREDENTIALS,
  type RadosgwProcess,
  radosgwMissing,
  startRadosgw,
} from './support/radosgw-process.js';

const MIB = 1024 * 1024;
const missing = radosgwMissing();
const inCi = process.env.CI === 'true';
if (missing !== undefined && !inCi) console.warn(`radosgw tests skipped: ${missing}`);

describe.skipIf(missing !== undefined && !inCi)('S3ByteSource against radosgw', () => {
  let rgw: RadosgwProcess;
  let source: S3ByteSource;

  beforeAll(async () => {
    // In CI a missing radosgw fails here, naming what to install.
    rgw = await startRadosgw();
    console.info(
      `${rgw.version}: started in ${(rgw.startMs / 1000).toFixed(1)} s, ` +
        `${Math.round((await rgw.residentBytes()) / MIB)} MiB resident`,
    );
    await rgw.createBucket('edl');
    source = new S3ByteSource({
      endpoint: rgw.endpoint,
      credentials: RADOSGW_CREDENTIALS,
      baseDelayMs: 5,
    });
  }, 180_000);

  afterAll(async () => {
    await source?.close();
    if (rgw !== undefined) {
      console.info(`radosgw: ${Math.round((await rgw.residentBytes()) / MIB)} MiB resident at the end`);
      await rgw.stop();
    }
  }, 60_000);

  it('reads ranges pinned with If-Match, and a replaced object is refused by the server with 412', async () => {
    const original = Buffer.alloc(64 * 1024, 7);
    await rgw.put('edl', 'pinned.bin', original);
    const stat = await source.stat('s3://edl/pinned.bin');
    expect(Buffer.from(await source.readRange(stat, 1000, 5000)).equals(original.subarray(1000, 6000))).toBe(
      true,
    );
    // Replaced after the stat: same size, other bytes, a new ETag.
    await rgw.put('edl', 'pinned.bin', Buffer.alloc(64 * 1024, 8));
    const failure = await source.readRange(stat, 0, 5).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RemoteError);
    expect(failure).toMatchObject({ code: 'CHANGED', url: 's3://edl/pinned.bin' });
    // The server's 412, not only the source's own check of the answer's ETag (all s3rver allows).
    expect((failure as Error).message).toMatch(
      /^CHANGED: bytes 0-4 of s3:\/\/edl\/pinned\.bin: .*412 PreconditionFailed/,
    );
  });

  it('checks SigV4: a wrong secret gives one clear line naming the object and 403, without the secret', async () => {
    await rgw.put('edl', 'signed.bin', Buffer.from('signed'));
    const wrong = new S3ByteSource({
      endpoint: rgw.endpoint,
      credentials: { accessKeyId: RADOSGW_CREDENTIALS.accessKeyId, secretAccessKey: 'not-the-secret-value' },
      baseDelayMs: 5,
    });
    const failure = await wrong.stat('s3://edl/signed.bin').catch((error: unknown) => error);
    await wrong.close();
    expect(failure).toMatchObject({ code: 'ACCESS_DENIED', status: 403 });
    const message = (failure as Error).message;
    expect(message).toMatch(/^ACCESS_DENIED: s3:\/\/edl\/signed\.bin: stat failed: 403/);
    expect(message).not.toContain('\n');
    expect(message).not.toContain('not-the-secret-value');
    // The right secret reads it.
    const stat = await source.stat('s3://edl/signed.bin');
    expect(Buffer.from(await source.readRange(stat, 0, stat.size)).toString()).toBe('signed');
  });

  it('an aborted multipart upload is gone: no object and no upload left to list', async () => {
    const sink = await openWriter('s3://edl/aborted/data.rio', {
      partSize: 5 * MIB,
      s3: { endpoint: rgw.endpoint, credentials: RADOSGW_CREDENTIALS },
    });
    await sink.write(Buffer.alloc(6 * MIB, 1));
    // radosgw implements AbortMultipartUpload (s3rver answers 405): the abort succeeds.
    await sink.abort();
    await expect(source.stat('s3://edl/aborted/data.rio')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const uploads = await rgw.admin.send(new ListMultipartUploadsCommand({ Bucket: 'edl' }));
    expect(uploads.Uploads ?? []).toEqual([]);
  });
});
