import type { JsonObject } from '@edl/data';
import { defaultCpuBudget, defaultDataRamBudget } from '@edl/data/autotune';
import type { JobLearningRateDecay, JobType } from '@edl/master';
import type { LogLevel } from '@edl/proto';
import { normalizeLocation, schemeOf } from '@edl/storage';
import {
  choiceValue,
  integerValue,
  jsonObjectValue,
  numberValue,
  type OptionSpecs,
  parseCommandLine,
} from '../args.js';
import { UsageError } from '../command.js';
import { dataRamBudgetValue } from './data-budget.js';
import { S3_OPTION_SPEC, S3_OPTIONS_HELP, type S3Options, s3Args, s3Options } from './s3-options.js';

/**
 * `--backend` values: `auto` and @edl/worker's BACKEND_ORDER, listed here so that checking the
 * options does not load TensorFlow.js (a test keeps the two in step).
 */
export const BACKEND_CHOICES = ['auto', 'webgpu', 'tensorflow', 'wasm', 'cpu'] as const;

/** Options shared by `edl train | evaluate | predict | worker`, parsed and checked. */
export interface JobOptions extends S3Options {
  readonly modelDef: string;
  readonly trainingData?: string;
  readonly validationData?: string;
  readonly predictionData?: string;
  readonly evaluationSteps: number;
  readonly numWorkers: number;
  /** Parameter-server shards for distributed embedding tables (0: none, the default). */
  readonly numPs: number;
  /**
   * Where a job with `--num-ps` holds its dense variables: on the shards, placed by size (the
   * default), or in the master's store.
   */
  readonly denseOn: 'shards' | 'master';
  readonly minibatchSize: number;
  readonly numMinibatchesPerTask: number;
  readonly numEpochs: number;
  readonly gradsToWait: number;
  /** How the master takes gradients (default async: bounded staleness, nothing recomputed). */
  readonly mode: 'sync' | 'async';
  /** Versions a gradient may lag and still be applied (default: from the mode and --num-workers). */
  readonly maxStaleness?: number;
  /** Scale the learning rate of a gradient s versions old by 1/s (async). */
  readonly stalenessModulation: boolean;
  /** Overrides the model definition's optimizer learning rate. */
  readonly learningRate?: number;
  /** `--learning-rate-decay cosine` (with `--learning-rate-decay-steps`). */
  readonly learningRateDecay?: JobLearningRateDecay;
  readonly checkpointDir?: string;
  readonly checkpointSteps: number;
  readonly modelCheckpoint?: string;
  readonly dataReader?: string;
  readonly dataReaderParams: JsonObject;
  readonly backend: string;
  readonly getModelSteps: number;
  /** Workers compute the next step while the master applies this one's gradient (see `edl worker`). */
  readonly pushAhead?: 'on' | 'off';
  /** Workers mirror the master's updates on a replica (see `edl worker --mirror-updates`). */
  readonly mirrorUpdates?: 'on' | 'off';
  readonly prefetch: number;
  /** Bytes the data pipelines of this host's workers may hold together, split evenly between them. */
  readonly dataRamBudget: number;
  readonly output?: string;
  readonly metricsFile?: string;
  readonly stats: boolean;
  readonly shuffle: boolean;
  readonly seed: number;
  readonly maxRestarts: number;
  readonly maxTaskFailures: number;
  readonly leaseMs: number;
  // --- live view, metrics and logs (issue 14) ---
  /** Port of the live view and /metrics (0: a free one). */
  readonly httpPort: number;
  /** Interface of the live view (default 127.0.0.1). */
  readonly httpHost: string;
  /** A token that opens /metrics only. */
  readonly metricsToken?: string;
  readonly logLevel: LogLevel;
  /** Errors and the final summary only. */
  readonly quiet: boolean;
  /** Directory of TensorBoard scalars. */
  readonly tensorboardDir?: string;
  // --- end live view ---
  /** Train on NaN or infinite losses and gradients instead of failing the job (issue 12). */
  readonly allowNonFinite: boolean;
}

