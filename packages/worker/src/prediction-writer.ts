import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import type * as tf from '@tensorflow/tfjs-core';
import type { PredictionContext, PredictionOutputsProcessor } from './model-definition.js';

/**
 * The default prediction sink: one JSON line per record, `{"shard","record","output"}`, so that
 * outputs can be joined back to their inputs whatever order tasks ran in.
 */
export class JsonLinesPredictionWriter implements PredictionOutputsProcessor {
  readonly path: string;
  #stream: WriteStream | undefined;

  constructor(file: string) {
    this.path = path.resolve(file);
  }

  async process(outputs: tf.Tensor, context: PredictionContext): Promise<void> {
    if (this.#stream === undefined) {
      mkdirSync(path.dirname(this.path), { recursive: true });
      this.#stream = createWriteStream(this.path, { flags: 'a' });
    }
    const rows = (await outputs.array()) as unknown[];
    const lines = rows.map(
      (output, i) => `${JSON.stringify({ shard: context.shardName, record: context.start + i, output })}\n`,
    );
    const stream = this.#stream;
    if (!stream.write(lines.join(''))) await new Promise<void>((resolve) => stream.once('drain', resolve));
  }

  async close(): Promise<void> {
    const stream = this.#stream;
    if (stream === undefined) return;
    this.#stream = undefined;
    await new Promise<void>((resolve, reject) =>
      stream.end((error?: Error | null) => (error ? reject(error) : resolve())),
    );
  }
}
