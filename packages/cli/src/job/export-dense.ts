import type { NamedTensor } from '@edl/proto';
import { decodeDensePart, shardPartsOf } from '@edl/ps';
import { byteSourceFor } from '@edl/storage';

/**
 * The dense variables of the checkpoint of `version` in `dir` (a directory, or an object-store
 * prefix) assembled from its shards' dense parts, for a job that held them on its
 * parameter-server shards (`--dense-on shards`); undefined when no shard wrote one (the master's
 * file then holds them).
 */
export async function readShardDenseVariables(
  dir: string,
  version: number,
): Promise<NamedTensor[] | undefined> {
  const { markers, locationOf } = await shardPartsOf(dir, version);
  if (!markers.some((m) => m.dense !== undefined)) return undefined;
  const variables: NamedTensor[] = [];
  for (const marker of markers) {
    if (marker.dense === undefined)
      throw new Error(
        `Checkpoint ${version} in ${dir}: shard ${marker.shardIndex} of ${marker.numShards} wrote no dense part while another did`,
      );
    const location = locationOf(marker.dense.file);
    const source = await byteSourceFor(location);
    const stat = await source.stat(location);
    variables.push(...decodeDensePart(await source.readRange(stat, 0, stat.size), location).variables);
  }
  return variables;
}
