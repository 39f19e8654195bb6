import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { isUrl, type JobOptions } from './job-options.js';

/** Where `edl train` leaves its checkpoints and the exported model. */
export interface TrainOutput {
  readonly checkpointDir: string;
  /** The TensorFlow.js Layers model (model.json + weights.bin) exported after training. */
  readonly modelDir: string;
  /** Set when no --checkpoint-dir was given: ./edl-output/<job>/. */
  readonly defaultRoot?: string;
}

function timestamp(now: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${now.getFullYear()}${pad(now.getMonth() + 1)}${pad(now.getDate())}-${pad(now.getHours())}${pad(now.getMinutes())}${pad(now.getSeconds())}`;
}

/**
 * The output places of a training job: with --checkpoint-dir DIR, checkpoints in DIR and the
 * exported model in DIR/model (DIR a directory or an `s3://bucket/prefix/`); without it, ./edl-output/<job>/checkpoints and
 * ./edl-output/<job>/model, where <job> is `train-<date>-<time>` (a new name for every job), so
 * that a trained model is never thrown away.
 */
export function trainOutput(
  options: Pick<JobOptions, 'checkpointDir'>,
  cwd = process.cwd(),
  now = new Date(),
  job = 'train',
): TrainOutput {
  if (options.checkpointDir !== undefined && isUrl(options.checkpointDir)) {
    // An object store (s3://bucket/prefix/): the model goes under the same prefix.
    const checkpointDir = options.checkpointDir;
    return { checkpointDir, modelDir: `${checkpointDir.replace(/\/+$/, '')}/model` };
  }
  if (options.checkpointDir !== undefined) {
    const checkpointDir = path.resolve(cwd, options.checkpointDir);
    return { checkpointDir, modelDir: path.join(checkpointDir, 'model') };
  }
  const base = path.join(cwd, 'edl-output', `${job}-${timestamp(now)}`);
  mkdirSync(path.dirname(base), { recursive: true });
  let root = base;
  // Created here, exclusively: two jobs started in the same second get two directories.
  for (let n = 2; ; n++) {
    try {
      mkdirSync(root);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      root = `${base}-${n}`;
    }
  }
  return {
    checkpointDir: path.join(root, 'checkpoints'),
    modelDir: path.join(root, 'model'),
    defaultRoot: root,
  };
}
