import { parseArgs } from 'node:util';
import type { Command } from '../command.js';
import { UsageError } from '../command.js';
import { exportModel } from '../job/export-model.js';
import { applyS3Options, S3_OPTIONS_HELP, s3Options } from '../job/s3-options.js';

const usage = `Usage: edl export --model-checkpoint PATH --model-def FILE --output DIR

Writes a trained model in TensorFlow.js's Layers format: DIR/model.json (topology and weights
manifest) and DIR/weights.bin, which plain TensorFlow.js loads with tf.loadLayersModel (no
elasticdl-ts code): through tf.io.fromMemory or a small file IOHandler, or 'file://DIR/model.json'
with @tensorflow/tfjs-node. It predicts what 'edl predict' predicts from the same checkpoint.

A model with distributed embedding layers (trained with --num-ps) is written with each table as
the 'embeddings' weight of a standard tf.layers.embedding layer, read from the checkpoint's
parameter-server shard files: inputDim is the layer's numBuckets, or the largest id + 1 for
unhashed ids, and rows the shards never created hold the initializer's value. A hashed layer's
exported model takes ids already reduced modulo numBuckets. A layer with a combiner becomes the
embedding, a globalAveragePooling1d over an example's ids and, for sum and sqrtn, a rescaling.

Options:
  --model-checkpoint PATH  a checkpoint file, or a checkpoint directory (its newest checkpoint);
                           s3://bucket/prefix/ too (its newest committed checkpoint)
  --model-def FILE         the model definition the checkpoint was trained with, or a zoo name
  --output DIR             where to write model.json and weights.bin (created when missing), or
                           s3://bucket/prefix/
  --max-table-bytes N      the largest embedding table to write whole, in bytes of float32
                           weights (default 1073741824, 1 GiB); a larger one is an error naming it

${S3_OPTIONS_HELP}

Example:
  edl export --model-checkpoint ./ckpt --model-def ./model.ts --output ./exported

Exit status: 0 written, 1 failed, 2 bad arguments.`;

/** `edl export`: a checkpoint to TensorFlow.js's model.json + weights.bin. */
export const command: Command = {
  name: 'export',
  usage,
  async run(argv, io) {
    let values: Record<string, string | boolean | undefined>;
    try {
      ({ values } = parseArgs({
        args: argv,
        strict: true,
        options: {
          'model-checkpoint': { type: 'string' },
          'model-def': { type: 'string' },
          output: { type: 'string' },
          'max-table-bytes': { type: 'string' },
          's3-endpoint': { type: 'string' },
          's3-anonymous': { type: 'boolean' },
        },
      }));
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    for (const flag of ['model-checkpoint', 'model-def', 'output']) {
      if (values[flag] === undefined) throw new UsageError(`--${flag} is required`);
    }
    const maxTableBytes = values['max-table-bytes'] as string | undefined;
    if (maxTableBytes !== undefined && !/^[1-9]\d*$/.test(maxTableBytes))
      throw new UsageError(
        `Expected a positive integer for --max-table-bytes but received '${maxTableBytes}'`,
      );
    await applyS3Options(s3Options(values));
    const exported = await exportModel(
      values['model-def'] as string,
      values['model-checkpoint'] as string,
      values.output as string,
      maxTableBytes === undefined ? {} : { maxTableBytes: Number(maxTableBytes) },
    );
    io.stdout.write(
      `exported model v${exported.modelVersion} of ${exported.checkpoint} to ${exported.modelJson} and ${exported.weights}\n`,
    );
    for (const t of exported.tables)
      io.stdout.write(
        `embedding table '${t.name}': ${t.inputDim} x ${t.dim} (${t.rowsCreated} rows trained, the others at the initializer's value)\n`,
      );
    return 0;
  },
};