/** The job options; numbers stay strings here and are checked (with their defaults) below. */
export const OPTION_SPEC = {
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
  mode: { type: 'string' },
  'max-staleness': { type: 'string' },
  'staleness-modulation': { type: 'boolean' },
  'learning-rate': { type: 'string' },
  'learning-rate-decay': { type: 'string' },
  'learning-rate-decay-steps': { type: 'string' },
  'checkpoint-dir': { type: 'string' },
  'checkpoint-steps': { type: 'string' },
  'model-checkpoint': { type: 'string' },
  'data-reader': { type: 'string' },
  'data-reader-params': { type: 'string' },
  backend: { type: 'string' },
  'get-model-steps': { type: 'string' },
  'push-ahead': { type: 'string' },
  'mirror-updates': { type: 'string' },
  prefetch: { type: 'string' },
  'data-ram-budget': { type: 'string' },
  output: { type: 'string' },
  'metrics-file': { type: 'string' },
  stats: { type: 'boolean' },
  'allow-non-finite': { type: 'boolean' },
  shuffle: { type: 'boolean' },
  seed: { type: 'string' },
  'max-restarts': { type: 'string' },
  'num-ps': { type: 'string' },
  'dense-on': { type: 'string' },
  'lease-ms': { type: 'string' },
  'max-task-failures': { type: 'string' },
  // --- live view, metrics and logs (issue 14) ---
  'http-port': { type: 'string' },
  'http-host': { type: 'string' },
  'metrics-token': { type: 'string' },
  'log-level': { type: 'string' },
  quiet: { type: 'boolean' },
  'tensorboard-dir': { type: 'string' },
  // --- end live view ---
  ...S3_OPTION_SPEC,
} as const satisfies OptionSpecs;

/** Help text of the options, shared by the commands' usages. */
export const JOB_OPTIONS_HELP = `Data:
  --training-data ORIGIN        RecordIO file or directory, .csv/.tsv file, postgres:// URL
  --validation-data ORIGIN      data for evaluation (training: evaluate during training)
  --prediction-data ORIGIN      data to predict on (edl predict)
  --data-reader TYPE            recordio | text | table | <module>[#export] (default: from ORIGIN)
  --data-reader-params JSON     reader options, e.g. '{"header":true}' or '{"table":"census"}'
Job:
  --num-workers N               local worker processes (default 1)
  --num-ps N                    parameter-server shards (edl ps processes) holding the rows of
                                the model's distributed embedding tables (default 0: none;
                                evaluate, predict: as many as wrote the checkpoint's)
  --dense-on shards|master      with --num-ps: the dense variables placed by size on the shards
                                (default), or kept in the master's store; a job resumes only
                                with the --dense-on its checkpoint was written with
  --minibatch-size N            records per minibatch (default 64)
  --num-minibatches-per-task N  minibatches per task (default 8)
  --num-epochs N                training epochs (default 1)
  --evaluation-steps N          evaluate every N model versions (default 0: at the end)
  --grads-to-wait N             gradients averaged per model update (sync mode; default 1)
Parameter store:
  --mode async|sync             async (default): every gradient at most --max-staleness versions
                                old is applied at once (bounded-staleness SGD, as ElasticDL's
                                parameter server), so no worker computes a gradient twice; sync:
                                --grads-to-wait gradients of the current model per update
  --max-staleness N             versions a gradient may lag (default: async max(8, 2 x workers),
                                sync 0); an older one is refused, computed again and counted wasted
  --staleness-modulation        async: learning rate / staleness for stale gradients (ElasticDL's
                                lr_staleness_modulation; default off)
  --learning-rate X             overrides the model definition's optimizer learning rate
  --learning-rate-decay cosine  decays the learning rate to 0 along half a cosine (Keras'
                                CosineDecay) over the job's updates, or over
  --learning-rate-decay-steps N updates (default: the whole job's)
  --checkpoint-dir DIR          checkpoints of the job; a job resumes from the newest one (a local
                                directory, or s3://bucket/prefix/: see docs/master.md)
  --checkpoint-steps N          checkpoint every N model versions (default 0: at the end)
  --model-checkpoint PATH       start from this checkpoint's model (evaluate, predict; without
                                it they take --checkpoint-dir's newest checkpoint)
  --shuffle, --seed N           shuffle task order per epoch, with a seed
  --max-restarts N              restarts per crashed worker before the job fails (default 3)
  --max-task-failures N         failures of one task before the job fails (default 3)
  --lease-ms N                  a silent worker loses its tasks after N ms (default 30000)
  --allow-non-finite            train on NaN / infinite losses and gradients (default: a
                                non-finite step fails the job, as Keras's TerminateOnNaN)
Worker:
  --backend NAME                auto | webgpu | tensorflow | wasm | cpu (default auto)
  --get-model-steps N           pull the model every N steps (default 1)
  --push-ahead on|off           compute the next step while the master applies this one's gradient:
                                the round trip overlaps compute, but each gradient is one own
                                update staler (default: off; sync mode: always off)
  --mirror-updates on|off       workers apply their own gradients to a replica of the master's model
                                and optimizer and compute on, while the master applies the same:
                                one worker then never waits for its answer (default: on)
  --prefetch N                  minibatches prepared ahead of compute (default 2; 0 = serialized)
  --data-ram-budget SIZE        memory the workers' 'auto' data pipeline stages may hold together,
                                e.g. 4GiB or 25% (default: half of this host's memory or of its
                                cgroup limit); each of the --num-workers workers gets an equal share
Output:
  --output FILE                 predictions as JSON lines (edl predict; default predictions.jsonl)
  --metrics-file FILE           evaluation metrics as JSON lines
  --stats                       print the timers as JSON after the table
Live view and logs:
  --http-port N                 port of the live job view, /api/status and /metrics (default 0:
                                a free port); the address printed at start carries the job token
  --http-host HOST              interface of the live view (default 127.0.0.1)
  --metrics-token TOKEN         a second token that opens /metrics only (for Prometheus)
  --log-level LEVEL             debug | info | warn | error | silent (default info)
  --quiet                       errors and the final summary only
  --tensorboard-dir DIR         write TensorBoard scalars (loss, throughput, evaluation) there
${S3_OPTIONS_HELP}`;

