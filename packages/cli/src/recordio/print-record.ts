import type { BufferedOutput } from './output.js';
import { formatRecord, OUTPUT_FORMATS, type OutputFormat } from './record-format.js';

/** The options `edl recordio cat` and `edl tfrecord cat` share. */
export const CAT_OPTIONS = {
  start: { type: 'integer' },
  count: { type: 'integer' },
  format: { type: 'choice', choices: OUTPUT_FORMATS },
} as const;

/**
 * Writes record `index` in `format`; a record the format cannot show (e.g. not a tf.train.Example)
 * fails with one line naming `location`, after the records before it. Returns false once the
 * reader of standard output has gone (EPIPE), so the caller stops reading.
 */
export async function printRecord(
  out: BufferedOutput,
  record: Uint8Array,
  index: number,
  format: OutputFormat,
  location: string,
): Promise<boolean> {
  let pieces: (string | Uint8Array)[];
  try {
    pieces = formatRecord(record, index, format);
  } catch (error) {
    throw new Error(`${(error as Error).message} (in ${location})`);
  }
  for (const piece of pieces) await out.write(piece);
  return !out.closed;
}
