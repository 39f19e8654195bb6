/**
 * The checkpoint of an evaluation or prediction job and its parameter-server shards (issue 25), for
 * every command that runs one: `edl evaluate | predict`, `edl master` and the master pod of `edl
 * k8s submit`. A model trained with `--num-ps` keeps its embedding rows in the shard parts of its
 * checkpoints (`ps-<version>/` beside the master's file or manifest, docs/master.md), not in the
 * master's file: the job's shards must hold those rows before any worker pulls one, or the
 * metrics and predictions would be those of the initializer's rows.
 */
import path from 'node:path';
import type { MasterLogger } from '@edl/master';
import type { ModelDefinition } from '@edl/worker';
import { isUrl, type JobOptions } from './job-options.js';

/** What `edl evaluate --help` and `edl predict --help` say of a model trained with `--num-ps`. */
export const CHECKPOINT_SHARDS_HELP = `A model trained with --num-ps (ElasticDL's parameter-server design: embedding tables held by
parameter-server shards) runs with its trained rows: the job starts as many shards as wrote the
checkpoint's parameter-server files (ps-<version>/ beside it, locally or in S3), or --num-ps N
(the rows spread over N), and each loads its rows before any worker reads one. Reading creates
no row: an id the model was never trained on reads as its initializer's value. Only finished
checkpoints count (the parameter-server files of one the job did not finish writing are never
used), and a checkpoint of such a model without parameter-server files is refused.
--checkpoint-dir DIR without --model-checkpoint: the same with DIR's newest checkpoint (the job
neither resumes from DIR nor writes a checkpoint there).`;

/** The options that say where an evaluation or prediction job's checkpoint is, and its shards. */
export type EvaluatedCheckpointOptions = Pick<JobOptions, 'modelCheckpoint' | 'checkpointDir' | 'numPs'>;

/** The committed checkpoint an evaluation or prediction job starts from, and its shard parts. */
export interface CheckpointShards {
  /** The checkpoint: its file, or in an object store its manifest (the commit). */
  readonly checkpoint: string;
  /** The directory or object-store prefix its shard parts' `ps-<version>/` is under. */
  readonly dir: string;
  /** Its model version: the version of its shard parts. */
  readonly version: number;
  /** How many shards wrote its parts; undefined where it has none (a job without `--num-ps`). */
  readonly savedShards: number | undefined;
  /** The shards to run: `--num-ps`, or as many as wrote the parts (0: none). */
  readonly numShards: number;
}

/** Where the shard parts of the checkpoint at `checkpoint` (a file, or a manifest's URL) are. */
function partsDirOf(checkpoint: string): string {
  return isUrl(checkpoint) ? checkpoint.slice(0, checkpoint.lastIndexOf('/') + 1) : path.dirname(checkpoint);
}

/**
 * The checkpoint an evaluation or prediction job runs and the shards that restore it: the newest
 * committed one of `--model-checkpoint`, or without it of `--checkpoint-dir` (the training job's
 * directory: evaluating it means evaluating its newest checkpoint); undefined without either. As
 * many shards as wrote its parts unless `--num-ps` says otherwise (restoring re-shards). Only
 * committed checkpoints count: a checkpoint file, or in an object store a manifest; shard parts no
 * checkpoint commits (a job killed while writing them) are never used. Throws a CheckpointError
 * naming the option and the checkpoint when there is no committed one, when `--num-ps` asks for
 * shards it has no parts for, or when its parts are not one complete set.
 */