/** `--learning-rate-decay` and `--learning-rate-decay-steps`: the steps alone are a usage error. */
function learningRateDecay(values: Record<string, unknown>): { learningRateDecay?: JobLearningRateDecay } {
  const raw = values['learning-rate-decay'] as string | undefined;
  const type =
    raw === undefined ? 'none' : choiceValue(raw, '--learning-rate-decay', ['none', 'cosine'] as const);
  const steps = values['learning-rate-decay-steps'];
  if (type === 'none') {
    if (steps !== undefined)
      throw new UsageError('--learning-rate-decay-steps needs --learning-rate-decay cosine');
    return {};
  }
  return {
    learningRateDecay: {
      type,
      ...(steps === undefined ? {} : { steps: integer(values, 'learning-rate-decay-steps', 1, 1) }),
    },
  };
}

function integer(
  values: Record<string, unknown>,
  name: string,
  fallback: number,
  min: number,
  max?: number,
): number {
  const raw = values[name];
  return raw === undefined ? fallback : integerValue(String(raw), `--${name}`, min, max);
}

/** Parses the job options; throws UsageError on anything unknown or malformed. */
export function parseJobOptions(argv: string[]): JobOptions {
  const { values } = parseCommandLine(argv, OPTION_SPEC);
  const str = (name: keyof typeof OPTION_SPEC) => values[name] as string | undefined;
  const modelDef = str('model-def');
  if (modelDef === undefined)
    throw new UsageError('--model-def is required (a .ts/.js file or a zoo model name)');
  const backend = choiceValue(str('backend') ?? 'auto', '--backend', BACKEND_CHOICES);
  const rawParams = str('data-reader-params');
  const dataReaderParams =
    rawParams === undefined ? {} : (jsonObjectValue(rawParams, '--data-reader-params') as JsonObject);
  const optional = (name: keyof typeof OPTION_SPEC, key: string) =>
    str(name) === undefined ? {} : { [key]: str(name) as string };
  if (str('dense-on') !== undefined && str('num-ps') === undefined)
    throw new UsageError('--dense-on needs --num-ps N: without shards the master holds the dense variables');
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
    numWorkers: integer(values, 'num-workers', 1, 1, 10_000),
    minibatchSize: integer(values, 'minibatch-size', 64, 1),
    numMinibatchesPerTask: integer(values, 'num-minibatches-per-task', 8, 1),
    numEpochs: integer(values, 'num-epochs', 1, 1),
    gradsToWait: integer(values, 'grads-to-wait', 1, 1),
    mode: choiceValue(str('mode') ?? 'async', '--mode', ['async', 'sync'] as const),
    ...(str('max-staleness') === undefined ? {} : { maxStaleness: integer(values, 'max-staleness', 0, 0) }),
    stalenessModulation: values['staleness-modulation'] === true,
    ...(str('learning-rate') === undefined
      ? {}
      : { learningRate: numberValue(str('learning-rate') as string, '--learning-rate', { positive: true }) }),
    ...learningRateDecay(values),
    checkpointSteps: integer(values, 'checkpoint-steps', 0, 0),
    dataReaderParams,
    backend,
    getModelSteps: integer(values, 'get-model-steps', 1, 1),
    ...(str('push-ahead') === undefined
      ? {}
      : { pushAhead: choiceValue(str('push-ahead') as string, '--push-ahead', ['on', 'off'] as const) }),
    ...(str('mirror-updates') === undefined
      ? {}
      : {
          mirrorUpdates: choiceValue(str('mirror-updates') as string, '--mirror-updates', [
            'on',
            'off',
          ] as const),
        }),
    prefetch: integer(values, 'prefetch', 2, 0),
    dataRamBudget:
      str('data-ram-budget') === undefined
        ? defaultDataRamBudget()
        : dataRamBudgetValue(str('data-ram-budget') as string),
    stats: values.stats === true,
    shuffle: values.shuffle === true,
    seed: integer(values, 'seed', 0, 0, 0xffff_ffff),
    maxRestarts: integer(values, 'max-restarts', 3, 0),
    numPs: integer(values, 'num-ps', 0, 0, 1024),
    denseOn: choiceValue(str('dense-on') ?? 'shards', '--dense-on', ['shards', 'master'] as const),
    maxTaskFailures: integer(values, 'max-task-failures', 3, 1),
    leaseMs: integer(values, 'lease-ms', 30_000, 100),
    ...liveViewOptions(values),
    allowNonFinite: values['allow-non-finite'] === true,
    ...s3Options(values),
  };
}

