/**
 * A shard's part of a checkpoint in an object store (`--checkpoint-dir s3://bucket/prefix/`), which
 * has no rename: under `ps-<version>/`, each table object under a name no other write uses
 * (`shard-<i>-of-<N>-t<k>-<16 hex>.edlemb`), uploaded whole, then the shard's marker
 * (`shard-<i>-of-<N>.json`) naming them. The master's manifest, written after every shard answered,
 * stays the commit point: a part of a version no manifest names is never read.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { byteSourceFor, deleteObject, putObject, schemeOf } from '@edl/storage';
import { encodeEmbeddingTable } from '../sparse/table-codec.js';
import type { EmbeddingShard } from './embedding-shard.js';
import {
  checkShardMarkerSet,
  densePartOf,
  isOtherShardCount,
  isShardMarkerName,
  parseShardMarker,
  readShardMarkers,
  restoreShardCheckpoint,
  type ShardCheckpointMarker,
  ShardRowsGatherer,
  saveShardCheckpoint,
  shardCheckpointDirName,
  shardPartName,
} from './shard-checkpoint.js';

/** Whether checkpoints in `dir` go to an object store: a URL of a scheme other than `file:`. */
export function isObjectStoreDir(dir: string): boolean {
  const scheme = schemeOf(dir);
  return scheme !== undefined && scheme !== 'file';
}

/** The key prefix, ending in `/`, of the shard parts of `version` under the checkpoint prefix `dir`. */
export function shardPartsPrefix(dir: string, version: number): string {
  return `${dir.endsWith('/') ? dir : `${dir}/`}${shardCheckpointDirName(version)}/`;
}

/**
 * Writes `shard`'s part of the checkpoint of `version` to `dir`, a local directory or an object
 * store (see the top of this file); resolves to the marker's location and the rows written.
 */
export async function saveShardPart(
  shard: EmbeddingShard,
  dir: string,
  version: number,
): Promise<{ marker: string; rows: number }> {
  if (!isObjectStoreDir(dir)) return saveShardCheckpoint(shard, dir, version);
  // The cut is taken here, synchronously: each table's bytes are copied before the first upload
  // yields, so pulls that create rows meanwhile cannot change what is written.
  const part = shardPartName(shard);
  const tables = shard.tables().map((table, k) => ({
    name: table.name,
    file: `${part}-t${k}-${randomBytes(8).toString('hex')}.edlemb`,
    rows: table.rowCount,
    bytes: Buffer.concat(encodeEmbeddingTable(table)),
  }));
  // Named once, as the tables are: a marker never names a half-replaced dense part.
  const dense = densePartOf(shard, `-${randomBytes(8).toString('hex')}`);
  const prefix = shardPartsPrefix(dir, version);
  const before = await listNames(prefix);
  for (const name of before)
    if (isOtherShardCount(name, shard.numShards)) await deleteObject(`${prefix}${name}`);
  for (const table of tables) await putObject(`${prefix}${table.file}`, table.bytes);
  if (dense !== undefined) await putObject(`${prefix}${dense.entry.file}`, Buffer.concat(dense.bytes));
  const marker: ShardCheckpointMarker = {
    format: 'edl-ps-shard/1',
    version,
    shardIndex: shard.shardIndex,
    numShards: shard.numShards,
    tables: tables.map(({ name, file, rows }) => ({ name, file, rows })),
    ...(dense === undefined ? {} : { dense: dense.entry }),
  };
  const markerLocation = `${prefix}${part}.json`;
  await putObject(markerLocation, Buffer.from(JSON.stringify(marker), 'utf8'));
  // This part's table objects of an earlier write of the version: the marker no longer names them.
  for (const name of before)
    if (
      (name.startsWith(`${part}-t`) && name.endsWith('.edlemb')) ||
      (name.startsWith(`${part}-dense`) && name.endsWith('.edldense') && name !== dense?.entry.file)
    )
      await deleteObject(`${prefix}${name}`);
  return { marker: markerLocation, rows: tables.reduce((sum, t) => sum + t.rows, 0) };
}

/**
 * The markers of the checkpoint of `version` under the object-store prefix `dir`, checked to be
 * one complete set (see `readShardMarkers` for files).
 */
export async function readObjectStoreShardMarkers(
  dir: string,
  version: number,
): Promise<ShardCheckpointMarker[]> {
  const prefix = shardPartsPrefix(dir, version);
  const names = (await listNames(prefix)).filter(isShardMarkerName);
  if (names.length === 0)
    throw new Error(`Checkpoint ${version} has no parameter-server shard objects under ${prefix}`);
  const markers: ShardCheckpointMarker[] = [];
  for (const name of names) {
    const location = `${prefix}${name}`;
    markers.push(parseShardMarker((await readWhole(location)).toString('utf8'), location, version));
  }
  return checkShardMarkerSet(markers, version, prefix);
}

/**
 * The shard parts of the checkpoint of `version` in `dir`, a local directory or an object store:
 * the markers, one complete set, and where each table file they name is (a path or a URL).
 */
export async function shardPartsOf(
  dir: string,
  version: number,
): Promise<{ readonly markers: ShardCheckpointMarker[]; readonly locationOf: (file: string) => string }> {
  if (!isObjectStoreDir(dir)) {
    const versionDir = join(dir, shardCheckpointDirName(version));
    return { markers: readShardMarkers(dir, version), locationOf: (file) => join(versionDir, file) };
  }
  const prefix = shardPartsPrefix(dir, version);
  return {
    markers: await readObjectStoreShardMarkers(dir, version),
    locationOf: (file) => `${prefix}${file}`,
  };
}

/**
 * Replaces `shard`'s tables by its rows of the checkpoint of `version` in `dir`, a local directory
 * or an object store, re-sharding a checkpoint of any number of shards; resolves to the rows
 * restored. Table objects are read one at a time, so at most one is held beside the rows gathered.
 */
export async function restoreShardPart(
  shard: EmbeddingShard,
  dir: string,
  version: number,
  denseVersion?: number,
): Promise<number> {
  if (!isObjectStoreDir(dir)) return restoreShardCheckpoint(shard, dir, version, denseVersion);
  const { markers, locationOf } = await shardPartsOf(dir, version);
  const gatherer = new ShardRowsGatherer(shard);
  for (const marker of markers) {
    for (const entry of marker.tables) {
      const location = locationOf(entry.file);
      gatherer.add(await readWhole(location), location);
    }
    if (marker.dense !== undefined) {
      const location = locationOf(marker.dense.file);
      gatherer.addDense(await readWhole(location), location);
    }
  }
  return gatherer.replaceShardTables(version, denseVersion);
}

/** The names of the objects directly under `prefix`. */
async function listNames(prefix: string): Promise<string[]> {
  const listed = await (await byteSourceFor(prefix)).list(prefix);
  return listed.map((stat) => stat.location.slice(stat.location.lastIndexOf('/') + 1));
}

/** The whole object at `location`, read through @edl/storage's byte source of its scheme. */
async function readWhole(location: string): Promise<Buffer> {
  const source = await byteSourceFor(location);
  const stat = await source.stat(location);
  const bytes = await source.readRange(stat, 0, stat.size);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
