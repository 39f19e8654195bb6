import { type OptimizerConfig, resolveOptimizerConfig } from '@edl/common';
import { parseCommandLine } from '../args.js';
import type { Command } from '../command.js';
import { UsageError } from '../command.js';
import { applyS3Options, S3_OPTION_SPEC, S3_OPTIONS_HELP, s3Options } from '../job/s3-options.js';

const usage = `Usage: edl ps --shard-index I --num-shards N [--optimizer JSON --seed N] [--tables JSON] [options]

Runs one parameter-server shard of a job (ElasticDL's parameter-server design): it holds the rows
of every embedding table whose ids hash to shard I of N, serves the ParameterServerService gRPC
service (declare tables, pull rows, push gradients, describe), and refuses ids of other shards.
Workers declare the tables their models use; those take the job's --optimizer and --seed, as
ElasticDL's parameter servers take the embedding infos its workers report. Rows are created on first
pull from the table's seed, so every shard and every restart gives the same initial model. It
reads the job token from EDL_JOB_TOKEN, as workers do, prints
  {"event":"listening","address":"HOST:PORT","shardIndex":I,"numShards":N,"pid":P}
on stdout once it serves, and runs until SIGINT or SIGTERM; then it prints
  {"event":"stopped","shardIndex":I,"tables":[{"name","rows","pushes"}, ...],
   "dense":{"version","variables":[...],"pushes"}}
(dense: the dense variables placed on this shard, in a job that holds them on the shards).

Options:
  --shard-index I       this shard's index, 0 <= I < N
  --num-shards N        the job's number of parameter-server shards
  --optimizer JSON      the job's optimizer config, the one the master applies to dense
                        variables: {"type": "sgd" | "momentum" | "adam" | "adagrad", ...}
  --seed N              the job's seed: with a table's name and a row's id it fixes the row's
                        initial value (default 0)
  --tables JSON         tables to serve from the start, an array of {"name", "dim", "optimizer",
                        "seed", "initializer"?: {"type": "uniform", "scale"} | {"type": "normal",
                        "stddev"}}; without it, only declared tables
  --port N              port to listen on (default 0: any free port)
  --host HOST           interface to listen on (default 127.0.0.1)
  --restore-dir DIR     start from this shard's rows of the shard files of a checkpoint in DIR
                        (a directory, or an object-store prefix: s3://bucket/prefix/)
  --restore-version V   ... the checkpoint of model version V (both or neither)

The shard writes its part of each checkpoint where the master's SaveShard call says: a directory,
or an object store (s3://...), where the S3 options below and the AWS settings apply.

${S3_OPTIONS_HELP}`;

/** `edl ps`: one parameter-server shard process. */
export const command: Command = {
  name: 'ps',
  usage,
  async run(argv, io) {
    const { values } = parseCommandLine(argv, {
      'shard-index': { type: 'integer', min: 0 },
      'num-shards': { type: 'integer', min: 1 },
      tables: { type: 'string' },
      optimizer: { type: 'json-object' },
      seed: { type: 'integer', min: 0 },
      port: { type: 'integer', min: 0, max: 65_535 },
      host: { type: 'string' },
      'restore-dir': { type: 'string' },
      'restore-version': { type: 'integer', min: 0 },
      ...S3_OPTION_SPEC,
    });
    const restoreDir = values['restore-dir'];
    const restoreVersion = values['restore-version'];
    if ((restoreDir === undefined) !== (restoreVersion === undefined))
      throw new UsageError('--restore-dir and --restore-version go together');
    const shardIndex = values['shard-index'];
    const numShards = values['num-shards'];
    if (shardIndex === undefined) throw new UsageError('--shard-index is required');
    if (numShards === undefined) throw new UsageError('--num-shards is required');
    if (shardIndex >= numShards)
      throw new UsageError(`--shard-index must be below --num-shards (${numShards}) but is ${shardIndex}`);
    if (values.tables === undefined && values.optimizer === undefined)
      throw new UsageError('--optimizer (the tables workers declare) or --tables is required');
    let tablesJson: unknown;
    try {
      tablesJson = values.tables === undefined ? undefined : JSON.parse(values.tables);
    } catch (error) {
      throw new UsageError(`--tables is not JSON: ${(error as Error).message}`);
    }
    const token = process.env.EDL_JOB_TOKEN;
    if (token === undefined || token === '')
      throw new UsageError("EDL_JOB_TOKEN is not set: 'edl ps' serves only calls that carry the job token");

    await applyS3Options(s3Options(values));
    const { checkTableSpecs, startParameterServer } = await import('@edl/ps');
    const optimizer = values.optimizer as unknown as OptimizerConfig | undefined;
    let tables: ReturnType<typeof checkTableSpecs> = [];
    try {
      if (tablesJson !== undefined) tables = checkTableSpecs(tablesJson, '--tables');
      if (optimizer !== undefined) resolveOptimizerConfig(optimizer);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const server = await startParameterServer({
      token,
      shardIndex,
      numShards,
      tables,
      ...(optimizer === undefined ? {} : { job: { optimizer, seed: values.seed ?? 0 } }),
      onDeclared: (table, workerId) =>
        io.stdout.write(`${JSON.stringify({ event: 'table_declared', table, workerId, shardIndex })}\n`),
      ...(values.port === undefined ? {} : { port: values.port }),
      ...(values.host === undefined ? {} : { host: values.host }),
      ...(restoreDir === undefined || restoreVersion === undefined
        ? {}
        : { restoreFrom: { dir: restoreDir, version: restoreVersion } }),
    });
    if (restoreVersion !== undefined)
      io.stdout.write(
        `${JSON.stringify({ event: 'restored', shardIndex, version: restoreVersion, tables: server.shard.describe().map(({ name, rows }) => ({ name, rows })) })}\n`,
      );
    io.stdout.write(
      `${JSON.stringify({ event: 'listening', address: server.address, shardIndex, numShards, pid: process.pid })}\n`,
    );
    await new Promise<void>((resolve) => {
      const onSignal = () => {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        resolve();
      };
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
    });
    await server.shutdown();
    // What the shard held, for the job's log (and for tests: both shards hold rows).
    io.stdout.write(
      `${JSON.stringify({ event: 'stopped', shardIndex, tables: server.shard.describe().map(({ name, rows, pushes }) => ({ name, rows, pushes })), ...(server.shard.dense?.declared === true ? { dense: server.shard.dense.describe() } : {}) })}\n`,
    );
    return 0;
  },
};
