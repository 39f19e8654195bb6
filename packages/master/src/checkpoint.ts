import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { OptimizerConfig } from '@edl/common';
import {
  decodeStoreCheckpoint,
  encodeStoreCheckpoint,
  type ParameterStoreSnapshot,
  type StoreCheckpointHeader,
  shardCheckpointDirName,
} from '@edl/ps';
import { openWriter } from '@edl/storage';
import { CheckpointError } from './errors.js';
import {
  isObjectStoreLocation,
  listObjectStoreCheckpoints,
  manifestLocation,
  readObjectStoreCheckpoint,
  writeObjectStoreCheckpoint,
} from './object-store-checkpoint.js';
import type { TaskManagerState } from './tasks/task-state.js';

/** What a checkpoint holds: the parameter store and the task manager, taken in one synchronous step. */
export interface Checkpoint {
  readonly store: ParameterStoreSnapshot;
  readonly optimizer: OptimizerConfig;
  readonly taskManager: TaskManagerState;
  /**
   * Present when the job's embedding rows live on parameter-server shards: the checkpoint's shard
   * files (`ps-<version>/` beside it, docs/master.md) were all written before this file.
   */
  readonly parameterServers?: CheckpointShards;
  /**
   * With `parameterServers`: where the job held its dense variables (`--dense-on`), when it said.
   * Absent in a checkpoint written before the field existed: its shard parts tell (a dense part
   * present or not, see dense-placement.ts).
   */
  readonly denseOn?: DensePlacement;
}

/** Where a job with parameter-server shards holds its dense variables (`--dense-on`). */
export type DensePlacement = 'shards' | 'master';

/** The parameter-server shards that wrote a checkpoint's shard files. */
export interface CheckpointShards {
  readonly numShards: number;
}

const MAGIC = Buffer.from('EDLCKPT1', 'latin1');
const FILE_PATTERN = /^checkpoint-(\d{12})\.edlckpt$/;

/** The JSON header: the store's fields (@edl/ps) and the task state, in the order they are written. */
interface Header extends StoreCheckpointHeader {
  readonly format: 'edl-checkpoint/1';
  readonly createdAt: string;
  readonly taskManager: TaskManagerState;
  /** Only in a checkpoint of a job with parameter-server shards. */
  readonly parameterServers?: CheckpointShards;
  /** Only beside `parameterServers`, and only in checkpoints written since the field exists. */
  readonly denseOn?: DensePlacement;
  /** CRC-32 of the float32 payload. */
  readonly payloadCrc32: number;
}

/** The file name of the checkpoint of a model version. */
export function checkpointFileName(version: number): string {
  return `checkpoint-${String(version).padStart(12, '0')}.edlckpt`;
}

/** A checkpoint's bytes, in the order they are written, and its model version. */
function encodeCheckpoint(checkpoint: Checkpoint): { readonly version: number; readonly parts: Buffer[] } {
  const { header: store, payload } = encodeStoreCheckpoint(checkpoint.store, checkpoint.optimizer);
  // Written field by field: the key order is the file's, as it always was.
  const header: Header = {
    format: 'edl-checkpoint/1',
    version: store.version,
    createdAt: new Date().toISOString(),
    optimizer: store.optimizer,
    optimizerStep: store.optimizerStep,
    variables: store.variables,
    slots: store.slots,
    taskManager: checkpoint.taskManager,
    ...(checkpoint.parameterServers === undefined ? {} : { parameterServers: checkpoint.parameterServers }),
    ...(checkpoint.denseOn === undefined ? {} : { denseOn: checkpoint.denseOn }),
    payloadCrc32: crc32(payload),
  };
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32LE(headerBytes.length);
  return { version: header.version, parts: [MAGIC, length, headerBytes, payload] };
}

/**
 * Writes a checkpoint to `dir` atomically and keeps the newest `keep`. Layout: 'EDLCKPT1', uint32 LE
 * header length, JSON header, float32 LE payload.
 *
 * - A local directory: a temporary file in the same directory, fsync, rename, fsync of the
 *   directory (@edl/storage's `openWriter`). A crash leaves the previous checkpoints intact.
 * - An object store (`s3://bucket/prefix/`), which has no rename: the checkpoint object under a
 *   unique name, then a manifest naming it, written last (see object-store-checkpoint.ts). The
 *   result is then the manifest's location.
 */
