import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createDataReader, type DataReader, type JsonObject } from '@edl/data';
import {
  createStreamLogger,
  defaultMaxStaleness,
  JOB_TYPES,
  type JobType,
  type OptimizerConfig,
  startMaster,
} from '@edl/master';
import { type LogLevel, MasterClient, parseLogLevel } from '@edl/proto';
import type { Command, CommandIO } from '../command.js';
import { UsageError } from '../command.js';

const usage = `Usage: edl master [options]            run a job's master (and its local workers)
       edl master scale N --address HOST:PORT   change the number of workers of a running job
       edl master status [--http URL | --address HOST:PORT]
                                          print a running job's status as JSON: the live
                                          view's /api/status (--http or EDL_MASTER_HTTP), else
                                          the gRPC summary

Data (origins as for edl train: a RecordIO file or directory, a .csv/.tsv/.txt file, postgres://...):
  --training-data ORIGIN        --validation-data ORIGIN       --prediction-data ORIGIN
  --data-reader TYPE            recordio | text | table | <module>#<export> (default: from the origin)
  --data-reader-params JSON     reader parameters, e.g. '{"table":"census"}'
  --job-type TYPE               training | training-with-evaluation | evaluation | prediction
                                (default: inferred from the data options given)
Tasks:
  --minibatch-size N (64)  --num-minibatches-per-task N (8)  --num-epochs N (1)
  --shuffle  --seed N (0)  --evaluation-steps N (0: evaluate at the end only)
  --lease-ms N (30000)  --max-task-failures N (3)
Parameter store:
  --mode async|sync (async)  --grads-to-wait N (1, sync)  --staleness-modulation
  --max-staleness N (async: max(8, 2 x --num-workers); sync: 0)
  --optimizer sgd|momentum|adam (sgd)  --learning-rate X  --momentum X (0.9)
  --checkpoint-dir DIR  --checkpoint-steps N (0)  --model-checkpoint PATH  --metrics-file FILE
Server and workers:
  --host H (127.0.0.1)  --port N (0: any)   the job token comes from EDL_JOB_TOKEN, else is random
  --num-workers N (0)   --max-restarts N (3)
  --worker-command CMD  the worker to run (default: this edl's 'worker' command); {workerId} and
                        {masterAddress} are replaced; workers get EDL_MASTER_ADDR, EDL_JOB_TOKEN and
                        EDL_WORKER_ID in their environment

Live view and logs:
  --http-port N (0: any)  --http-host H (127.0.0.1)   the live job view, /api/status and /metrics
  --metrics-token TOKEN   a second token that opens /metrics only (for Prometheus)
  --log-level debug|info|warn|error|silent (info)     --quiet   errors and the final summary only
  --tensorboard-dir DIR   write TensorBoard scalars (loss, throughput, evaluation metrics) there

Prints EDL_MASTER_ADDR=..., EDL_JOB_TOKEN=... and EDL_MASTER_HTTP=... first, so that workers can be
started by hand, then the live view's address (with the token).
Exit status: 0 the job succeeded, 1 it failed, 2 bad arguments, 130 interrupted (resume it from
its checkpoint directory).`;

const options = {
  'training-data': { type: 'string' },
  'validation-data': { type: 'string' },
  'prediction-data': { type: 'string' },
  'data-reader': { type: 'string' },
  'data-reader-params': { type: 'string' },
  'job-type': { type: 'string' },
  'minibatch-size': { type: 'string' },
  'num-minibatches-per-task': { type: 'string' },
  'num-epochs': { type: 'string' },
  shuffle: { type: 'boolean' },
  seed: { type: 'string' },
  'evaluation-steps': { type: 'string' },
  'lease-ms': { type: 'string' },
  'max-task-failures': { type: 'string' },
  mode: { type: 'string' },
  'grads-to-wait': { type: 'string' },
  'max-staleness': { type: 'string' },
  'staleness-modulation': { type: 'boolean' },
  optimizer: { type: 'string' },
  'learning-rate': { type: 'string' },
  momentum: { type: 'string' },
  'checkpoint-dir': { type: 'string' },
  'checkpoint-steps': { type: 'string' },
  'model-checkpoint': { type: 'string' },
  'metrics-file': { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'num-workers': { type: 'string' },
  'max-restarts': { type: 'string' },
  'worker-command': { type: 'string' },
  address: { type: 'string' },
  // --- live view, metrics and logs (issue 14) ---
  'http-port': { type: 'string' },
  'http-host': { type: 'string' },
  'metrics-token': { type: 'string' },
  'log-level': { type: 'string' },
  quiet: { type: 'boolean' },
  'tensorboard-dir': { type: 'string' },
  // --- end live view ---
} as const;

function int(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value))
    throw new UsageError(`expected a non-negative integer for --${name} but received '${value}'`);
  return Number(value);
}

function num(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n))
    throw new UsageError(`expected a number for --${name} but received '${value}'`);
  return n;
}

