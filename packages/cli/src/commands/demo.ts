import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseCommandLine } from '../args.js';
import type { Command } from '../command.js';
import { BACKEND_CHOICES, parseJobOptions } from '../job/job-options.js';

const usage = `Usage: edl demo [--records N] [--num-workers N] [--num-epochs N] [--backend NAME] [--keep DIR] [--stats]

Generates a synthetic CIFAR-10-like RecordIO data set (32x32x3 uint8 images with a label; nothing
is downloaded) into a temporary directory, trains the small CIFAR-10 CNN (conv, batch norm,
pooling) on it end to end with local workers, evaluates it on a held-out set, and prints the timing
table.

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
    // Every option is checked before any data is generated.
    const { values } = parseCommandLine(argv, {
      records: { type: 'integer', min: 1 },
      'num-workers': { type: 'integer', min: 1 },
      'num-epochs': { type: 'integer', min: 1 },
      'minibatch-size': { type: 'integer', min: 1 },
      backend: { type: 'choice', choices: BACKEND_CHOICES },
      'model-def': { type: 'string' },
      keep: { type: 'string' },
      stats: { type: 'boolean' },
    });
    const records = values.records ?? 4096;
    const keep = values.keep;
    const jobArgs = (dir: string) => [
      '--model-def',
      values['model-def'] ?? 'cifar10-small',
      '--training-data',
      path.join(dir, 'train'),
      '--validation-data',
      path.join(dir, 'valid'),
      '--num-workers',
      String(values['num-workers'] ?? 2),
      '--num-epochs',
      String(values['num-epochs'] ?? 2),
      '--minibatch-size',
      String(values['minibatch-size'] ?? 64),
      '--num-minibatches-per-task',
      '8',
      '--backend',
      values.backend ?? 'auto',
      '--checkpoint-dir',
      path.join(dir, 'checkpoints'),
      ...(values.stats === true ? ['--stats'] : []),
    ];
    parseJobOptions(jobArgs(path.resolve(keep ?? '.')));
    const [{ generateCifar10Like }, { runJob }] = await Promise.all([
      import('@edl/model-zoo'),
      import('../job/run-job.js'),
    ]);
    const dir = keep ? path.resolve(keep) : await mkdtemp(path.join(tmpdir(), 'edl-demo-'));
    try {
      io.stderr.write(`generating ${records} + ${Math.ceil(records / 4)} CIFAR-10-like records in ${dir}\n`);
      await generateCifar10Like({ dir: path.join(dir, 'train'), records, files: 4, seed: 1 });
      await generateCifar10Like({
        dir: path.join(dir, 'valid'),
        records: Math.ceil(records / 4),
        files: 1,
        seed: 2,
      });
      const options = parseJobOptions(jobArgs(dir));
      return (await runJob('train', options, io)).exitCode;
    } finally {
      if (!keep) await rm(dir, { recursive: true, force: true });
    }
  },
};