export async function writeCheckpoint(dir: string, checkpoint: Checkpoint, keep = 3): Promise<string> {
  const { version, parts } = encodeCheckpoint(checkpoint);
  if (isObjectStoreLocation(dir)) return writeObjectStoreCheckpoint(dir, version, parts, keep);
  const finalPath = join(dir, checkpointFileName(version));
  try {
    const file = await openWriter(finalPath);
    for (const part of parts) await file.write(part);
    await file.close();
  } catch (error) {
    throw new CheckpointError(
      'WRITE_FAILED',
      `Cannot write checkpoint ${finalPath}: ${String(error)}`,
      finalPath,
      {
        cause: error,
      },
    );
  }
  const versions = await listCheckpoints(dir);
  for (const old of versions.slice(0, Math.max(0, versions.length - keep))) {
    await rm(join(dir, checkpointFileName(old)), { force: true });
    await rm(join(dir, shardCheckpointDirName(old)), { recursive: true, force: true });
  }
  return finalPath;
}

/** Model versions of the checkpoints in `dir`, oldest first (none when the directory is missing). */
export async function listCheckpoints(dir: string): Promise<number[]> {
  if (isObjectStoreLocation(dir)) return listObjectStoreCheckpoints(dir);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names
    .map((name) => FILE_PATTERN.exec(name)?.[1])
    .filter((v): v is string => v !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

/**
 * Reads and verifies one checkpoint: a file, or an object-store checkpoint by its manifest's
 * location (or the checkpoint object's own).
 */
export async function readCheckpoint(path: string): Promise<Checkpoint> {
  const bytes = isObjectStoreLocation(path)
    ? await readObjectStoreCheckpoint(path)
    : await readFile(path).catch((error: unknown) => {
        throw new CheckpointError('READ_FAILED', `Cannot read checkpoint ${path}: ${String(error)}`, path, {
          cause: error,
        });
      });
  const fail = (message: string): never => {
    throw new CheckpointError('CORRUPT', `Checkpoint ${path} is corrupt: ${message}`, path);
  };
  if (bytes.length < 12 || !bytes.subarray(0, 8).equals(MAGIC))
    fail('bad magic (not an elasticdl-ts checkpoint)');
  const headerLength = bytes.readUInt32LE(8);
  if (12 + headerLength > bytes.length) fail(`header of ${headerLength} bytes runs past the end of the file`);
  let header: Header;
  try {
    header = JSON.parse(bytes.subarray(12, 12 + headerLength).toString('utf8')) as Header;
  } catch (error) {
    return fail(`header is not JSON (${String(error)})`);
  }
  if (header.format !== 'edl-checkpoint/1') fail(`unknown format ${String(header.format)}`);
  const payload = bytes.subarray(12 + headerLength);
  if (payload.length % 4 !== 0) fail(`payload of ${payload.length} bytes is not float32 data`);
  if (crc32(payload) !== header.payloadCrc32) fail('payload CRC-32 mismatch');
  return {
    ...decodeStoreCheckpoint(header, payload, fail),
    taskManager: header.taskManager,
    ...(header.parameterServers === undefined ? {} : { parameterServers: header.parameterServers }),
    ...(header.denseOn === undefined ? {} : { denseOn: header.denseOn }),
  };
}

/**
 * The newest readable checkpoint of `dir`, or undefined when there is none. A corrupt newest file
 * (it cannot be, short of disk damage, since writes are atomic) falls back to the one before, and
 * `onSkip` hears why; so does, in an object store, a manifest whose checkpoint object is missing.
 * Only committed checkpoints are seen: in an object store, those with a manifest.
 */
export async function loadLatestCheckpoint(
  dir: string,
  onSkip: (error: CheckpointError) => void = () => {},
): Promise<{ path: string; checkpoint: Checkpoint } | undefined> {
  const versions = await listCheckpoints(dir);
  for (const version of versions.reverse()) {
    const path = isObjectStoreLocation(dir)
      ? manifestLocation(dir, version)
      : join(dir, checkpointFileName(version));
    try {
      return { path, checkpoint: await readCheckpoint(path) };
    } catch (error) {
      if (error instanceof CheckpointError) onSkip(error);
      else throw error;
    }
  }
  return undefined;
}

/**
 * The checkpoint `path` names, for loading a model: a checkpoint file, or a directory's newest
 * checkpoint; in an object store, a manifest or checkpoint object, or a prefix's newest checkpoint.
 * Undefined for a directory or prefix that holds none.
 */
export async function findCheckpoint(
  path: string,
): Promise<{ path: string; checkpoint: Checkpoint } | undefined> {
  const isDirectory = isObjectStoreLocation(path)
    ? !/\.(edlckpt|manifest\.json)$/.test(path)
    : (await stat(path)).isDirectory();
  return isDirectory ? loadLatestCheckpoint(path) : { path, checkpoint: await readCheckpoint(path) };
}
