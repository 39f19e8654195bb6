import path from 'node:path';
import { parseArgs } from 'node:util';
import type { JsonObject } from '@edl/data';
import { isBackendName } from '@edl/worker';
import { UsageError } from '../command.js';

/** Options shared by `edl train | evaluate | predict | worker`, parsed and checked. */
export interface JobOptions {
  readonly modelDef: string;
  readonly trainingData?: string;
  readonly validationData?: string;
  readonly predictionData?: string;
  readonly evaluationSteps: number;
  readonly numWorkers: number;
  readonly minibatchSize: number;
  readonly numMinibatchesPerTask: number;
  readonly numEpochs: number;
  readonly gradsToWait: number;
  readonly checkpointDir?: string;
  readonly checkpointSteps: number;
  readonly modelCheckpoint?: string;
  readonly dataReader?: string;
  readonly dataReaderParams: JsonObject;
  readonly backend: string;
  readonly getModelSteps: number;
  readonly prefetch: number;
  readonly output?: string;
  readonly metricsFile?: string;
  readonly stats: boolean;
  readonly shuffle: boolean;
  readonly seed: number;
  readonly maxRestarts: number;
  readonly leaseMs: number;
  /** Train on NaN or infinite losses and gradients instead of failing the job (issue 12). */
  readonly allowNonFinite: boolean;
}

const OPTION_SPEC = {
  'model-def': { type: 'string' },
  'training-data': { type: 'string' },
  'validation-data': { type: 'string' },
  'prediction-data': { type: 'string' },
  'evaluation-steps': { type: 'string' },
  'num-workers': { type: 'string' },
  'minibatch-size': { type: 'string' },
  'num-minibatches-per-task': { type: 'string' },
  'num-epochs': { type: 'string' },
  'grads-to-wait': { type: 'string' },
  'checkpoint-dir': { type: 'string' },
  'checkpoint-steps': { type: 'string' },
  'model-checkpoint': { type: 'string' },
  'data-reader': { type: 'string' },
  'data-reader-params': { type: 'string' },
  backend: { type: 'string' },
  'get-model-steps': { type: 'string' },
  prefetch: { type: 'string' },
  output: { type: 'string' },
  'metrics-file': { type: 'string' },
  stats: { type: 'boolean' },
  'allow-non-finite': { type: 'boolean' },
  shuffle: { type: 'boolean' },
  seed: { type: 'string' },
  'max-restarts': { type: 'string' },
  'lease-ms': { type: 'string' },
} as const;

/** Help text of the options, shared by the commands' usages. */
export const JOB_OPTIONS_HELP = `Data:
  --training-data ORIGIN        RecordIO file or directory, .csv/.tsv file, postgres:// URL
  --validation-data ORIGIN      data for evaluation (training: evaluate during training)
  --prediction-data ORIGIN      data to predict on (edl predict)
  --data-reader TYPE            recordio | text | table | <module>[#export] (default: from ORIGIN)
  --data-reader-params JSON     reader options, e.g. '{"header":true}' or '{"table":"census"}'
Job:
  --num-workers N               local worker processes (default 1)
  --minibatch-size N            records per minibatch (default 64)
  --num-minibatches-per-task N  minibatches per task (default 8)
  --num-epochs N                training epochs (default 1)
  --evaluation-steps N          evaluate every N model versions (default 0: at the end)
  --grads-to-wait N             gradients averaged per model update (default 1)
  --checkpoint-dir DIR          checkpoints of the job; a job resumes from the newest one
  --checkpoint-steps N          checkpoint every N model versions (default 0: at the end)
  --model-checkpoint PATH       start from this checkpoint's model (evaluate, predict)
  --shuffle, --seed N           shuffle task order per epoch, with a seed
  --max-restarts N              restarts per crashed worker before the job fails (default 3)
  --lease-ms N                  a silent worker loses its tasks after N ms (default 30000)
  --allow-non-finite            train on NaN / infinite losses and gradients (default: a
                                non-finite step fails the job, as Keras's TerminateOnNaN)
Worker:
  --backend NAME                auto | webgpu | tensorflow | wasm | cpu (default auto)
  --get-model-steps N           pull the model every N steps (default 1)
  --prefetch N                  minibatches prepared ahead of compute (default 2; 0 = serialized)
Output:
  --output FILE                 predictions as JSON lines (edl predict; default predictions.jsonl)
  --metrics-file FILE           evaluation metrics as JSON lines
  --stats                       print the timers as JSON after the table`;

