/**
 * `edl train --data-ram-budget ... --stats` end to end: real master and worker processes, a model
 * whose datasetFn uses `'auto'` stages. Each worker tunes within its share of the host's budget and
 * its stats (in the job's --stats JSON) carry the tuner's budgets, settings and rates.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { DataPipelineReport } from '@edl/proto';
import { describe, expect, it } from 'vitest';

const edl = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));
const autoModel = fileURLToPath(new URL('./fixtures/auto-prefetch-model.ts', import.meta.url));

describe('edl train --data-ram-budget with --stats', () => {
  it("gives each worker its share and reports each worker's tuned stages", () => {
    if (!existsSync(edl)) throw new Error(`${edl} is missing: run 'pnpm build' first`);
    const run = spawnSync(
      process.execPath,
      [
        edl,
        'train',
        '--model-def',
        autoModel,
        '--training-data',
        'synthetic:64',
        '--backend',
        'cpu',
        '--num-workers',
        '2',
        '--minibatch-size',
        '16',
        '--num-minibatches-per-task',
        '4',
        '--data-ram-budget',
        '1GiB',
        '--stats',
      ],
      { encoding: 'utf8', timeout: 170_000 },
    );
    expect(run.status, run.stderr).toBe(0);
    const line = run.stdout.split('\n').find((l) => l.startsWith('{"state"'));
    expect(line, run.stdout).toBeDefined();
    const summary = JSON.parse(line as string) as {
      workers: Array<{
        workerId: string;
        records: Record<string, number>;
        dataPipeline?: DataPipelineReport;
      }>;
    };
    expect(summary.workers).toHaveLength(2);
    for (const worker of summary.workers) {
      if ((worker.records.training ?? 0) === 0) continue;
      expect(worker.dataPipeline?.ramBudgetBytes).toBe(2 ** 29);
      const labels = worker.dataPipeline?.stages.map((s) => s.label) ?? [];
      expect(labels).toContain('Prefetch');
      expect(labels).toContain('ParallelMap(spin)');
      const map = worker.dataPipeline?.stages.find((s) => s.label === 'ParallelMap(spin)');
      expect(map?.parallelism).toBeGreaterThanOrEqual(1);
      expect(map?.elements).toBeGreaterThan(0);
    }
    expect(summary.workers.some((w) => w.dataPipeline !== undefined)).toBe(true);
  }, 180_000);
});
