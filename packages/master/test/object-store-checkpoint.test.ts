import { configureS3, deleteObject, putObject, S3ByteSource } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../storage/test/support/s3rver-process.js';
import {
  findCheckpoint,
  listCheckpoints,
  loadLatestCheckpoint,
  readCheckpoint,
  writeCheckpoint,
} from '../src/checkpoint.js';
import { silentLogger } from '../src/logger.js';
import { Master } from '../src/master.js';
import { checkpointAt } from './checkpoint-fixture.js';

describe('checkpoints in S3 (s3rver)', () => {
  let s3: S3rverProcess;
  let listing: S3ByteSource;
  const keys = async (prefix: string) =>
    (await listing.list(prefix)).map((object) => object.location.slice(prefix.length)).sort();

  beforeAll(async () => {
    s3 = await startS3rver();
    await s3.createBucket('ckpt');
    configureS3({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS });
    listing = new S3ByteSource({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS });
  });
  afterAll(async () => {
    configureS3({});
    await listing?.close();
    await s3?.stop();
  });

  it('commits each checkpoint by a manifest written last, restores the newest, keeps the newest `keep`', async () => {
    const dir = 's3://ckpt/job-a';
    expect(await listCheckpoints(dir)).toEqual([]);
    expect(await loadLatestCheckpoint(dir)).toBeUndefined();
    for (const version of [1, 2, 3, 4]) {
      const written = await writeCheckpoint(dir, checkpointAt(version), 2);
      expect(written).toBe(`s3://ckpt/job-a/checkpoint-${String(version).padStart(12, '0')}.manifest.json`);
    }
    expect(await listCheckpoints(dir)).toEqual([3, 4]);
    const names = await keys('s3://ckpt/job-a/');
    expect(names.filter((name) => name.endsWith('.manifest.json'))).toEqual([
      'checkpoint-000000000003.manifest.json',
      'checkpoint-000000000004.manifest.json',
    ]);
    expect(names.filter((name) => name.endsWith('.edlckpt'))).toHaveLength(2);
    expect(
      names.filter((name) => /^checkpoint-00000000000[34]-[0-9a-f]{16}\.edlckpt$/.test(name)),
    ).toHaveLength(2);

    const loaded = await loadLatestCheckpoint(dir);
    const expected = checkpointAt(4);
    expect(loaded?.path).toBe('s3://ckpt/job-a/checkpoint-000000000004.manifest.json');
    // Weights, optimizer slots and step, version and task state, as they were written.
    expect(loaded?.checkpoint).toEqual({
      ...expected,
      taskManager: JSON.parse(JSON.stringify(expected.taskManager)),
    });
    expect((await findCheckpoint('s3://ckpt/job-a/'))?.checkpoint.store.version).toBe(4);
    expect(
      (await readCheckpoint('s3://ckpt/job-a/checkpoint-000000000003.manifest.json')).store.version,
    ).toBe(3);
  });

  it('never takes a checkpoint without its manifest, and removes it with the old ones', async () => {
    const dir = 's3://ckpt/job-b/';
    await writeCheckpoint(dir, checkpointAt(2), 2);
    // A master killed between the checkpoint object and its manifest: a complete object, no manifest.
    const complete = await findCheckpoint('s3://ckpt/job-b/checkpoint-000000000002.manifest.json');
    expect(complete?.checkpoint.store.version).toBe(2);
    const halfWritten = 's3://ckpt/job-b/checkpoint-000000000005-00112233aabbccdd.edlckpt';
    const written = (await listing.list(dir)).find((object) => object.location.endsWith('.edlckpt'));
    const bytes = await listing.readRange(written!, 0, written!.size);
    await putObject(halfWritten, bytes);
    expect(await listCheckpoints(dir)).toEqual([2]);
    expect((await loadLatestCheckpoint(dir))?.checkpoint.store.version).toBe(2);

    // Below the newest committed version, an object no manifest names is garbage.
    await writeCheckpoint(dir, checkpointAt(6), 2);
    expect(await keys(dir)).not.toContain('checkpoint-000000000005-00112233aabbccdd.edlckpt');
    expect(await listCheckpoints(dir)).toEqual([2, 6]);
  });

  it('skips a manifest whose checkpoint object is gone, and one that does not match its object', async () => {
    const dir = 's3://ckpt/job-c/';
    await writeCheckpoint(dir, checkpointAt(1), 3);
    await writeCheckpoint(dir, checkpointAt(2), 3);
    await writeCheckpoint(dir, checkpointAt(3), 3);
    const objectOf = async (version: number) =>
      (await keys(dir)).find((name) => name.startsWith(`checkpoint-00000000000${version}-`)) as string;
    const [second, third] = [await objectOf(2), await objectOf(3)];
    await deleteObject(`${dir}${third}`);
    await putObject(`${dir}${second}`, Buffer.from('EDLCKPT1 replaced by something else'));
    const skipped: string[] = [];
    const loaded = await loadLatestCheckpoint(dir, (error) => skipped.push(`${error.code} ${error.path}`));
    expect(loaded?.checkpoint.store.version).toBe(1);
    expect(skipped).toEqual([`READ_FAILED ${dir}${third}`, `CORRUPT ${dir}${second}`]);
  });

  it('a master resumes from the newest checkpoint in S3, with no local directory', async () => {
    const options = {
      jobType: 'training' as const,
      trainingShards: [{ name: 's', start: 0, count: 40 }],
      minibatchSize: 4,
      numMinibatchesPerTask: 2,
      checkpointDir: 's3://ckpt/job-d/',
      logger: silentLogger,
    };
    const first = await Master.create(options);
    first.reportVariables('w1', [{ name: 'w', shape: [2], values: new Float32Array([1, 2]) }]);
    const task = first.getTask('w1').task;
    expect(task).toBeDefined();
    expect(await first.checkpoint()).toBe('s3://ckpt/job-d/checkpoint-000000000000.manifest.json');
    const resumed = await Master.create(options);
    expect(Array.from(resumed.store.getModel().variables[0]?.values ?? [])).toEqual([1, 2]);
    expect(resumed.status().recordsTotal).toBe(first.status().recordsTotal);
  });
});
