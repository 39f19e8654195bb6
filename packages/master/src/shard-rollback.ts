import { ShardRpcError } from '@edl/proto';
import { type Checkpoint, loadLatestCheckpoint } from './checkpoint.js';
import type { CheckpointError } from './errors.js';

/**
 * The job's parameter-server shards as the master's checkpoints and roll-backs reach them (an
 * EmbeddingClient of @edl/proto is one).
 */
export interface ShardCheckpointWriter {
  readonly numShards: number;
  /** Resolves once every shard wrote its part of the checkpoint of `version` in `dir`. */
  saveShards(version: number, dir: string): Promise<unknown>;
  /**
   * Has every shard replace its rows by its share of the checkpoint of `version` in `dir`, or, with
   * `version` undefined, empty its tables (rows start from the initializer again).
   */
  restoreShards(version: number | undefined, dir: string): Promise<number[]>;
}

/** What a roll-back returns to: the last committed checkpoint, or the job's start. */
export interface RollbackCut {
  /** Undefined: the job's start (no checkpoint was committed yet). */
  readonly checkpoint?: Checkpoint;
  readonly path?: string;
}

/**
 * The newest committed checkpoint of `dir`, the cut a roll-back returns to; the job's start when
 * there is none (or no `dir`).
 */
export async function lastCommittedCut(
  dir: string | undefined,
  onSkip: (error: CheckpointError) => void,
): Promise<RollbackCut> {
  const found = dir === undefined ? undefined : await loadLatestCheckpoint(dir, onSkip);
  return found === undefined ? {} : { checkpoint: found.checkpoint, path: found.path };
}

/**
 * Restores every shard to `version` of `dir` (undefined: the initializer), retrying while a shard
 * is UNAVAILABLE: a relaunched shard's channel may still be reconnecting when it already listens.
 */
export async function restoreShardsWhenUp(
  writer: ShardCheckpointWriter,
  version: number | undefined,
  dir: string,
  timeoutMs = 60_000,
): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await writer.restoreShards(version, dir);
    } catch (error) {
      if (!(error instanceof ShardRpcError) || error.code !== 'UNAVAILABLE' || Date.now() >= deadline)
        throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** attempt)));
    }
  }
}
