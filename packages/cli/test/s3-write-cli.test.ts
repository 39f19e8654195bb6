/**
 * `edl recordio write s3://...` and the S3 options, through the built `edl` against a real s3rver
 * process, as users run them.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateCensusCsv } from '@edl/model-zoo';
import { S3ByteSource } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../storage/test/support/s3rver-process.js';
import { parseJobOptions, workerArgs } from '../src/job/job-options.js';

const edl = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'edl-cli-s3-'));

/** Runs the built `edl` with `input` on standard input and the s3rver account in its environment. */
function run(
  args: string[],
  input: string,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [edl, ...args], {
      env: {
        ...process.env,
        AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
        AWS_REGION: 'us-east-1',
        EDL_DEBUG: '',
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data) => {
      stdout += String(data);
    });
    child.stderr.on('data', (data) => {
      stderr += String(data);
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(input);
  });
}

let s3: S3rverProcess;
/** Reads what the commands wrote, straight from s3rver. */
let source: S3ByteSource;

beforeAll(async () => {
  if (!existsSync(edl)) throw new Error(`${edl} is missing: run \`pnpm exec tsc -b packages/cli\` first`);
  s3 = await startS3rver();
  await s3.createBucket('out');
  await s3.createBucket('jobs');
  source = new S3ByteSource({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS });
});
afterAll(async () => {
  await source?.close();
  await s3?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('edl recordio write s3://', () => {
  it('uploads the same bytes as a local write, in parts when large, with --s3-endpoint', async () => {
    // About 10 MiB of random records: more than one 8 MiB part.
    const input = `${Array.from({ length: 5000 }, () => randomBytes(2048).toString('base64')).join('\n')}\n`;
    const local = join(scratch, 'local.rio');
    const args = ['--compressor', 'none', '--format', 'base64'];
    expect((await run(['recordio', 'write', local, ...args], input)).status).toBe(0);
    const uploaded = await run(
      ['recordio', 'write', 's3://out/train/part-0.rio', ...args, '--s3-endpoint', s3.endpoint],
      input,
    );
    expect(uploaded.stderr).toMatch(
      /^wrote 5000 records in \d+ none chunks \(\d+ bytes\) to s3:\/\/out\/train\/part-0\.rio\n$/,
    );
    expect(uploaded.status).toBe(0);
    // Over one 8 MiB part: the multipart path (counted request by request in storage's object-sink.test.ts).
    const expected = readFileSync(local);
    expect(expected.byteLength).toBeGreaterThan(8 * 1024 * 1024);
    const stat = await source.stat('s3://out/train/part-0.rio');
    expect(Buffer.from(await source.readRange(stat, 0, stat.size)).equals(expected)).toBe(true);
    // Its sidecar index too, as `edl recordio index` writes it for the local file.
    expect((await run(['recordio', 'index', local], '')).status).toBe(0);
    const sidecar = await source.stat('s3://out/train/part-0.rio.idx');
    const uploadedIndex = Buffer.from(await source.readRange(sidecar, 0, sidecar.size));
    expect(uploadedIndex.equals(readFileSync(`${local}.idx`))).toBe(true);
  });

  it('fails with one line naming the object when the bucket does not exist', async () => {
    const failed = await run(
      ['recordio', 'write', 's3://no-such-bucket/a.rio', '--s3-endpoint', s3.endpoint],
      'one\ntwo\n',
    );
    expect(failed.status).toBe(1);
    expect(failed.stderr.trim().split('\n')).toHaveLength(1);
    expect(failed.stderr).toMatch(
      /^edl recordio: NOT_FOUND: s3:\/\/no-such-bucket\/a\.rio: put failed: 404 NoSuchBucket/,
    );
  });

  it('rejects an --s3-endpoint that is not an http(s) URL, before reading anything', async () => {
    const bad = await run(['recordio', 'write', 's3://out/x.rio', '--s3-endpoint', 'ftp://host/'], 'x\n');
    expect(bad.status).toBe(2);
    expect(bad.stderr.split('\n')[0]).toBe(
      "edl recordio: Expected an http:// or https:// URL without credentials for --s3-endpoint but received 'ftp://host/'",
    );
    expect(await source.list('s3://out/x.rio').catch((error: { code?: string }) => error.code)).toBe(
      'NOT_FOUND',
    );
  });
});

describe('edl train | evaluate | export with --checkpoint-dir s3://', () => {
  const census = ['--model-def', 'census', '--data-reader-params', '{"header":true}', '--backend', 'cpu'];

  it('checkpoints and exports to S3, then evaluates and exports from there, with no local directory', async () => {
    const train = await generateCensusCsv({ file: join(scratch, 'train.csv'), rows: 400, seed: 1 });
    const endpoint = ['--s3-endpoint', s3.endpoint];
    const trained = await run(
      [
        'train',
        ...census,
        '--training-data',
        train,
        '--minibatch-size',
        '50',
        '--checkpoint-dir',
        's3://jobs/census',
        ...endpoint,
      ],
      '',
    );
    expect(trained.status, trained.stderr).toBe(0);
    expect(trained.stdout).toContain(
      'model exported in the TensorFlow.js format: s3://jobs/census/model/model.json',
    );
    const names = (await source.list('s3://jobs/census/')).map((object) => object.location);
    expect(names).toContain('s3://jobs/census/checkpoint-000000000008.manifest.json');
    expect((await source.list('s3://jobs/census/model/')).map((object) => object.location)).toEqual([
      's3://jobs/census/model/model.json',
      's3://jobs/census/model/weights.bin',
    ]);

    const evaluated = await run(
      [
        'evaluate',
        ...census,
        '--validation-data',
        train,
        '--model-checkpoint',
        's3://jobs/census/',
        ...endpoint,
      ],
      '',
    );
    expect(evaluated.status, evaluated.stderr).toBe(0);
    expect(evaluated.stdout).toMatch(/evaluation round 1 \(model v8, 400 records\)/);

    const exported = await run(
      [
        'export',
        '--model-def',
        'census',
        '--model-checkpoint',
        's3://jobs/census/',
        '--output',
        's3://jobs/exported/',
        ...endpoint,
      ],
      '',
    );
    expect(exported.status, exported.stderr).toBe(0);
    expect(exported.stdout).toBe(
      'exported model v8 of s3://jobs/census/checkpoint-000000000008.manifest.json to s3://jobs/exported/model.json and s3://jobs/exported/weights.bin\n',
    );
    const model = await source.stat('s3://jobs/exported/model.json');
    const json = JSON.parse(Buffer.from(await source.readRange(model, 0, model.size)).toString('utf8'));
    expect(json.weightsManifest[0].paths).toEqual(['./weights.bin']);
  }, 120_000);
});

describe('S3 options of the job commands', () => {
  it('pass on to the workers, and keep s3:// checkpoint directories as URLs', () => {
    const options = parseJobOptions([
      '--model-def',
      'mnist',
      '--training-data',
      's3://data/train/',
      '--checkpoint-dir',
      's3://data/ckpt/',
      '--s3-endpoint',
      'http://127.0.0.1:9000',
      '--s3-anonymous',
    ]);
    expect(options).toMatchObject({ s3Endpoint: 'http://127.0.0.1:9000', s3Anonymous: true });
    const args = workerArgs(options, '/m.js', '/stats');
    expect(args.join(' ')).toContain('--training-data s3://data/train/');
    expect(args.join(' ')).toContain('--s3-endpoint http://127.0.0.1:9000 --s3-anonymous');
    expect(args).not.toContain('--export-dir');
    expect(args).not.toContain('--model-checkpoint');
    const local = workerArgs(
      parseJobOptions(['--model-def', 'm', '--checkpoint-dir', 'ckpt']),
      '/m.js',
      '/s',
    );
    expect(local.slice(local.indexOf('--export-dir'), local.indexOf('--export-dir') + 2)).toEqual([
      '--export-dir',
      join(process.cwd(), 'ckpt'),
    ]);
  });
});
