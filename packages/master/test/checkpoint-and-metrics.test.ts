import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accuracyPartial, aucPartial, meanPartial, msePartial } from '@edl/proto';
import { afterAll, describe, expect, it } from 'vitest';
import { listCheckpoints, loadLatestCheckpoint, readCheckpoint, writeCheckpoint } from '../src/checkpoint.js';
import { auc, MetricsAccumulator } from '../src/evaluation-metrics.js';
import { EvaluationService } from '../src/evaluation-service.js';
import { silentLogger } from '../src/logger.js';
import { Master } from '../src/master.js';
import { checkpointAt } from './checkpoint-fixture.js';

const dir = mkdtempSync(join(tmpdir(), 'edl-ckpt-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('checkpoints', () => {
  it('round-trip weights, slots, version and task state, keeping the newest `keep` files', async () => {
    for (const v of [1, 2, 3, 4]) await writeCheckpoint(dir, checkpointAt(v), 2);
    expect(await listCheckpoints(dir)).toEqual([3, 4]);
    expect(readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    const loaded = await loadLatestCheckpoint(dir);
    const expected = checkpointAt(4);
    expect(loaded?.checkpoint.store.version).toBe(4);
    expect(Array.from(loaded!.checkpoint.store.variables[0]!.values)).toEqual(
      Array.from(expected.store.variables[0]!.values),
    );
    expect(Array.from(loaded!.checkpoint.store.slots.get('dense/kernel')!.get('momentum')!)).toEqual(
      Array.from(expected.store.slots.get('dense/kernel')!.get('momentum')!),
    );
    expect(loaded?.checkpoint.taskManager).toEqual(JSON.parse(JSON.stringify(expected.taskManager)));
  });

  it('detects a damaged file and falls back to the previous checkpoint', async () => {
    const path = join(dir, 'checkpoint-000000000004.edlckpt');
    const bytes = readFileSync(path);
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0xff;
    writeFileSync(path, bytes);
    await expect(readCheckpoint(path)).rejects.toThrow(
      `Checkpoint ${path} is corrupt: payload CRC-32 mismatch`,
    );
    const skipped: string[] = [];
    const loaded = await loadLatestCheckpoint(dir, (e) => skipped.push(e.code));
    expect(loaded?.checkpoint.store.version).toBe(3);
    expect(skipped).toEqual(['CORRUPT']);
  });
});

describe('a failed job in a checkpoint file', () => {
  it('resumes as the same failure, code included, and ends at once', async () => {
    const ckptDir = mkdtempSync(join(tmpdir(), 'edl-ckpt-failed-'));
    try {
      const options = {
        jobType: 'training' as const,
        trainingShards: [{ name: 's', start: 0, count: 40 }],
        minibatchSize: 4,
        numMinibatchesPerTask: 2,
        checkpointDir: ckptDir,
        logger: silentLogger,
      };
      const master = await Master.create(options);
      master.reportVariables('w1', [{ name: 'w', shape: [2], values: new Float32Array([1, 2]) }]);
      const task = master.getTask('w1').task;
      expect(task).toBeDefined();
      master.reportTaskResult('w1', task!.id, 0, 'NON_FINITE: the loss is NaN');
      expect((await master.done).error?.code).toBe('NON_FINITE');
      await master.checkpoint();

      const resumed = await Master.create(options);
      const result = await resumed.done;
      expect(result.state).toBe('failed');
      expect(result.error).toMatchObject({
        code: 'NON_FINITE',
        message: `Task ${task!.id} failed on worker w1: the loss is NaN`,
      });
      expect(resumed.status()).toMatchObject({ state: 'failed', phase: 'failed' });
      expect(resumed.getTask('w2')).toEqual({
        jobFinished: true,
        jobError: `Task ${task!.id} failed on worker w1: the loss is NaN`,
      });
    } finally {
      rmSync(ckptDir, { recursive: true, force: true });
    }
  });
});

describe('evaluation metrics', () => {
  it('aggregates accuracy, MSE and a mean from per-task partial sums', () => {
    const acc = new MetricsAccumulator();
    acc.add(
      { accuracy: accuracyPartial([1, 0], [1, 1]), mse: msePartial([0, 0], [1, 3]), loss: meanPartial(3, 2) },
      2,
    );
    acc.add(
      { accuracy: accuracyPartial([1, 1], [1, 1]), mse: msePartial([0], [2]), loss: meanPartial(1, 2) },
      2,
    );
    expect(acc.values()).toEqual({ accuracy: 0.75, mse: 14 / 3, loss: 1 });
    expect(acc.records).toBe(4);
  });

  it('computes AUC from summed histograms like the exact pairwise AUC', () => {
    const labels = [1, 1, 0, 1, 0, 0, 1, 0];
    const scores = [0.91, 0.62, 0.35, 0.48, 0.77, 0.12, 0.84, 0.05];
    let pairs = 0;
    let wins = 0;
    for (let i = 0; i < labels.length; i++) {
      for (let j = 0; j < labels.length; j++) {
        if (labels[i] === 1 && labels[j] === 0) {
          pairs++;
          wins += scores[i]! > scores[j]! ? 1 : scores[i] === scores[j] ? 0.5 : 0;
        }
      }
    }
    const acc = new MetricsAccumulator();
    acc.add({ auc: aucPartial(labels.slice(0, 4), scores.slice(0, 4)) }, 4);
    acc.add({ auc: aucPartial(labels.slice(4), scores.slice(4)) }, 4);
    expect(acc.values().auc).toBeCloseTo(wins / pairs, 10);
    expect(auc({ positives: [1, 0], negatives: [0, 0] })).toBeNaN();
  });

  it('refuses partials whose kind changes within a round', () => {
    const acc = new MetricsAccumulator();
    acc.add({ m: meanPartial(1, 1) }, 1);
    expect(() => acc.add({ m: aucPartial([1], [0.5]) }, 1)).toThrow(
      new RangeError("Expected a mean partial for metric 'm' but received auc"),
    );
  });

  it('writes one JSON line per finished round to the metrics file', async () => {
    const file = join(dir, 'metrics', 'eval.jsonl');
    const seen: number[] = [];
    const service = new EvaluationService(file, (r) => seen.push(r.modelVersion));
    service.startRound(1, 10);
    service.add(1, { accuracy: accuracyPartial([1, 2], [1, 2]) }, 2);
    service.completeRound(1);
    service.startRound(2, 20);
    service.add(2, { accuracy: accuracyPartial([1, 2], [0, 2]) }, 2);
    service.completeRound(2);
    await service.flush();
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.round, l.modelVersion, l.records, l.metrics.accuracy])).toEqual([
      [1, 10, 2, 1],
      [2, 20, 2, 0.5],
    ]);
    expect(seen).toEqual([10, 20]);
  });
});
