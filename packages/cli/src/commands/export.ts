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

Options:
  --model-checkpoint PATH  a checkpoint file, or a checkpoint directory (its newest checkpoint);
                           s3://bucket/prefix/ too (its newest committed checkpoint)
  --model-def FILE         the model definition the checkpoint was trained with, or a zoo name
  --output DIR             where to write model.json and weights.bin (created when missing), or
                           s3://bucket/prefix/

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
    await applyS3Options(s3Options(values));
    const exported = await exportModel(
      values['model-def'] as string,
      values['model-checkpoint'] as string,
      values.output as string,
    );
    io.stdout.write(
      `exported model v${exported.modelVersion} of ${exported.checkpoint} to ${exported.modelJson} and ${exported.weights}\n`,
    );
    return 0;
  },
};
