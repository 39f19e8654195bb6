import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { OPTIMIZER_TYPES } from '@edl/common';
import type { DataReader, JsonObject } from '@edl/data';
import type { JobType } from '@edl/master';
import { type CommandLine, integerValue, jsonStringArrayValue, parseCommandLine } from '../args.js';
import type { Command, CommandIO } from '../command.js';
import { UsageError } from '../command.js';
import {
  checkpointShardsOf,
  evaluationJobOptions,
  logShardsRestored,
  shardRestorePoint,
} from '../job/checkpoint-shards.js';
import { recordsSummary } from '../job/records-summary.js';
import { applyS3Options, S3_OPTION_SPEC, S3_OPTIONS_HELP, s3Args, s3Options } from '../job/s3-options.js';
import { WORKER_NODE_FLAGS } from '../job/worker-node-flags.js';

/** @edl/master's JOB_TYPES, listed here so that checking options loads no gRPC (a test compares). */
export const MASTER_JOB_TYPES = [
  'training',
  'training-with-evaluation',
  'evaluation',
  'prediction',
] as const satisfies readonly JobType[];

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
  --optimizer sgd|momentum|adam|adagrad (sgd)  --learning-rate X  --momentum X (0.9)
  --checkpoint-dir DIR  --checkpoint-steps N (0)  --model-checkpoint PATH  --metrics-file FILE