function inferJobType(v: Record<string, unknown>): JobType {
  const given = v['job-type'];
  if (typeof given === 'string') {
    if (!(JOB_TYPES as readonly string[]).includes(given)) {
      throw new UsageError(`expected one of ${JOB_TYPES.join(', ')} for --job-type but received '${given}'`);
    }
    return given as JobType;
  }
  if (v['prediction-data'] !== undefined) return 'prediction';
  if (v['training-data'] !== undefined)
    return v['validation-data'] !== undefined ? 'training-with-evaluation' : 'training';
  if (v['validation-data'] !== undefined) return 'evaluation';
  throw new UsageError('no data: give --training-data, --validation-data or --prediction-data');
}

/** Splits a worker command: a JSON array, or words separated by spaces. */
function splitCommand(text: string): string[] {
  if (text.trim().startsWith('[')) {
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((p) => typeof p === 'string')) {
      throw new UsageError('expected a JSON array of strings for --worker-command');
    }
    return parsed;
  }
  const words = text.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0)
    throw new UsageError('expected a command for --worker-command but received nothing');
  return words;
}

function optimizerConfig(v: Record<string, string | boolean | undefined>): OptimizerConfig {
  const type = (v.optimizer as string | undefined) ?? 'sgd';
  const learningRate = num(v['learning-rate'] as string | undefined, 'learning-rate');
  const lr = learningRate !== undefined ? { learningRate } : {};
  if (type === 'sgd') return { type, ...lr };
  if (type === 'adam') return { type, ...lr };
  if (type === 'momentum') {
    const momentum = num(v.momentum as string | undefined, 'momentum');
    return { type, ...lr, ...(momentum !== undefined ? { momentum } : {}) };
  }
  throw new UsageError(`expected sgd, momentum or adam for --optimizer but received '${type}'`);
}

async function runMaster(argv: string[], io: CommandIO): Promise<number> {
  const { values: v, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const jobType = inferJobType(v);
  let readerParams: JsonObject = {};
  if (v['data-reader-params'] !== undefined) {
    try {
      readerParams = JSON.parse(v['data-reader-params']) as JsonObject;
    } catch (error) {
      throw new UsageError(`expected JSON for --data-reader-params: ${(error as Error).message}`);
    }
  }
  if (v['data-reader'] !== undefined) readerParams = { ...readerParams, type: v['data-reader'] };
  const readers: DataReader<unknown>[] = [];
  const open = async (origin: string | undefined) => {
    if (origin === undefined) return undefined;
    const reader = await createDataReader(origin, readerParams);
    readers.push(reader);
    return reader;
  };
  const numWorkers = int(v['num-workers'], 'num-workers') ?? 0;
  const edlBin = fileURLToPath(new URL('../bin/edl.js', import.meta.url));
  const workerCommand =
    v['worker-command'] !== undefined
      ? splitCommand(v['worker-command'])
      : [process.execPath, edlBin, 'worker'];
  // --- live view, metrics and logs (issue 14) ---
  const jobId = randomBytes(4).toString('hex');
  const logger = createStreamLogger(io.stderr, {
    level: logLevelOf(v['log-level']),
    quiet: v.quiet ?? false,
    bindings: { job: jobId },
  });
  const http = {
    ...optionalValue('port', int(v['http-port'], 'http-port')),
    ...optionalValue('host', v['http-host']),
    ...optionalValue('metricsToken', v['metrics-token']),
  };
  // --- end live view ---
  // Check every option before opening data: a typo must not wait for a table scan.
  const parameterStore = {
    mode:
      v.mode === undefined || v.mode === 'async'
        ? ('async' as const)
        : v.mode === 'sync'
          ? ('sync' as const)
          : badMode(v.mode),
    ...optionalValue('gradsToWait', int(v['grads-to-wait'], 'grads-to-wait')),
    ...optionalValue(
      'maxStaleness',
      int(v['max-staleness'], 'max-staleness') ??
        (v.mode === 'sync' ? undefined : defaultMaxStaleness(int(v['num-workers'], 'num-workers') ?? 0)),
    ),
    ...(v['staleness-modulation'] === true ? { stalenessModulation: true } : {}),
    optimizer: optimizerConfig(v),
  };
  const optional = optionalValue;
  try {
    const [trainingReader, evaluationReader, predictionReader] = [
      await open(v['training-data']),
      await open(v['validation-data']),
      await open(v['prediction-data']),
    ];
    const handle = await startMaster({
      jobType,
      ...optional('trainingReader', trainingReader),
      ...optional('evaluationReader', evaluationReader),
      ...optional('predictionReader', predictionReader),
      ...optional('minibatchSize', int(v['minibatch-size'], 'minibatch-size')),
      ...optional('numMinibatchesPerTask', int(v['num-minibatches-per-task'], 'num-minibatches-per-task')),
      ...optional('numEpochs', int(v['num-epochs'], 'num-epochs')),
      shuffle: v.shuffle ?? false,
      ...optional('seed', int(v.seed, 'seed')),
      ...optional('evaluationSteps', int(v['evaluation-steps'], 'evaluation-steps')),
      ...optional('leaseMs', int(v['lease-ms'], 'lease-ms')),
      ...optional('maxTaskFailures', int(v['max-task-failures'], 'max-task-failures')),
      parameterStore,
      ...optional('checkpointDir', v['checkpoint-dir']),
      ...optional('checkpointSteps', int(v['checkpoint-steps'], 'checkpoint-steps')),
      ...optional('modelCheckpoint', v['model-checkpoint']),
      ...optional('metricsFile', v['metrics-file']),
      ...optional('host', v.host),
      ...optional('port', int(v.port, 'port')),
      ...optional('token', process.env.EDL_JOB_TOKEN),
      logger,
      jobId,
      http,
      ...optional('tensorboardDir', v['tensorboard-dir']),
      ...(numWorkers > 0
        ? {
            workers: {
              command: workerCommand[0] as string,
              args: workerCommand.slice(1),
              numWorkers,
              ...optional('maxRestarts', int(v['max-restarts'], 'max-restarts')),
            },
          }
        : {}),
    });
    io.stdout.write(
      `EDL_MASTER_ADDR=${handle.address}\nEDL_JOB_TOKEN=${handle.token}\nEDL_MASTER_HTTP=${handle.liveView?.origin ?? ''}\n`,
    );
    if (!v.quiet) io.stderr.write(`live view: ${handle.liveView?.url}\n`);
    let onSignal = () => {};
    const interrupted = new Promise<'interrupted'>((resolve) => {
      onSignal = () => resolve('interrupted');
    });
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    const result = await Promise.race([handle.wait(), interrupted]).finally(() => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    });
    await handle.stop();
    if (result === 'interrupted') {
      logger.warn('interrupted: stopping workers and server; resume from the checkpoint directory');
      return 130;
    }
    io.stdout.write(
      `${JSON.stringify({ state: result.state, modelVersion: result.modelVersion, evaluations: result.evaluations, checkpoint: result.checkpoint, error: result.error?.message })}\n`,
    );
    return result.state === 'succeeded' ? 0 : 1;
  } finally {
    for (const reader of readers) await reader.close?.();
  }
}

