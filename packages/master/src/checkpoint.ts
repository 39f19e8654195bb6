import { closeSync, fsyncSync, openSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { OptimizerConfig, OptimizerSlots } from '@edl/common';
import type { NamedTensor } from '@edl/proto';
import { CheckpointError } from './errors.js';
import type { ParameterStoreSnapshot } from './parameter-store.js';
import type { TaskManagerState } from './task-manager.js';

/** What a checkpoint holds: the parameter store and the task manager, taken in one synchronous step. */
export interface Checkpoint {
  readonly store: ParameterStoreSnapshot;
  readonly optimizer: OptimizerConfig;
  readonly taskManager: TaskManagerState;
}

const MAGIC = Buffer.from('EDLCKPT1', 'latin1');
/** Float32 data is stored little-endian; on such hosts it is copied in bulk. */
const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const FILE_PATTERN = /^checkpoint-(\d{12})\.edlckpt$/;

interface Header {
  readonly format: 'edl-checkpoint/1';
  readonly version: number;
  readonly createdAt: string;
  readonly optimizer: OptimizerConfig;
  readonly optimizerStep: number;
  readonly variables: Array<{ name: string; shape: readonly number[]; offset: number; length: number }>;
  readonly slots: Array<{ variable: string; slot: string; offset: number; length: number }>;
  readonly taskManager: TaskManagerState;
  /** CRC-32 of the float32 payload. */
  readonly payloadCrc32: number;
}

/** The file name of the checkpoint of a model version. */
export function checkpointFileName(version: number): string {
  return `checkpoint-${String(version).padStart(12, '0')}.edlckpt`;
}

/**
 * Writes a checkpoint to `dir` atomically: a temporary file in the same directory, fsync, rename,
 * fsync of the directory. A crash leaves the previous checkpoints intact. Keeps the newest `keep`.
 * Layout: 'EDLCKPT1', uint32 LE header length, JSON header, float32 LE payload.
 */
export async function writeCheckpoint(dir: string, checkpoint: Checkpoint, keep = 3): Promise<string> {
  await mkdir(dir, { recursive: true });
  const arrays: Float32Array[] = [];
  let offset = 0;
  const place = (values: Float32Array) => {
    arrays.push(values);
    const at = offset;
    offset += values.length;
    return at;
  };
  const variables = checkpoint.store.variables.map((v) => ({
    name: v.name,
    shape: v.shape,
    offset: place(v.values),
    length: v.values.length,
  }));
  const slots: Header['slots'] = [];
  for (const [variable, byName] of checkpoint.store.slots) {
    for (const [slot, values] of byName)
      slots.push({ variable, slot, offset: place(values), length: values.length });
  }
  const payload = Buffer.alloc(offset * 4);
  let at = 0;
  for (const values of arrays) {
    if (littleEndian) {
      payload.set(new Uint8Array(values.buffer, values.byteOffset, values.length * 4), at * 4);
    } else {
      for (let i = 0; i < values.length; i++) payload.writeFloatLE(values[i] as number, (at + i) * 4);
    }
    at += values.length;
  }
  const header: Header = {
    format: 'edl-checkpoint/1',
    version: checkpoint.store.version,
    createdAt: new Date().toISOString(),
    optimizer: checkpoint.optimizer,
    optimizerStep: checkpoint.store.optimizerStep,
    variables,
    slots,
    taskManager: checkpoint.taskManager,
    payloadCrc32: crc32(payload),
  };
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32LE(headerBytes.length);
  const finalPath = join(dir, checkpointFileName(header.version));
  const tempPath = join(dir, `.${checkpointFileName(header.version)}.${process.pid}.tmp`);
  try {
    const file = await open(tempPath, 'w');
    try {
      await file.writev([MAGIC, length, headerBytes, payload]);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tempPath, finalPath);
    const dirFd = openSync(dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  } catch (error) {
    await rm(tempPath, { force: true });
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
  }
  return finalPath;
}

/** Model versions of the checkpoints in `dir`, oldest first (none when the directory is missing). */
export async function listCheckpoints(dir: string): Promise<number[]> {
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

/** Reads and verifies one checkpoint file. */
export async function readCheckpoint(path: string): Promise<Checkpoint> {
  const bytes = await readFile(path).catch((error: unknown) => {
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
  const floats = payload.length / 4;
  const take = (offset: number, length: number, what: string): Float32Array => {
    if (offset < 0 || length < 0 || offset + length > floats) fail(`${what} lies outside the payload`);
    const values = new Float32Array(length);
    if (littleEndian) {
      new Uint8Array(values.buffer).set(payload.subarray(offset * 4, (offset + length) * 4));
    } else {
      for (let i = 0; i < length; i++) values[i] = payload.readFloatLE((offset + i) * 4);
    }
    return values;
  };
  const variables: NamedTensor[] = header.variables.map((v) => ({
    name: v.name,
    shape: v.shape,
    values: take(v.offset, v.length, `variable '${v.name}'`),
  }));
  const slots: OptimizerSlots = new Map();
  for (const s of header.slots) {
    let byName = slots.get(s.variable);
    if (byName === undefined) {
      byName = new Map();
      slots.set(s.variable, byName);
    }
    byName.set(s.slot, take(s.offset, s.length, `slot '${s.slot}' of '${s.variable}'`));
  }
  return {
    store: { version: header.version, variables, optimizerStep: header.optimizerStep, slots },
    optimizer: header.optimizer,
    taskManager: header.taskManager,
  };
}

/**
 * The newest readable checkpoint of `dir`, or undefined when there is none. A corrupt newest file
 * (it cannot be, short of disk damage, since writes are atomic) falls back to the one before, and
 * `onSkip` hears why.
 */
export async function loadLatestCheckpoint(
  dir: string,
  onSkip: (error: CheckpointError) => void = () => {},
): Promise<{ path: string; checkpoint: Checkpoint } | undefined> {
  const versions = await listCheckpoints(dir);
  for (const version of versions.reverse()) {
    const path = join(dir, checkpointFileName(version));
    try {
      return { path, checkpoint: await readCheckpoint(path) };
    } catch (error) {
      if (error instanceof CheckpointError) onSkip(error);
      else throw error;
    }
  }
  return undefined;
}
