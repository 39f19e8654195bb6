import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { checkNonEmptyString, checkSafeInteger } from '@edl/common';
import { EmbeddingTable } from '../sparse/embedding-table.js';
import { shardOfId } from '../sparse/placement.js';
import { decodeEmbeddingTable, encodeEmbeddingTable } from '../sparse/table-codec.js';
import { decodeDensePart, encodeDensePart } from './dense-part-codec.js';
import type { EmbeddingShard } from './embedding-shard.js';

/**
 * The marker of one shard's part of a checkpoint, `shard-<i>-of-<N>.json`, written after its table
 * files: a part without it was cut short and is never read.
 */
export interface ShardCheckpointMarker {
  readonly format: 'edl-ps-shard/1';
  readonly version: number;
  readonly shardIndex: number;
  readonly numShards: number;
  /** Each table's file (relative to the version's directory) and row count. */
  readonly tables: readonly { readonly name: string; readonly file: string; readonly rows: number }[];
  /** The shard's dense variables and their optimizer slots (a job with dense variables on the shards). */
  readonly dense?: { readonly file: string; readonly variables: readonly string[] };
}

const MARKER_PATTERN = /^shard-(\d+)-of-(\d+)\.json$/;

/** The directory, under a checkpoint directory, of the shard files of model version `version`. */
export function shardCheckpointDirName(version: number): string {
  return `ps-${String(version).padStart(12, '0')}`;
}

/** `shard-<i>-of-<N>`: how the names of a shard's files of a checkpoint begin. */
export function shardPartName(shard: EmbeddingShard): string {
  return `shard-${shard.shardIndex}-of-${shard.numShards}`;
}

/**
 * Whether `name` is a shard file written by a count of shards other than `numShards`: a part a job
 * killed before it committed the version left, to be deleted before this count writes its own.
 */
export function isOtherShardCount(name: string, numShards: number): boolean {
  const count = /^shard-\d+-of-(\d+)[-.]/.exec(name)?.[1];
  return count !== undefined && Number(count) !== numShards;
}