export async function checkpointShardsOf(
  options: EvaluatedCheckpointOptions,
): Promise<CheckpointShards | undefined> {
  const given = options.modelCheckpoint ?? options.checkpointDir;
  if (given === undefined) return undefined;
  const flag = options.modelCheckpoint === undefined ? '--checkpoint-dir' : '--model-checkpoint';
  const [{ CheckpointError, findCheckpoint }, { shardPartsOf }, { normalizeLocation }] = await Promise.all([
    import('@edl/master'),
    import('@edl/ps'),
    import('@edl/storage'),
  ]);
  const location = normalizeLocation(given);
  let found: Awaited<ReturnType<typeof findCheckpoint>>;
  try {
    found = await findCheckpoint(location);
  } catch (error) {
    // A checkpoint's own error (corrupt, unreadable) names it already; a missing path does not.
    if (error instanceof CheckpointError) throw error;
    throw new CheckpointError(
      'NOT_FOUND',
      `${flag} ${location} cannot be read: ${(error as Error).message}`,
      location,
      { cause: error },
    );
  }
  if (found === undefined)
    throw new CheckpointError(
      'NOT_FOUND',
      `${flag} ${location} holds no committed checkpoint: a checkpoint-<version>.edlckpt file, or in an object store its checkpoint-<version>.manifest.json. Parameter-server shard parts (ps-<version>/) that no checkpoint commits are never used`,
      location,
    );
  const version = found.checkpoint.store.version;
  const savedShards = found.checkpoint.parameterServers?.numShards;
  const checkpoint: CheckpointShards = {
    checkpoint: found.path,
    dir: partsDirOf(found.path),
    version,
    savedShards,
    numShards: options.numPs > 0 ? options.numPs : (savedShards ?? 0),
  };
  if (savedShards === undefined) {
    if (options.numPs > 0)
      throw new CheckpointError(
        'NOT_FOUND',
        noShardPartsMessage(checkpoint, 'its embedding rows'),
        found.path,
      );
    return checkpoint;
  }
  try {
    // The parts the shards will read: one complete set of markers, checked before any shard starts.
    await shardPartsOf(checkpoint.dir, version);
  } catch (error) {
    throw new CheckpointError(
      'NOT_FOUND',
      `Checkpoint ${found.path} (model version ${version}) was written by ${savedShards} parameter-server shards, but its shard parts cannot be used: ${(error as Error).message}`,
      found.path,
      { cause: error },
    );
  }
  return checkpoint;
}

/**
 * The job options of an evaluation or prediction job that runs `checkpoint`: its model is that
 * checkpoint (the one found, so that a checkpoint committed meanwhile changes neither the model nor
 * the rows), with `checkpoint.numShards` shards. A job evaluating `--checkpoint-dir` neither
 * resumes from that directory nor writes its own checkpoint there: it changes no model.
 */
export function evaluationJobOptions<T extends EvaluatedCheckpointOptions>(
  options: T,
  checkpoint: CheckpointShards | undefined,
): T {
  if (checkpoint === undefined) return options;
  return {
    ...options,
    modelCheckpoint: checkpoint.checkpoint,
    ...(options.modelCheckpoint === undefined ? { checkpointDir: undefined } : {}),
    numPs: checkpoint.numShards,
  };
}

/** Where a shard of `checkpoint`'s job starts from (`edl ps --restore-dir --restore-version`). */
export function shardRestorePoint(checkpoint: CheckpointShards): { dir: string; version: number } {
  return { dir: checkpoint.dir, version: checkpoint.version };
}

/** Logs that the job's shards start from `checkpoint`'s parts (nothing where it runs none). */
export function logShardsRestored(logger: MasterLogger, checkpoint: CheckpointShards | undefined): void {
  if (checkpoint === undefined || checkpoint.numShards === 0) return;
  logger.info(`parameter-server shards started from the shard parts of ${checkpoint.checkpoint}`, {
    modelVersion: checkpoint.version,
    savedShards: checkpoint.savedShards,
    numShards: checkpoint.numShards,
  });
}

function noShardPartsMessage(checkpoint: CheckpointShards, what: string): string {
  return `Checkpoint ${checkpoint.checkpoint} (model version ${checkpoint.version}) has no parameter-server shard parts, so ${what} cannot be restored: its job ran without --num-ps (a model trained with tfl.layers.embedding keeps its table in the checkpoint itself). Evaluate or predict with a checkpoint of a job trained with --num-ps`;
}

/**
 * Refuses a model with distributed embedding layers whose checkpoint has no shard parts (trained
 * without `--num-ps`, e.g. on the dense `tfl.layers.embedding`): its shards would serve the
 * initializer's rows. Builds the model once, on the cpu backend, to find its layers.
 */
export async function refuseEmbeddingsWithoutParts(
  checkpoint: CheckpointShards,
  definition: ModelDefinition<unknown>,
): Promise<void> {
  if (checkpoint.savedShards !== undefined) return;
  const { CheckpointError } = await import('@edl/master');
  const { modelEmbeddingTables, selectBackend, tf } = await import('@edl/worker');
  tf.env().set('PROD', true);
  if (tf.getBackend() !== 'cpu') await selectBackend({ backend: 'cpu' });
  const model = definition.model();
  let tables: string[];
  try {
    tables = modelEmbeddingTables(model).map((table) => `'${table.name}'`);
  } finally {
    model.dispose();
  }
  if (tables.length > 0)
    throw new CheckpointError(
      'NOT_FOUND',
      noShardPartsMessage(checkpoint, `the model's distributed embedding tables (${tables.join(', ')})`),
      checkpoint.checkpoint,
    );
}