function optionalValue<K extends string, T>(key: K, value: T | undefined): Partial<Record<K, T>> {
  return (value !== undefined ? { [key]: value } : {}) as Partial<Record<K, T>>;
}

function badMode(mode: string): never {
  throw new UsageError(`expected sync or async for --mode but received '${mode}'`);
}

function logLevelOf(value: string | undefined): LogLevel {
  try {
    return parseLogLevel(value ?? 'info', '--log-level');
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** `edl master status` through the live view: the same JSON as the page shows. */
async function httpStatus(origin: string, token: string, io: CommandIO): Promise<number> {
  let response: Response;
  try {
    response = await fetch(new URL('/api/status', origin), { headers: { authorization: `Bearer ${token}` } });
  } catch (error) {
    throw new Error(`cannot reach the master's live view at ${origin}: ${(error as Error).message}`);
  }
  if (!response.ok) {
    throw new Error(`${origin}/api/status answered ${response.status}: ${(await response.text()).trim()}`);
  }
  io.stdout.write(`${JSON.stringify(await response.json())}\n`);
  return 0;
}

async function admin(name: 'scale' | 'status', argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { address: { type: 'string' }, http: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const token = process.env.EDL_JOB_TOKEN;
  if (token === undefined || token === '') throw new UsageError('missing EDL_JOB_TOKEN in the environment');
  const http = values.http ?? (values.address === undefined ? process.env.EDL_MASTER_HTTP : undefined);
  if (name === 'status' && http !== undefined && http !== '') return httpStatus(http, token, io);
  const address = values.address ?? process.env.EDL_MASTER_ADDR;
  if (address === undefined) throw new UsageError('missing --address (or EDL_MASTER_ADDR)');
  const client = await MasterClient.connect(address, token);
  try {
    if (name === 'scale') {
      const n = int(positionals[0], 'num-workers');
      if (n === undefined) throw new UsageError('missing the number of workers: edl master scale N');
      io.stdout.write(`${JSON.stringify({ numWorkers: await client.scaleWorkers(n) })}\n`);
    } else {
      io.stdout.write(`${JSON.stringify(await client.getJobStatus())}\n`);
    }
    return 0;
  } finally {
    client.close();
  }
}

/** `edl master`: runs a job's master, or talks to a running one (scale, status). */
export const command: Command = {
  name: 'master',
  usage,
  async run(argv, io) {
    if (argv[0] === 'scale' || argv[0] === 'status') return admin(argv[0], argv.slice(1), io);
    return runMaster(argv, io);
  },
};
