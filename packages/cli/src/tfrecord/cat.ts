import { TFRecordReader } from '@edl/recordio';
import { parseCommandLine } from '../args.js';
import type { CommandIO } from '../command.js';
import { BufferedOutput } from '../recordio/output.js';
import { CAT_OPTIONS, printRecord } from '../recordio/print-record.js';
import { COMPRESSION_CHOICES } from './compression-choice.js';

/**
 * `edl tfrecord cat FILE [--start N] [--count M] [--format raw|hex|base64|jsonl|example]
 * [--compression auto|none|gzip|zlib]`. As `edl recordio cat`: `--count` is clamped to the records
 * after `--start`, a start past the end is an error, and on a damaged file every record before the
 * fault is printed, then the error (exit 1).
 */
export async function cat(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    { ...CAT_OPTIONS, compression: { type: 'choice', choices: COMPRESSION_CHOICES } },
    ['FILE'],
  );
  const start = values.start ?? 0;
  const requested = values.count ?? Number.MAX_SAFE_INTEGER;
  const format = values.format ?? 'raw';
  const compression = values.compression ?? 'auto';

  const reader = await TFRecordReader.open(positionals[0] as string, { compression });
  const out = new BufferedOutput(io.stdout);
  try {
    if (start > reader.numRecords) {
      throw new Error(`--start ${start} is past the ${reader.numRecords} records of ${reader.path}`);
    }
    const count = Math.min(requested, reader.numRecords - start);
    let index = start;
    for await (const batch of reader.batches(start, count)) {
      for (let i = 0; i < batch.length; i++, index++) {
        if (!(await printRecord(out, batch.get(i), index, format, reader.path))) break;
      }
      if (out.closed) break;
    }
    // The records were all printed; damage right after them still fails the command.
    const fault = reader.tailFault();
    if (fault !== undefined && start + count >= reader.numRecords && requested > count) throw fault;
  } finally {
    await out.end();
    reader.close();
  }
  return 0;
}