Server and workers:
  --host H (127.0.0.1)  --port N (0: any)   the job token comes from EDL_JOB_TOKEN, else is random
  --num-workers N (0)   --max-restarts N (3)
  --num-ps N (0)        parameter-server shards (edl ps processes) for the rows of distributed
                        embedding tables, with the job's --optimizer and --seed; their addresses
                        go to every worker (EDL_PS_ADDRESSES) and are printed; they hold the dense
                        variables too (EDL_DENSE_ON=shards, printed, unless this command's
                        EDL_DENSE_ON is master; a worker's --dense-on master keeps them here) (evaluation, prediction: default as many as
                        wrote the checkpoint of --model-checkpoint, or else of --checkpoint-dir's
                        newest, each restored from it before any worker pulls; N re-shards)
  --worker-command CMD  the worker to run (default: this edl's 'worker' command); {workerId} and
                        {masterAddress} are replaced; workers get EDL_MASTER_ADDR, EDL_JOB_TOKEN and
                        EDL_WORKER_ID in their environment

Live view and logs:
  --http-port N (0: any)  --http-host H (127.0.0.1)   the live job view, /api/status and /metrics
  --metrics-token TOKEN   a second token that opens /metrics only (for Prometheus)
  --log-level debug|info|warn|error|silent (info)     --quiet   errors and the final summary only
  --tensorboard-dir DIR   write TensorBoard scalars (loss, throughput, evaluation metrics) there

${S3_OPTIONS_HELP}

Prints EDL_MASTER_ADDR=..., EDL_JOB_TOKEN=..., EDL_MASTER_HTTP=... (and EDL_PS_ADDRESSES=..., EDL_DENSE_ON=shards) first, so that workers can be
started by hand, then the live view's address (with the token).
Exit status: 0 the job succeeded, 1 it failed, 2 bad arguments, 130 interrupted (resume it from
its checkpoint directory).`;

const options = {
  'training-data': { type: 'string' },
  'validation-data': { type: 'string' },
  'prediction-data': { type: 'string' },
  'data-reader': { type: 'string' },
  'data-reader-params': { type: 'json-object' },
  'job-type': { type: 'choice', choices: MASTER_JOB_TYPES },
  'minibatch-size': { type: 'integer', min: 1 },
  'num-minibatches-per-task': { type: 'integer', min: 1 },
  'num-epochs': { type: 'integer', min: 1 },
  shuffle: { type: 'boolean' },
  seed: { type: 'integer', max: 0xffff_ffff },
  'evaluation-steps': { type: 'integer' },
  'lease-ms': { type: 'integer', min: 100 },
  'max-task-failures': { type: 'integer', min: 1 },
  mode: { type: 'choice', choices: ['sync', 'async'] },
  'grads-to-wait': { type: 'integer', min: 1 },
  'max-staleness': { type: 'integer' },
  'staleness-modulation': { type: 'boolean' },
  optimizer: { type: 'choice', choices: OPTIMIZER_TYPES },
  'learning-rate': { type: 'number' },
  momentum: { type: 'number', min: 0, max: 1 },
  'checkpoint-dir': { type: 'string' },
  'checkpoint-steps': { type: 'integer' },
  'model-checkpoint': { type: 'string' },
  'metrics-file': { type: 'string' },
  host: { type: 'string' },
  port: { type: 'integer', max: 65_535 },
  'num-workers': { type: 'integer', max: 10_000 },
  'max-restarts': { type: 'integer' },
  'num-ps': { type: 'integer', min: 0, max: 1024 },
  'worker-command': { type: 'string' },
  // The live view, metrics and logs.
  'http-port': { type: 'integer', max: 65_535 },
  'http-host': { type: 'string' },
  'metrics-token': { type: 'string' },
  'log-level': { type: 'choice', choices: ['debug', 'info', 'warn', 'error', 'silent'] },
  quiet: { type: 'boolean' },
  'tensorboard-dir': { type: 'string' },
  ...S3_OPTION_SPEC,
} as const;

type MasterValues = CommandLine<typeof options>['values'];

function inferJobType(v: MasterValues): JobType {
  if (v['job-type'] !== undefined) return v['job-type'];
  if (v['prediction-data'] !== undefined) return 'prediction';
  if (v['training-data'] !== undefined)
    return v['validation-data'] !== undefined ? 'training-with-evaluation' : 'training';
  if (v['validation-data'] !== undefined) return 'evaluation';
  throw new UsageError('no data: give --training-data, --validation-data or --prediction-data');
}

/** Splits a worker command: a JSON array, or words separated by spaces. */
function splitCommand(text: string): string[] {
  if (text.trim().startsWith('[')) return jsonStringArrayValue(text, '--worker-command');
  const words = text.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) throw new UsageError("Expected a command for --worker-command but received ''");
  return words;
}

async function runMaster(argv: string[], io: CommandIO): Promise<number> {
  // Every option is checked before anything heavy loads: a typo fails at once, not after a
  // table scan or gRPC start-up.
  const { values: v } = parseCommandLine(argv, options);
  const jobType = inferJobType(v);
  const numWorkers = v['num-workers'] ?? 0;
  const edlBin = fileURLToPath(new URL('../bin/edl.js', import.meta.url));
  const workerCommand =
    v['worker-command'] !== undefined
      ? splitCommand(v['worker-command'])
      : [process.execPath, ...WORKER_NODE_FLAGS, edlBin, 'worker'];
  if (v.momentum !== undefined && v.optimizer !== 'momentum')
    throw new UsageError('--momentum needs --optimizer momentum');
  const s3 = s3Options(v);
  let readerParams = (v['data-reader-params'] ?? {}) as JsonObject;
  if (v['data-reader'] !== undefined) readerParams = { ...readerParams, type: v['data-reader'] };

  const [
    { createDataReader },
    { createStreamLogger, startMaster },
    { masterCommandOptions },
    { LocalParameterServers },
  ] = await Promise.all([
    import('@edl/data'),
    import('@edl/master'),
    import('../job/master-options.js'),
    import('@edl/master/local-workers'),
  ]);
  await applyS3Options(s3);
  // Evaluation and prediction of a model trained with --num-ps: the shards restore its checkpoint.
  const given = {
    modelCheckpoint: v['model-checkpoint'],
    checkpointDir: v['checkpoint-dir'],
    numPs: v['num-ps'] ?? 0,
  };
  const evaluated = jobType.startsWith('training') ? undefined : await checkpointShardsOf(given);
  const { modelCheckpoint, checkpointDir, numPs } = evaluationJobOptions(given, evaluated);
  const jobId = randomBytes(4).toString('hex');
  const logger = createStreamLogger(io.stderr, {
    level: v['log-level'] ?? 'info',
    quiet: v.quiet ?? false,
    bindings: { job: jobId },
  });
  const readers: DataReader<unknown>[] = [];
  const open = async (origin: string | undefined) => {
    if (origin === undefined) return undefined;
    const reader = await createDataReader(origin, readerParams);
    readers.push(reader);
    return reader;
  };
  const optional = optionalValue;
  const masterOptions = masterCommandOptions(
    { ...v, 'model-checkpoint': modelCheckpoint, 'checkpoint-dir': checkpointDir },
    jobType,
  );
  // The shards are given the token before the master starts: it cannot be the master's own pick.
  const token = process.env.EDL_JOB_TOKEN || (numPs > 0 ? randomBytes(32).toString('hex') : undefined);
  const jobOptimizer = masterOptions.parameterStore?.optimizer;
  const parameterServers =
    numPs > 0 && token !== undefined && jobOptimizer !== undefined
      ? new LocalParameterServers({
          numShards: numPs,
          args: [edlBin, 'ps', ...s3Args(s3)],
          optimizer: jobOptimizer,
          seed: v.seed ?? 0,
          token,
          ...optional('maxRestarts', v['max-restarts']),
          onWarning: (message) => logger.warn(message),
        })
      : undefined;
  // Every shard, relaunched ones too, starts from the evaluated checkpoint's cut.
  if (evaluated !== undefined) parameterServers?.setRestorePoint(shardRestorePoint(evaluated));
  try {
    const [trainingReader, evaluationReader, predictionReader] = [
      await open(v['training-data']),
      await open(v['validation-data']),
      await open(v['prediction-data']),
    ];
    // The placement this master's workers take (EDL_DENSE_ON, by default shards; the workers it
    // starts inherit this environment): its checkpoints record it, resuming one written with the
    // other is refused, and it is printed for workers started by hand.
    const denseOn =
      parameterServers === undefined
        ? undefined
        : process.env.EDL_DENSE_ON === 'master'
          ? ('master' as const)
          : ('shards' as const);
    const handle = await startMaster({
      ...masterOptions,
      ...optional('trainingReader', trainingReader),
      ...optional('evaluationReader', evaluationReader),
      ...optional('predictionReader', predictionReader),
      ...optional('host', v.host),
      ...optional('port', v.port),
      ...optional('token', token),
      ...optional('denseOn', denseOn),
      logger,
      jobId,
      ...(numWorkers > 0 || parameterServers !== undefined
        ? {
            workers: {
              command: workerCommand[0] as string,
              args: workerCommand.slice(1),
              numWorkers,
              ...optional('maxRestarts', v['max-restarts']),
              ...optional('parameterServers', parameterServers),
            },
          }
        : {}),
    });
    // A shard that cannot start fails the command with its own words (stop() stops the shards too).
    await parameterServers?.ready().catch(async (error) => {
      await handle.stop();
      throw error;
    });
    logShardsRestored(logger, evaluated);
    io.stdout.write(
      `EDL_MASTER_ADDR=${handle.address}\nEDL_JOB_TOKEN=${handle.token}\nEDL_MASTER_HTTP=${handle.liveView?.origin ?? ''}\n${parameterServers === undefined ? '' : `EDL_PS_ADDRESSES=${parameterServers.addresses.join(',')}\nEDL_DENSE_ON=${denseOn}\n`}`,
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
    // The job's end stops its workers and gRPC server; stop() also closes the live view.
    await handle.stop();
    if (result === 'interrupted') {
      logger.warn('interrupted: stopping workers and server; resume from the checkpoint directory');
      return 130;
    }
    io.stdout.write(
      `${JSON.stringify({ state: result.state, modelVersion: result.modelVersion, records: recordsSummary(handle.master.status()), evaluations: result.evaluations, checkpoint: result.checkpoint, code: result.error?.code, error: result.error?.message })}\n`,
    );
    return result.state === 'succeeded' ? 0 : 1;
  } finally {
    for (const reader of readers) await reader.close?.();
  }
}

function optionalValue<K extends string, T>(key: K, value: T | undefined): Partial<Record<K, T>> {
  return (value !== undefined ? { [key]: value } : {}) as Partial<Record<K, T>>;
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
  const { values, positionals } = parseCommandLine(
    argv,
    { address: { type: 'string' }, http: { type: 'string' } },
    name === 'scale' ? ['the number of workers: edl master scale N'] : [],
  );
  const n = name === 'scale' ? integerValue(positionals[0] as string, 'N (workers)', 0, 10_000) : 0;
  const token = process.env.EDL_JOB_TOKEN;
  if (token === undefined || token === '') throw new UsageError('missing EDL_JOB_TOKEN in the environment');
  const http = values.http ?? (values.address === undefined ? process.env.EDL_MASTER_HTTP : undefined);
  if (name === 'status' && http !== undefined && http !== '') return httpStatus(http, token, io);
  const address = values.address ?? process.env.EDL_MASTER_ADDR;
  if (address === undefined) throw new UsageError('missing --address (or EDL_MASTER_ADDR)');
  const { MasterClient } = await import('@edl/proto');
  const client = await MasterClient.connect(address, token);
  try {
    io.stdout.write(
      `${JSON.stringify(name === 'scale' ? { numWorkers: await client.scaleWorkers(n) } : await client.getJobStatus())}\n`,
    );
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
