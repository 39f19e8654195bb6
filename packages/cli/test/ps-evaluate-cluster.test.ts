/**
 * Evaluation jobs of `edl master` and `edl k8s submit` of a model trained with `edl train --num-ps 2`
 * (issue 25), as `edl evaluate` runs them (ps-evaluate.test.ts): every shard, real `edl ps`
 * processes, restores the checkpoint's shard parts before any worker pulls (as many shards as
 * wrote them, or --num-ps re-sharding them), locally or from S3 (a real s3rver process), so the
 * metrics are the training job's final evaluation. On the fake Kubernetes API server the shard
 * pods carry the restore arguments, and one killed mid-job comes back restored, with the same
 * metrics. Needs `pnpm build`.
 */

import { existsSync, writeFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findCheckpoint, writeCheckpoint } from '@edl/master';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../master/test/helpers.js';
import { kubeConfigFor, startFakeCluster } from '../../master/test/kubernetes/fixtures/fake-cluster.js';
import { LOOPBACK_MASTER_POD_OPTIONS } from './helpers/loopback-master-pod.js';
import {
  CLICK_MASTER_OPTIONS,
  clickWorkerCommand,
  type Evaluation,
  expectShardsRestoredFromParts,
  expectTrainedMetrics,
  MODEL_DEF,
  type TrainedClickCheckpoint,
  trainedClickCheckpoint,
  uploadShardParts,
} from './helpers/ps-job.js';
import { EDL_BIN, type EdlRun, runEdl } from './helpers/run-edl.js';
import { startBucketS3rver } from './helpers/s3rver-env.js';

let dir: string;
let valid: string;
let trained: TrainedClickCheckpoint;

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  dir = await mkdtemp(path.join(tmpdir(), 'edl-ps-evaluate-cluster-'));
  valid = path.join(dir, 'valid.tfrecord');
  trained = await trainedClickCheckpoint(dir);
}, 300_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A checkpoint in its own directory: the directory and the checkpoint's file. */
interface CheckpointCopy {
  readonly dir: string;
  readonly file: string;
}

let unusableCopies: Promise<{ dense: CheckpointCopy; partsMissing: CheckpointCopy }> | undefined;

/**
 * Checkpoints an evaluation job refuses: the trained one as a job without --num-ps writes it (no
 * shard parts), and the trained one copied without its parts.
 */
function unusable(): Promise<{ dense: CheckpointCopy; partsMissing: CheckpointCopy }> {
  unusableCopies ??= (async () => {
    const found = await findCheckpoint(trained.checkpoint.path);
    if (found === undefined) throw new Error('no checkpoint');
    const { parameterServers: _, ...withoutParts } = found.checkpoint;
    const denseDir = path.join(dir, 'dense');
    const dense = { dir: denseDir, file: await writeCheckpoint(denseDir, withoutParts) };
    const partsMissing = path.join(dir, 'parts-missing');
    const file = path.join(partsMissing, path.basename(trained.checkpoint.path));
    await mkdir(partsMissing);
    await cp(trained.checkpoint.path, file);
    return { dense, partsMissing: { dir: partsMissing, file } };
  })();
  return unusableCopies;
}

const noPartsMessage = (file: string, what: string) =>
  `Checkpoint ${file} (model version ${trained.checkpoint.version}) has no parameter-server shard parts, so ${what} cannot be restored: its job ran without --num-ps`;
const partsMissingMessage = (file: string) =>
  `Checkpoint ${file} (model version ${trained.checkpoint.version}) was written by 2 parameter-server shards, but its shard parts cannot be used`;

/** The JSON objects of a process's lines, also those `edl master` prefixes with a shard's name. */
function eventsOf(lines: readonly string[]): Record<string, unknown>[] {
  return lines.flatMap((line) => {
    const json = /^(?:\[ps-\d+\] |[\w-]+: )?(\{.*\})$/.exec(line)?.[1];
    return json === undefined ? [] : [JSON.parse(json) as Record<string, unknown>];
  });
}

/** The last line of a command's stdout, its result. */
function resultOf(run: EdlRun): { state: string; evaluations: Evaluation[] } & Record<string, unknown> {
  return JSON.parse(run.stdout.trim().split('\n').at(-1) as string);
}

