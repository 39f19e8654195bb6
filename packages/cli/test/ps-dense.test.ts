/**
 * `edl train --num-ps 2` with the dense variables on the shards (`--dense-on shards`, the default):
 * the master arbitrates the steps (versions, staleness, sync batches) and receives no dense tensor;
 * every worker pushes each shard its dense parts with its rows and pulls the model from the shards.
 * Needs `pnpm build`.
 */
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Checkpoint, findCheckpoint } from '@edl/master';
import { DenseShardsClient } from '@edl/proto';
import { decodeDensePart, placeDenseVariables, readShardMarkers, shardCheckpointDirName } from '@edl/ps';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clickDataDir,
  type Run,
  restoredShards,
  shardKillerAfterCheckpoint,
  succeededOnce,
  trainClicks,
} from './helpers/ps-job.js';
import { EDL_BIN } from './helpers/run-edl.js';

const DENSE_MODEL_DEF = fileURLToPath(new URL('./fixtures/dense-click-model.ts', import.meta.url));

let dir: string;

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  dir = await clickDataDir('edl-ps-dense-');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function train(
  extra: readonly string[],
  checkpointDir = path.join(dir, `ckpt-${Math.random().toString(36).slice(2)}`),
) {
  return trainClicks({ dataDir: dir, checkpointDir, extra, env: process.env });
}

interface DenseAtStop {
  readonly version: number;
  readonly variables: string[];
  readonly pushes: number;
}

/** Each shard's dense variables when it stopped (its `stopped` line), by shard index. */
function denseAtStop(run: Run): Map<number, DenseAtStop> {
  const out = new Map<number, DenseAtStop>();
  for (const e of run.events)
    if (e.event === 'stopped' && e.dense !== undefined)
      out.set(e.shardIndex as number, e.dense as DenseAtStop);
  return out;
}

/**
 * Checks what every dense-on-shards job must end with: both shards hold dense variables, none on
 * both, at the master's final version, and each took one push per step the master accepted (each
 * accepted step's dense gradient reached every shard exactly once).
 */
function expectDenseOnBothShards(run: Run): DenseAtStop[] {
  const summary = succeededOnce(run);
  const shards = denseAtStop(run);
  expect([...shards.keys()].sort()).toEqual([0, 1]);
  const parts = [shards.get(0), shards.get(1)] as DenseAtStop[];
  for (const part of parts) {
    expect(part.variables.length).toBeGreaterThan(0);
    expect(part.pushes).toBe(summary.gradients.applied);
  }
  expect(parts[0]?.variables.filter((v) => parts[1]?.variables.includes(v))).toEqual([]);
  // Placement by size keeps every shard's version with the others' (elasticdl#1500).
  expect(parts[0]?.version).toBe(parts[1]?.version);
  expect(parts[0]?.version).toBeGreaterThan(0);
  return parts;
}

/** The newest checkpoint of `checkpointDir`: the one a job writes as it ends. */
async function finalCheckpoint(checkpointDir: string): Promise<Checkpoint> {
  const found = await findCheckpoint(checkpointDir);
  if (found === undefined) throw new Error(`no checkpoint in ${checkpointDir}`);
  return found.checkpoint;
}

/** The dense variables of a job's final checkpoint, assembled from its shard files (or its own). */
async function finalVariables(checkpointDir: string): Promise<Map<string, Float32Array>> {
  const checkpoint = await finalCheckpoint(checkpointDir);
  const version = checkpoint.store.version;
  const out = new Map<string, Float32Array>();
  const onShards =
    checkpoint.parameterServers !== undefined &&
    readShardMarkers(checkpointDir, version).some((m) => m.dense);
  if (!onShards) {
    for (const v of checkpoint.store.variables) out.set(v.name, v.values);
    return out;
  }
  for (const marker of readShardMarkers(checkpointDir, version)) {
    if (marker.dense === undefined) continue;
    const file = path.join(checkpointDir, shardCheckpointDirName(version), marker.dense.file);
    for (const v of decodeDensePart(new Uint8Array(await readFile(file)), file).variables)
      out.set(v.name, v.values);
  }
  return out;
}

