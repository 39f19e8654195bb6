/**
 * Where a checkpoint of a job with parameter-server shards holds its dense variables, and the
 * refusal of a job that resumes from it with them placed elsewhere (`--dense-on`, issue 25). With
 * the dense variables on the shards the master's own file holds their initial values (the master
 * never applies a dense gradient), and with them in the master the shard parts hold none: a job
 * resuming with the other placement would train on from initial or stale values without a word.
 */
import { shardPartsOf } from '@edl/ps';
import type { Checkpoint, DensePlacement } from './checkpoint.js';
import { CheckpointError } from './errors.js';

/** What each placement is called in a refusal, and the flag that asks for it. */
const PLACEMENT_TEXT: Record<DensePlacement, string> = {
  shards: 'on the parameter-server shards (--dense-on shards)',
  master: 'in the master (--dense-on master)',
};

/**
 * Where `checkpoint` (its shard parts in `dir`) holds its dense variables: its header's `denseOn`,
 * or, in a checkpoint written before that field, its shard parts (a dense part in any: on the
 * shards). Undefined for a checkpoint of a job without shards, or when
 * its shard parts cannot be read (restoring them fails then, naming why).
 */
export async function densePlacementOf(
  checkpoint: Checkpoint,
  dir: string,
): Promise<DensePlacement | undefined> {
  if (checkpoint.parameterServers === undefined) return undefined;
  if (checkpoint.denseOn !== undefined) return checkpoint.denseOn;
  let markers: Awaited<ReturnType<typeof shardPartsOf>>['markers'];
  try {
    ({ markers } = await shardPartsOf(dir, checkpoint.store.version));
  } catch {
    return undefined;
  }
  return markers.some((marker) => marker.dense !== undefined) ? 'shards' : 'master';
}

/**
 * Throws a CheckpointError (DENSE_PLACEMENT_MISMATCH) when the checkpoint `found` holds its dense
 * variables elsewhere than `denseOn`, the resuming job's placement: one line naming the checkpoint,
 * the placement it was written with and the flag to resume with. Converting is left out on
 * purpose (docs/master.md): the optimizer's slots live where the variables did.
 */
export async function refuseDensePlacementMismatch(
  found: { readonly path: string; readonly checkpoint: Checkpoint },
  dir: string,
  denseOn: DensePlacement,
): Promise<void> {
  const written = await densePlacementOf(found.checkpoint, dir);
  if (written === undefined || written === denseOn) return;
  throw new CheckpointError(
    'DENSE_PLACEMENT_MISMATCH',
    `the checkpoint at ${found.path} holds its dense variables ${PLACEMENT_TEXT[written]}; resume with --dense-on ${written}, or start a new job (another --checkpoint-dir): with --dense-on ${denseOn} its dense layers would not continue from the values it saved`,
    found.path,
  );
}