/** The live view and logging options (issue 14). */
function liveViewOptions(
  values: Record<string, string | boolean | undefined>,
): Pick<JobOptions, 'httpPort' | 'httpHost' | 'metricsToken' | 'logLevel' | 'quiet' | 'tensorboardDir'> {
  const httpPort = integer(values, 'http-port', 0, 0, 65_535);
  // The levels of @edl/proto's LOG_LEVELS, listed here so that checking them loads nothing heavy.
  const logLevel: LogLevel = choiceValue(
    (values['log-level'] as string | undefined) ?? 'info',
    '--log-level',
    ['debug', 'info', 'warn', 'error', 'silent'] as const,
  );
  const metricsToken = values['metrics-token'] as string | undefined;
  const tensorboardDir = values['tensorboard-dir'] as string | undefined;
  return {
    httpPort,
    httpHost: (values['http-host'] as string | undefined) ?? '127.0.0.1',
    ...(metricsToken === undefined ? {} : { metricsToken }),
    logLevel,
    quiet: values.quiet === true,
    ...(tensorboardDir === undefined ? {} : { tensorboardDir }),
  };
}

/** The job commands that run locally. */
export type JobKind = 'train' | 'evaluate' | 'predict';

/** The job type of `edl <kind>`; throws UsageError when the options lack what it needs. */
export function jobTypeFor(kind: JobKind, options: JobOptions): JobType {
  if (kind === 'train') {
    if (options.trainingData === undefined) throw new UsageError('--training-data is required');
    return options.validationData === undefined ? 'training' : 'training-with-evaluation';
  }
  const data = kind === 'evaluate' ? options.validationData : options.predictionData;
  if (data === undefined)
    throw new UsageError(`--${kind === 'evaluate' ? 'validation' : 'prediction'}-data is required`);
  if (options.modelCheckpoint === undefined && options.checkpointDir === undefined) {
    throw new UsageError(
      `--model-checkpoint (or --checkpoint-dir) is required: ${kind === 'evaluate' ? 'evaluation' : 'prediction'} needs a trained model`,
    );
  }
  return kind === 'evaluate' ? 'evaluation' : 'prediction';
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
  // The workers of a local job share this host: each tunes its data pipeline within its share.
  add('--data-ram-budget', Math.max(2 ** 20, Math.floor(options.dataRamBudget / options.numWorkers)));
  // One worker keeps the default 'auto' budget, which may lend its consumer's core to its map
  // threads while that core idles; several split the host's cores as hard caps.
  if (options.numWorkers > 1) add('--data-cpu-budget', defaultCpuBudget({ processes: options.numWorkers }));
  // A sync-mode master takes only gradients of its current model: waiting for each answer wastes none.
  add('--push-ahead', options.mode === 'sync' ? 'off' : (options.pushAhead ?? 'off'));
  add('--mirror-updates', options.mirrorUpdates ?? 'on');
  if (options.numPs > 0) add('--dense-on', options.denseOn);
  add('--log-level', options.quiet ? 'error' : options.logLevel);
  if (options.allowNonFinite) args.push('--allow-non-finite');
  args.push(...s3Args(options));
  // Batch-norm statistics are saved beside local checkpoints only: a worker writes them as a file.
  const local = (location: string | undefined) =>
    location === undefined || isUrl(location) ? undefined : normalizeLocation(location);
  add('--export-dir', local(options.checkpointDir));
  // Evaluation and prediction start from a checkpoint; so do the batch-norm statistics saved beside it.
  add('--model-checkpoint', local(options.modelCheckpoint ?? options.checkpointDir));
  return args;
}

/** Whether `location` is a URL other than `file:` (`s3://...`): kept as it is, never resolved as a path. */
export function isUrl(location: string): boolean {
  const scheme = schemeOf(location);
  return scheme !== undefined && scheme !== 'file';
}