function integer(values: Record<string, unknown>, name: string, fallback: number, min: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) {
    throw new UsageError(`Expected an integer >= ${min} for --${name} but received '${String(raw)}'`);
  }
  return n;
}

/** Parses the job options; throws UsageError on anything unknown or malformed. */
export function parseJobOptions(argv: string[]): JobOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options: OPTION_SPEC, allowPositionals: false, strict: true }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const str = (name: string) => values[name] as string | undefined;
  const modelDef = str('model-def');
  if (modelDef === undefined)
    throw new UsageError('--model-def is required (a .ts/.js file or a zoo model name)');
  const backend = str('backend') ?? 'auto';
  if (backend !== 'auto' && !isBackendName(backend)) {
    throw new UsageError(
      `Expected auto, webgpu, tensorflow, wasm or cpu for --backend but received '${backend}'`,
    );
  }
  let dataReaderParams: JsonObject = {};
  const rawParams = str('data-reader-params');
  if (rawParams !== undefined) {
    try {
      dataReaderParams = JSON.parse(rawParams) as JsonObject;
    } catch (error) {
      throw new UsageError(
        `Expected JSON for --data-reader-params but received '${rawParams}': ${(error as Error).message}`,
      );
    }
    if (
      dataReaderParams === null ||
      typeof dataReaderParams !== 'object' ||
      Array.isArray(dataReaderParams)
    ) {
      throw new UsageError(`Expected a JSON object for --data-reader-params but received '${rawParams}'`);
    }
  }
  const optional = (name: string, key: string) =>
    str(name) === undefined ? {} : { [key]: str(name) as string };
  return {
    modelDef,
    ...optional('training-data', 'trainingData'),
    ...optional('validation-data', 'validationData'),
    ...optional('prediction-data', 'predictionData'),
    ...optional('checkpoint-dir', 'checkpointDir'),
    ...optional('model-checkpoint', 'modelCheckpoint'),
    ...optional('data-reader', 'dataReader'),
    ...optional('output', 'output'),
    ...optional('metrics-file', 'metricsFile'),
    evaluationSteps: integer(values, 'evaluation-steps', 0, 0),
    numWorkers: integer(values, 'num-workers', 1, 1),
    minibatchSize: integer(values, 'minibatch-size', 64, 1),
    numMinibatchesPerTask: integer(values, 'num-minibatches-per-task', 8, 1),
    numEpochs: integer(values, 'num-epochs', 1, 1),
    gradsToWait: integer(values, 'grads-to-wait', 1, 1),
    checkpointSteps: integer(values, 'checkpoint-steps', 0, 0),
    dataReaderParams,
    backend,
    getModelSteps: integer(values, 'get-model-steps', 1, 1),
    prefetch: integer(values, 'prefetch', 2, 0),
    stats: values.stats === true,
    shuffle: values.shuffle === true,
    seed: integer(values, 'seed', 0, 0),
    maxRestarts: integer(values, 'max-restarts', 3, 0),
    leaseMs: integer(values, 'lease-ms', 30_000, 100),
    allowNonFinite: values['allow-non-finite'] === true,
  };
}

/** The command line that gives a worker process the same options. */
export function workerArgs(options: JobOptions, modelDefPath: string, statsDir: string): string[] {
  const args = ['--model-def', modelDefPath, '--stats-dir', statsDir];
  const add = (flag: string, value: string | number | undefined) => {
    if (value !== undefined) args.push(flag, String(value));
  };
  add('--training-data', options.trainingData);
  add('--validation-data', options.validationData);
  add('--prediction-data', options.predictionData);
  add('--data-reader', options.dataReader);
  if (Object.keys(options.dataReaderParams).length > 0)
    add('--data-reader-params', JSON.stringify(options.dataReaderParams));
  add('--minibatch-size', options.minibatchSize);
  add('--backend', options.backend);
  add('--get-model-steps', options.getModelSteps);
  add('--prefetch', options.prefetch);
  if (options.allowNonFinite) args.push('--allow-non-finite');
  if (options.checkpointDir !== undefined) add('--export-dir', path.resolve(options.checkpointDir));
  // Evaluation and prediction start from a checkpoint; so do the batch-norm statistics saved beside it.
  const checkpoint = options.modelCheckpoint ?? options.checkpointDir;
  if (checkpoint !== undefined) add('--model-checkpoint', path.resolve(checkpoint));
  return args;
}
