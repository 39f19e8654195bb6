import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { configureS3 } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../storage/test/support/s3rver-process.js';
import { listCheckpoints, loadLatestCheckpoint } from '../src/checkpoint.js';
import { buildDist, repoRoot, sleep, waitFor } from './helpers.js';

const masterProcess = fileURLToPath(new URL('./fixtures/master-process.mjs', import.meta.url));
const checkpointDir = mkdtempSync(join(tmpdir(), 'edl-master-restart-'));
const RECORDS = 600;
const config = {
  shards: [
    { name: 'a', start: 0, count: 400 },
    { name: 'b', start: 400, count: 200 },
  ],
  records: RECORDS,
  epochs: 2,
  checkpointDir,
  checkpointSteps: 5,
  stepDelayMs: 15,
};

beforeAll(
  () => buildDist(['-b packages/proto packages/storage', '-p packages/master/tsconfig.json']),
  180_000,
);
afterAll(() => rmSync(checkpointDir, { recursive: true, force: true }));

function runMaster(
  settings: typeof config,
  env: NodeJS.ProcessEnv = process.env,
): {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  exited: Promise<number | null>;
} {
  const child = spawn(process.execPath, [masterProcess, JSON.stringify(settings)], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => stdout.push(l));
  createInterface({ input: child.stderr! }).on('line', (l) => stderr.push(l));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, stdout, stderr, exited };
}

/**
 * Runs the job, SIGKILLs its master once a checkpoint at version 20 exists in `settings.checkpointDir`,
 * and runs it again: the second master must resume from that checkpoint and finish the job with
 * every record trained once per epoch.
 */
async function killAndResume(settings: typeof config, env?: NodeJS.ProcessEnv): Promise<void> {
  const first = runMaster(settings, env);
  // Let it get well into the first epoch (several checkpoints), then kill it without warning.
  await waitFor(
    () => first.stdout.some((l) => l.startsWith('LISTENING')),
    'the first master to listen',
    30_000,
  );
  let versions: number[] = [];
  let listing = false;
  await waitFor(
    () => {
      // One listing at a time: an object store is asked no faster than it answers.
      if (!listing) {
        listing = true;
        listCheckpoints(settings.checkpointDir)
          .then((v) => {
            versions = v;
          })
          // A listing that fails is tried again at the next poll.
          .catch(() => undefined)
          .finally(() => {
            listing = false;
          });
      }
      return (versions.at(-1) ?? 0) >= 20;
    },
    'a checkpoint at version 20',
    60_000,
  );
  first.child.kill('SIGKILL');
  await first.exited;
  const saved = await loadLatestCheckpoint(settings.checkpointDir);
  const savedVersion = saved!.checkpoint.store.version;
  expect(savedVersion).toBeGreaterThanOrEqual(20);
  expect(savedVersion).toBeLessThan((RECORDS * settings.epochs) / 10);
  // Workers of the dead master notice and leave.
  await sleep(500);

  const second = runMaster(settings, env);
  const code = await second.exited;
  expect(code).toBe(0);
  expect(
    second.stderr.some(
      (l) => l.includes('resumed from checkpoint') && l.includes(`"modelVersion":${savedVersion}`),
    ),
  ).toBe(true);
  const result = JSON.parse(second.stdout.find((l) => l.startsWith('RESULT '))!.slice(7));
  expect(result.state).toBe('succeeded');
  // One version per 10-record minibatch, across both runs: no range was lost or applied twice.
  expect(result.modelVersion).toBe((RECORDS * settings.epochs) / 10);
  expect([result.countsMin, result.countsMax]).toEqual([settings.epochs, settings.epochs]);
}

describe('master restart', () => {
  it('resumes a job from its checkpoint after the master is SIGKILLed, training each record once per epoch', async () => {
    await killAndResume(config);
  }, 180_000);
});

describe('master restart from S3', () => {
  let s3: S3rverProcess;
  beforeAll(async () => {
    s3 = await startS3rver();
    await s3.createBucket('ckpt');
    configureS3({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS });
  });
  afterAll(async () => {
    configureS3({});
    await s3?.stop();
  });

  it('resumes from the checkpoint in S3 after a SIGKILL, with no local directory', async () => {
    // The master process finds the store as a pod would: the standard AWS variables.
    const env = {
      ...process.env,
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
    };
    await killAndResume({ ...config, checkpointDir: 's3://ckpt/restart/' }, env);
  }, 180_000);
});
