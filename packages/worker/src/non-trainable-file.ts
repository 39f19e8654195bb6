import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { NamedTensor } from '@edl/proto';
import { WorkerError } from './errors.js';

/** File name of the non-trainable weights saved beside a job's checkpoints. */
export const NON_TRAINABLE_FILE = 'non-trainable-weights.json';

const FORMAT = 'edl-non-trainable-weights-v1';

interface FileContents {
  readonly format: string;
  readonly modelVersion: number;
  readonly weights: ReadonlyArray<{ name: string; shape: number[]; values: number[] }>;
}

/**
 * Writes non-trainable weights (batch-norm statistics, which the master does not hold) into `dir`,
 * atomically (write then rename), so that evaluation and prediction jobs started from the
 * checkpoints in `dir` normalise like the trained model.
 */
export function saveNonTrainableWeights(
  dir: string,
  weights: readonly NamedTensor[],
  modelVersion: number,
): string {
  const file = path.join(dir, NON_TRAINABLE_FILE);
  const contents: FileContents = {
    format: FORMAT,
    modelVersion,
    weights: weights.map((w) => ({ name: w.name, shape: [...w.shape], values: Array.from(w.values) })),
  };
  mkdirSync(dir, { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify(contents));
  // rename is atomic on one file system: a reader never sees half a file.
  renameSync(temporary, file);
  return file;
}

/**
 * Reads the non-trainable weights saved beside a checkpoint: `checkpoint` is a checkpoint directory
 * or a checkpoint file in it. Resolves undefined when none were saved (a model without any).
 */
export function loadNonTrainableWeights(checkpoint: string): NamedTensor[] | undefined {
  const dir =
    existsSync(checkpoint) && statSync(checkpoint).isDirectory() ? checkpoint : path.dirname(checkpoint);
  const file = path.join(dir, NON_TRAINABLE_FILE);
  if (!existsSync(file)) return undefined;
  let contents: FileContents;
  try {
    contents = JSON.parse(readFileSync(file, 'utf8')) as FileContents;
  } catch (error) {
    throw new WorkerError('DATA_ERROR', `${file} is not valid JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (contents.format !== FORMAT || !Array.isArray(contents.weights)) {
    throw new WorkerError('DATA_ERROR', `${file} is not an ${FORMAT} file`);
  }
  return contents.weights.map((w) => ({ name: w.name, shape: w.shape, values: Float32Array.from(w.values) }));
}