describe('edl train --num-ps 2 --dense-on shards', () => {
  it('async: the dense layers train on both shards beside the embedding rows, each step once', async () => {
    const run = await train(['--num-ps', '2']);
    expectDenseOnBothShards(run);
    const summary = succeededOnce(run);
    expect(summary.evaluations.at(-1)?.metrics.auc).toBeGreaterThan(0.75);
    expect(run.stderr).toContain('dense.on_shards');
  }, 180_000);

  it('sync (gradsToWait 2): a dense-only model averages two gradients per update on the shards', async () => {
    const run = await train([
      '--num-ps',
      '2',
      '--model-def',
      DENSE_MODEL_DEF,
      '--mode',
      'sync',
      '--grads-to-wait',
      '2',
    ]);
    const [part] = expectDenseOnBothShards(run);
    const summary = succeededOnce(run);
    // Two gradients per version: the shards' version is the master's, half the steps applied.
    expect(part?.version).toBeLessThanOrEqual(Math.ceil(summary.gradients.applied / 2));
    expect(part?.version).toBeGreaterThanOrEqual(Math.floor(summary.gradients.applied / 2) - 2);
  }, 180_000);

  it('places the dense variables by size, as placeDenseVariables does, and checkpoints them', async () => {
    const checkpointDir = path.join(dir, 'ckpt-placement');
    const run = await train(['--num-ps', '2', '--model-def', DENSE_MODEL_DEF], checkpointDir);
    const parts = expectDenseOnBothShards(run);
    const variables = await finalVariables(checkpointDir);
    const placement = placeDenseVariables(new Map([...variables].map(([name, v]) => [name, v.length])), 2);
    parts.forEach((part, shard) => {
      expect([...part.variables].sort()).toEqual(
        [...placement.shardOf]
          .filter(([, s]) => s === shard)
          .map(([name]) => name)
          .sort(),
      );
    });
  }, 180_000);

  it('restores the dense parts of a checkpoint onto 2 and 3 shards, placed again by size', async () => {
    const checkpointDir = path.join(dir, 'ckpt-reshard');
    succeededOnce(await train(['--num-ps', '2', '--model-def', DENSE_MODEL_DEF], checkpointDir));
    const saved = await finalVariables(checkpointDir);
    const { version } = (await finalCheckpoint(checkpointDir)).store;
    for (const numShards of [2, 3]) {
      const shards = await restoredShards(numShards, checkpointDir, version);
      try {
        const dense = new DenseShardsClient(shards.client);
        const pulled = await dense.pull(version, 1000, true);
        expect(pulled.versions).toEqual(new Array(numShards).fill(version));
        expect(new Map(pulled.variables.map((v) => [v.name, v.values]))).toEqual(saved);
        const placement = placeDenseVariables(
          new Map([...saved].map(([name, v]) => [name, v.length])),
          numShards,
        );
        for (let shard = 0; shard < numShards; shard++) {
          const answer = await shards.client.callShard('pullDenseVariables', shard, {
            $typeName: 'edl.v1.PullDenseVariablesRequest',
            minVersion: 0n,
            waitMs: 0,
          });
          expect(answer.variables.map((t) => t.name).sort()).toEqual(
            [...placement.shardOf]
              .filter(([, s]) => s === shard)
              .map(([name]) => name)
              .sort(),
          );
        }
      } finally {
        shards.client.close();
        shards.stop();
      }
    }
  }, 240_000);

  it('rolls the dense parts back with the rows when a shard is SIGKILLed after a checkpoint', async () => {
    const killer = shardKillerAfterCheckpoint(1);
    const run = await trainClicks({
      dataDir: dir,
      checkpointDir: path.join(dir, 'ckpt-kill'),
      extra: ['--num-ps', '2', '--checkpoint-steps', '20'],
      env: process.env,
      onEvent: killer.onEvent,
    });
    expect(killer.killed()).toBeDefined();
    succeededOnce(run);
    const restored = run.events.find((e) => typeof e.msg === 'string' && e.msg.startsWith('job rolled back'));
    expect(restored?.msg).toMatch(
      /job rolled back to checkpoint .+ after parameter-server shard 1 was relaunched/,
    );
    // Both shards continued from the roll-back's version together, and ended at the same one.
    const shards = denseAtStop(run);
    expect([...shards.keys()].sort()).toEqual([0, 1]);
    expect(shards.get(0)?.version).toBe(shards.get(1)?.version);
    expect(shards.get(0)?.version).toBeGreaterThan(restored?.modelVersion as number);
    expect(shards.get(0)?.pushes).toBe(shards.get(1)?.pushes);
  }, 240_000);

  it('one worker, sync: the shards reach the variables the master reaches with the same seed', async () => {
    const common = [
      '--model-def',
      DENSE_MODEL_DEF,
      '--num-workers',
      '1',
      '--mode',
      'sync',
      '--seed',
      '11',
      '--num-ps',
      '2',
    ];
    const onMaster = path.join(dir, 'ckpt-master');
    const onShards = path.join(dir, 'ckpt-shards');
    succeededOnce(await train([...common, '--dense-on', 'master'], onMaster));
    succeededOnce(await train([...common, '--dense-on', 'shards'], onShards));
    const expected = await finalVariables(onMaster);
    const actual = await finalVariables(onShards);
    expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
    // The master of the dense-on-shards job kept the initial values: it never applied a dense gradient.
    const masterHeld = (await finalCheckpoint(onShards)).store.variables;
    expect(masterHeld.some((v) => v.values.some((x, i) => x !== expected.get(v.name)?.[i]))).toBe(true);
    for (const [name, values] of expected) {
      const got = actual.get(name) as Float32Array;
      let worst = 0;
      for (let i = 0; i < values.length; i++)
        worst = Math.max(worst, Math.abs((got[i] as number) - (values[i] as number)));
      expect(worst, name).toBeLessThan(1e-4);
    }
  }, 240_000);
});