describe('edl master: an evaluation job of a model trained with --num-ps 2', () => {
  /** `edl master` evaluating with 2 real `edl worker` processes and the job's optimizer. */
  async function masterJob(options: readonly string[], env?: NodeJS.ProcessEnv) {
    const run = await runEdl(
      [
        'master',
        '--validation-data',
        valid,
        ...CLICK_MASTER_OPTIONS,
        '--num-workers',
        '2',
        '--worker-command',
        clickWorkerCommand('--validation-data', valid),
        ...options,
      ],
      undefined,
      undefined,
      env,
    );
    return { ...run, events: eventsOf(run.stderr.split('\n')) };
  }

  it("restores the checkpoint's 2 shards by default, before any worker pulls, with the training job's metrics", async () => {
    const run = await masterJob(['--model-checkpoint', trained.checkpointDir]);
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    expect(run.stdout).toMatch(/^EDL_PS_ADDRESSES=127\.0\.0\.1:\d+,127\.0\.0\.1:\d+$/m);
    expectShardsRestoredFromParts(run.events, 2, trained.checkpoint);
    expect(run.stderr).toContain(
      `parameter-server shards started from the shard parts of ${trained.checkpoint.path}`,
    );
    expectTrainedMetrics(resultOf(run).evaluations, trained.trained);
  }, 120_000);

  it("--checkpoint-dir alone evaluates the directory's newest checkpoint, re-sharded onto --num-ps 3, writing nothing there", async () => {
    const before = (await readdir(trained.checkpointDir)).sort();
    const run = await masterJob(['--checkpoint-dir', trained.checkpointDir, '--num-ps', '3']);
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    expectShardsRestoredFromParts(run.events, 3, trained.checkpoint);
    expectTrainedMetrics(resultOf(run).evaluations, trained.trained);
    expect((await readdir(trained.checkpointDir)).sort()).toEqual(before);
  }, 120_000);

  it('refuses, as edl evaluate does, a checkpoint without shard parts for --num-ps and one whose parts are missing', async () => {
    const { dense, partsMissing } = await unusable();
    const noParts = await masterJob(['--model-checkpoint', dense.dir, '--num-ps', '2']);
    expect(noParts.code).toBe(1);
    expect(noParts.stderr).toContain(noPartsMessage(dense.file, 'its embedding rows'));
    const missing = await masterJob(['--model-checkpoint', partsMissing.dir]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(partsMissingMessage(partsMissing.file));
    // A corrupt checkpoint: its own error, not one about the option's path.
    const corrupt = path.join(dir, 'corrupt', path.basename(trained.checkpoint.path));
    await mkdir(path.dirname(corrupt));
    await writeFile(corrupt, 'not a checkpoint');
    const unreadable = await masterJob(['--model-checkpoint', corrupt]);
    expect(unreadable.code).toBe(1);
    expect(unreadable.stderr).toContain(`edl master: Checkpoint ${corrupt} is corrupt: bad magic`);
    // No shard and no worker started from nothing.
    for (const run of [noParts, missing, unreadable])
      expect(run.events.filter((e) => e.event === 'listening')).toEqual([]);
  }, 60_000);

  it('restores the shard parts beside a checkpoint in S3', async () => {
    const s3 = await startBucketS3rver();
    try {
      const prefix = 's3://bucket/committed/';
      await uploadShardParts(trained.checkpointDir, trained.checkpoint.version, prefix);
      const found = await findCheckpoint(trained.checkpoint.path);
      if (found === undefined) throw new Error('no checkpoint');
      const manifest = await writeCheckpoint(prefix, found.checkpoint);
      const run = await masterJob(['--model-checkpoint', prefix], s3.env);
      expect(run.code, run.stderr.slice(-3000)).toBe(0);
      expectShardsRestoredFromParts(run.events, 2, trained.checkpoint);
      expect(run.stderr).toContain(`parameter-server shards started from the shard parts of ${manifest}`);
      expectTrainedMetrics(resultOf(run).evaluations, trained.trained);
    } finally {
      await s3.stop();
    }
  }, 120_000);
});

describe('edl k8s submit: an evaluation job of a model trained with --num-ps 2 on the fake API server', () => {
  it('the master pod refuses the same checkpoints with the same words, before it makes any pod', async () => {
    const { dense, partsMissing } = await unusable();
    const masterPod = (checkpoint: string) =>
      runEdl(
        [
          'k8s',
          'master',
          '--job-name',
          'refused',
          '--image',
          'edl:test',
          '--',
          '--model-def',
          MODEL_DEF,
          '--validation-data',
          valid,
          '--model-checkpoint',
          checkpoint,
          '--backend',
          'cpu',
        ],
        undefined,
        undefined,
        // No cluster to reach: the checks come first.
        { ...process.env, EDL_JOB_TOKEN: 'refused', EDL_NAMESPACE: 'ml', KUBECONFIG: '/nonexistent' },
      );
    const noParts = await masterPod(dense.dir);
    expect(noParts.code).toBe(1);
    expect(noParts.stderr).toContain(
      noPartsMessage(dense.file, "the model's distributed embedding tables ('item')"),
    );
    const missing = await masterPod(partsMissing.dir);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(partsMissingMessage(partsMissing.file));
  }, 60_000);

  it('runs shard pods restored from the checkpoint; a killed one comes back restored, with unchanged metrics', async () => {
    const token = 'evaluation-job-token';
    const kubeconfig = (url: string, name: string) => {
      const file = path.join(dir, `kubeconfig-${name}.json`);
      writeFileSync(file, kubeConfigFor(url).exportConfig());
      return file;
    };
    const job = [
      '--image',
      'edl:test',
      '--job-name',
      'ctr-eval',
      '--namespace',
      'ml',
      '--num-workers',
      '2',
      '--edl-command',
      JSON.stringify([process.execPath, EDL_BIN]),
    ];
    const evaluation = [
      '--model-def',
      MODEL_DEF,
      '--validation-data',
      valid,
      '--model-checkpoint',
      trained.checkpointDir,
      // The job's own checkpoints: an evaluation job's shards still never roll back to them.
      '--checkpoint-dir',
      path.join(dir, 'evaluation-checkpoints'),
      '--backend',
      'cpu',
      '--minibatch-size',
      '20',
      '--num-minibatches-per-task',
      '3',
    ];
    // What `edl k8s submit` creates: the master pod's command line is the job.
    const submitted = await startFakeCluster({ mode: 'idle', startDelayMs: 5 }, {}, 'ml');
    let masterArgs: string[];
    try {
      const run = await runEdl(
        ['k8s', 'submit', ...job, '--kubeconfig', kubeconfig(submitted.server.url, 'submit'), ...evaluation],
        undefined,
        undefined,
        { ...process.env, EDL_JOB_TOKEN: token },
      );
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const pod = submitted.server.get('pods', 'ml', 'ctr-eval-master');
      masterArgs = pod?.spec.containers[0].args as string[];
      expect(masterArgs.slice(masterArgs.indexOf('--') + 1)).toEqual(evaluation);
    } finally {
      await submitted.close();
    }

    // The master pod run as the cluster would run it, reaching the API server through a
    // kubeconfig and its pods (processes of this host) at loopback addresses.
    const output: string[] = [];
    const cluster = await startFakeCluster(
      { mode: 'process', startDelayMs: 20, onOutput: (pod, line) => output.push(`${pod}: ${line}`) },
      {},
      'ml',
    );
    try {
      cluster.server.create('secrets', 'ml', { metadata: { name: 'ctr-eval-token' }, stringData: { token } });
      // The pods' command lines as created (the job's end deletes the pods).
      const podArgs = new Map<string, string[]>();
      cluster.server.onPodChange((type, pod) => {
        if (type === 'ADDED') podArgs.set(pod.metadata.name, pod.spec.containers[0].args);
      });
      const ports = [await freePort(), await freePort()];
      const separator = masterArgs.indexOf('--');
      let killed = false;
      const timer = setInterval(() => {
        // A worker set up its embedding tables: its first task pulls rows next.
        if (
          killed ||
          !output.some(
            (l) => l.startsWith('ctr-eval-worker') && /"(embedding\.steps|dense\.on_shards)"/.test(l),
          )
        )
          return;
        if (!cluster.kubelet.running().includes('ctr-eval-ps-1-0')) return;
        killed = true;
        cluster.kubelet.kill('ctr-eval-ps-1-0', 'sigkill');
      }, 20);
      const run = await runEdl(
        [
          ...masterArgs.slice(masterArgs.indexOf('k8s'), separator),
          '--kubeconfig',
          kubeconfig(cluster.server.url, 'run'),
          ...LOOPBACK_MASTER_POD_OPTIONS,
          ...ports.flatMap((port) => ['--ps-address', `127.0.0.1:${port}`]),
          ...masterArgs.slice(separator),
        ],
        undefined,
        undefined,
        { ...process.env, EDL_JOB_TOKEN: token, EDL_NAMESPACE: 'ml' },
      ).finally(() => clearInterval(timer));
      expect(killed, output.slice(-20).join('\n')).toBe(true);
      expect(run.code, run.stderr.slice(-3000)).toBe(0);
      const result = resultOf(run);
      expect(result.state).toBe('succeeded');
      expect(result.parameterServers).toEqual([
        { index: 0, podName: 'ctr-eval-ps-0-0', relaunches: 0 },
        { index: 1, podName: 'ctr-eval-ps-1-1', relaunches: 1 },
      ]);
      // Every shard pod, the relaunched one too, restores the evaluated checkpoint's cut.
      for (const name of ['ctr-eval-ps-0-0', 'ctr-eval-ps-1-0', 'ctr-eval-ps-1-1']) {
        const args = podArgs.get(name) ?? [];
        expect(args.slice(args.indexOf('--restore-dir')), name).toEqual([
          '--restore-dir',
          trained.checkpointDir,
          '--restore-version',
          String(trained.checkpoint.version),
        ]);
      }
      const shardEvents = (pod: string) => eventsOf(output.filter((l) => l.startsWith(`${pod}: `)));
      const restored = shardEvents('ctr-eval-ps-1-1').find((e) => e.event === 'restored');
      const first = shardEvents('ctr-eval-ps-1-0').find((e) => e.event === 'restored');
      expect(restored?.version).toBe(trained.checkpoint.version);
      expect(restored?.tables).toEqual(first?.tables);
      // The shards served reads only, and nothing rolled them back (which would empty them).
      expect(run.stderr).not.toContain('job rolled back');
      expect(run.stderr).toContain(
        `parameter-server shards started from the shard parts of ${trained.checkpoint.path}`,
      );
      expectTrainedMetrics(result.evaluations, trained.trained);
    } finally {
      await cluster.close();
    }
  }, 240_000);
});
