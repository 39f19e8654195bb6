import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { generateCifar10Like } from '@edl/model-zoo';
import type { Command } from '../command.js';
import { UsageError } from '../command.js';
import { parseJobOptions } from '../job/job-options.js';
import { runJob } from '../job/run-job.js';

const usage = `Usage: edl demo [--records N] [--num-workers N] [--num-epochs N] [--backend NAME] [--keep DIR] [--stats]

Generates a synthetic CIFAR-10-like RecordIO data set (32x32x3 uint8 images with a label; nothing
is downloaded) into a temporary directory, trains the small CIFAR-10 CNN (conv, batch norm,
pooling) on it end to end with local workers, evaluates it on a held-out set, and prints ElasticDL's
timing table.

Options:
  --records N       training records (default 4096; 1024 more are generated for validation)
  --num-workers N   worker processes (default 2)
  --num-epochs N    epochs (default 2)
  --minibatch-size N  (default 64)
  --backend NAME    auto | webgpu | tensorflow | wasm | cpu (default auto)
  --model-def SPEC  model to train (default cifar10-small; cifar10 is the full, slower CNN)
  --keep DIR        generate into DIR and keep it (default: a temporary directory, removed)
  --stats           print the timers as JSON too`;

/** `edl demo`: synthetic CIFAR-10-like data, the CNN trained with 2 workers, the timing table. */
export const command: Command = {
  name: 'demo',
  usage,
  async run(argv, io) {
    let values: Record<string, string | boolean | undefined>;
    try {
      ({ values } = parseArgs({
        args: argv,
        strict: true,
        options: {
          records: { type: 'string' },
          'num-workers': { type: 'string' },
          'num-epochs': { type: 'string' },
          'minibatch-size': { type: 'string' },
          backend: { type: 'string' },
          'model-def': { type: 'string' },
          keep: { type: 'string' },
          stats: { type: 'boolean' },
        },
      }));
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const records = Number(values.records ?? 4096);
    if (!Number.isSafeInteger(records) || records < 1) {
      throw new UsageError(
        `Expected a positive integer for --records but received '${String(values.records)}'`,
      );
    }
    const keep = values.keep as string | undefined;
    const dir = keep ? path.resolve(keep) : await mkdtemp(path.join(tmpdir(), 'edl-demo-'));
    try {
      io.stderr.write(`generating ${records} + ${Math.ceil(records / 4)} CIFAR-10-like records in ${dir}\n`);
      const train = await generateCifar10Like({ dir: path.join(dir, 'train'), records, files: 4, seed: 1 });
      const valid = await generateCifar10Like({
        dir: path.join(dir, 'valid'),
        records: Math.ceil(records / 4),
        files: 1,
        seed: 2,
      });
      const options = parseJobOptions([
        '--model-def',
        (values['model-def'] as string | undefined) ?? 'cifar10-small',
        '--training-data',
        path.dirname(train.files[0]?.path ?? dir),
        '--validation-data',
        path.dirname(valid.files[0]?.path ?? dir),
        '--num-workers',
        String(values['num-workers'] ?? 2),
        '--num-epochs',
        String(values['num-epochs'] ?? 2),
        '--minibatch-size',
        String(values['minibatch-size'] ?? 64),
        '--num-minibatches-per-task',
        '8',
        '--backend',
        String(values.backend ?? 'auto'),
        '--checkpoint-dir',
        path.join(dir, 'checkpoints'),
        ...(values.stats ? ['--stats'] : []),
      ]);
      return (await runJob('train', options, io)).exitCode;
    } finally {
      if (!keep) await rm(dir, { recursive: true, force: true });
    }
  },
};