/** Writes `chunks` to `path` whole or not at all: a temporary file, fsync, rename. */
function writeAtomically(path: string, chunks: readonly Uint8Array[]): void {
  const temporary = `${path}.tmp-${process.pid}`;
  const fd = openSync(temporary, 'w');
  try {
    for (const chunk of chunks) {
      let written = 0;
      while (written < chunk.length) written += writeSync(fd, chunk, written);
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
}

function fsyncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes `shard`'s tables as its part of the checkpoint of `version` in `dir` (a local directory):
 * `ps-<version>/shard-<i>-of-<N>-t<k>.edlemb` per table (the layout of encodeEmbeddingTable), then
 * the marker. Synchronous on purpose: no push or pull runs on the shard while its rows are written,
 * so the files are one cut, and the row chunks written are views of memory nothing changes meanwhile.
 * Returns the marker's path and the rows written.
 */
export function saveShardCheckpoint(
  shard: EmbeddingShard,
  dir: string,
  version: number,
): { marker: string; rows: number } {
  checkNonEmptyString(dir, 'dir');
  checkSafeInteger(version, 'version');
  const versionDir = join(dir, shardCheckpointDirName(version));
  mkdirSync(versionDir, { recursive: true });
  // Files another shard count left here (a job killed before it committed this version, resumed
  // with another --num-ps) would make the set of markers mixed: they go. Same-count files are
  // this job's shards' own, replaced as they write.
  for (const name of readdirSync(versionDir))
    if (isOtherShardCount(name, shard.numShards)) rmSync(join(versionDir, name), { force: true });
  const part = shardPartName(shard);
  const tables = shard.tables().map((table, k) => {
    const file = `${part}-t${k}.edlemb`;
    writeAtomically(join(versionDir, file), encodeEmbeddingTable(table));
    return { name: table.name, file, rows: table.rowCount };
  });
  const dense = densePartOf(shard);
  if (dense !== undefined) writeAtomically(join(versionDir, dense.entry.file), dense.bytes);
  const marker: ShardCheckpointMarker = {
    format: 'edl-ps-shard/1',
    version,
    shardIndex: shard.shardIndex,
    numShards: shard.numShards,
    tables,
    ...(dense === undefined ? {} : { dense: dense.entry }),
  };
  const markerPath = join(versionDir, `${part}.json`);
  writeAtomically(markerPath, [new TextEncoder().encode(JSON.stringify(marker))]);
  fsyncDirectory(versionDir);
  return { marker: markerPath, rows: tables.reduce((sum, t) => sum + t.rows, 0) };
}

/**
 * The shard's dense part (`shard-<i>-of-<N>-dense<suffix>.edldense`, see dense-part-codec.ts) as its
 * marker names it, with its bytes; undefined when the shard holds no declared dense variables.
 */
export function densePartOf(
  shard: EmbeddingShard,
  suffix = '',
): { readonly entry: NonNullable<ShardCheckpointMarker['dense']>; readonly bytes: Uint8Array[] } | undefined {
  const dense = shard.dense;
  if (dense === undefined || !dense.declared) return undefined;
  const snapshot = dense.snapshot();
  return {
    entry: {
      file: `${shardPartName(shard)}-dense${suffix}.edldense`,
      variables: snapshot.variables.map((v) => v.name),
    },
    bytes: encodeDensePart(snapshot, dense.optimizer.config),
  };
}

/**
 * One marker's JSON, checked to be an `edl-ps-shard/1` marker of `version`; `path` names it in errors.
 */
export function parseShardMarker(text: string, path: string, version: number): ShardCheckpointMarker {
  let marker: ShardCheckpointMarker;
  try {
    marker = JSON.parse(text) as ShardCheckpointMarker;
  } catch (error) {
    throw new Error(`Shard checkpoint marker ${path} is not JSON: ${(error as Error).message}`);
  }
  if (marker.format !== 'edl-ps-shard/1' || marker.version !== version || !Array.isArray(marker.tables))
    throw new Error(`Shard checkpoint marker ${path} is not an edl-ps-shard/1 marker of version ${version}`);
  return marker;
}

/** Whether `name` (a file or object name, no directory) is a shard's marker. */
export function isShardMarkerName(name: string): boolean {
  return MARKER_PATTERN.test(name);
}

/**
 * `markers` sorted by shard, checked to be one complete set: every shard of the count they name.
 * A missing or extra part is an error naming `where` (the version's directory or prefix).
 */
export function checkShardMarkerSet(
  markers: readonly ShardCheckpointMarker[],
  version: number,
  where: string,
): ShardCheckpointMarker[] {
  const sorted = [...markers].sort((a, b) => a.shardIndex - b.shardIndex);
  const count = sorted[0]?.numShards;
  if (
    count === undefined ||
    sorted.length !== count ||
    sorted.some((m, i) => m.shardIndex !== i || m.numShards !== count)
  )
    throw new Error(
      `Checkpoint ${version} in ${where} has shard markers [${sorted.map((m) => `${m.shardIndex}/${m.numShards}`).join(', ')}], not one of each of its shards`,
    );
  return sorted;
}

/**
 * The markers of the checkpoint of `version` in `dir`, checked to be one complete set: every shard
 * of the count they name, all of the same version. A missing or extra part is an error naming it.
 */
export function readShardMarkers(dir: string, version: number): ShardCheckpointMarker[] {
  const versionDir = join(dir, shardCheckpointDirName(version));
  if (!existsSync(versionDir))
    throw new Error(`Checkpoint ${version} has no parameter-server shard files: ${versionDir} is missing`);
  const markers = readdirSync(versionDir)
    .filter(isShardMarkerName)
    .map((name) => {
      const path = join(versionDir, name);
      return parseShardMarker(readFileSync(path, 'utf8'), path, version);
    });
  return checkShardMarkerSet(markers, version, versionDir);
}

/**
 * Gathers one shard's rows from the table files of a checkpoint written by any number of shards:
 * each file added keeps the ids `shardOfId` gives this shard, so a checkpoint re-shards.
 */
export class ShardRowsGatherer {
  readonly #shard: EmbeddingShard;
  readonly #keepRow: (id: number) => boolean;
  readonly #restored = new Map<string, EmbeddingTable>();
  readonly #denseParts: ReturnType<typeof decodeDensePart>[] = [];

  constructor(shard: EmbeddingShard) {
    this.#shard = shard;
    this.#keepRow = (id) => shardOfId(id, shard.numShards) === shard.shardIndex;
  }

  /** Adds this shard's rows of one table file's `bytes`; `path` names the file in errors. */
  add(bytes: Uint8Array, path: string): void {
    // A plain Uint8Array over the same memory: the decoder's slice() must copy, and Buffer's does not.
    const plain = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const part = decodeEmbeddingTable(plain, path, { keepRow: this.#keepRow });
    const table = this.#restored.get(part.name);
    if (table === undefined) {
      this.#restored.set(part.name, part);
      return;
    }
    for (const view of part.slabViews()) table.restoreRows(view.ids, view.records, view.rowSteps);
  }

  /** Adds one shard's dense part (every shard's is read: the variables are placed again). */
  addDense(bytes: Uint8Array, path: string): void {
    this.#denseParts.push(decodeDensePart(bytes, path));
  }

  /**
   * Replaces the shard's tables by the rows gathered, and its dense variables by its share of the
   * dense parts at `denseVersion` (default: the checkpoint's `version`); returns the rows.
   */
  replaceShardTables(version: number, denseVersion = version): number {
    const shard = this.#shard;
    shard.dense?.restore(this.#denseParts, shard.shardIndex, shard.numShards, denseVersion);
    // A table declared since the checkpoint stays, empty: workers that declared it keep using it.
    for (const table of this.#shard.tables())
      if (!this.#restored.has(table.name)) this.#restored.set(table.name, emptyCopy(table));
    const tables = [...this.#restored.values()];
    this.#shard.replaceTables(tables);
    return tables.reduce((sum, t) => sum + t.rowCount, 0);
  }
}

/**
 * Replaces `shard`'s tables by its rows of the checkpoint of `version` in `dir`: every shard file of
 * every table is read and keeps the ids `shardOfId` gives this shard, so a checkpoint written by
 * another number of shards re-shards. Returns the rows restored.
 */
export function restoreShardCheckpoint(
  shard: EmbeddingShard,
  dir: string,
  version: number,
  denseVersion?: number,
): number {
  const markers = readShardMarkers(dir, version);
  const versionDir = join(dir, shardCheckpointDirName(version));
  const gatherer = new ShardRowsGatherer(shard);
  for (const marker of markers) {
    for (const entry of marker.tables) {
      const path = join(versionDir, entry.file);
      gatherer.add(readFileSync(path), path);
    }
    if (marker.dense !== undefined) {
      const path = join(versionDir, marker.dense.file);
      gatherer.addDense(readFileSync(path), path);
    }
  }
  return gatherer.replaceShardTables(version, denseVersion);
}

/**
 * Empties every table of `shard`, keeping its settings: each row starts from the initializer again;
 * its dense variables are dropped until a worker declares their initial values again, at version
 * `denseVersion` (default 0).
 */
export function resetShard(shard: EmbeddingShard, denseVersion = 0): void {
  shard.replaceTables(shard.tables().map(emptyCopy));
  shard.dense?.restore([], shard.shardIndex, shard.numShards, denseVersion);
}

function emptyCopy(table: EmbeddingTable): EmbeddingTable {
  return new EmbeddingTable({
    name: table.name,
    dim: table.dim,
    seed: table.seed,
    optimizer: table.optimizer.config,
    initializer: table.initializer.config,
  });
}
