import { RecordIOReader } from '@edl/recordio';
import type { CommandIO } from '../command.js';
import { choiceOption, integerOption, parseCommandLine } from './args.js';
import { BufferedOutput } from './output.js';
import { formatRecord, OUTPUT_FORMATS } from './record-format.js';

/**
 * `edl recordio cat FILE [--start N] [--count M] [--format raw|hex|base64|jsonl|example]`. `--count` is
 * clamped to the records after `--start` (like `head -n`); a start past the end is an error. On a
 * corrupt file every record before the fault is printed, then the error propagates (exit 1).
 */
export async function cat(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    { start: { type: 'string' }, count: { type: 'string' }, format: { type: 'string' } },
    ['FILE'],
  );
  const start = integerOption(values.start, '--start', 0);
  const requested = integerOption(values.count, '--count', Number.MAX_SAFE_INTEGER);
  const format = choiceOption(values.format, '--format', OUTPUT_FORMATS, 'raw');

  const reader = await RecordIOReader.open(positionals[0] as string);
  const out = new BufferedOutput(io.stdout);
  try {
    const count = Math.min(requested, Math.max(reader.numRecords - start, 0));
    let index = start;
    for await (const record of reader.records(start, count)) {
      let pieces: (string | Uint8Array)[];
      try {
        pieces = formatRecord(record, index, format);
      } catch (error) {
        // One line naming the file: the records before it are printed (flushed below).
        throw new Error(`${(error as Error).message} (in ${reader.path})`);
      }
      for (const piece of pieces) await out.write(piece);
      if (out.closed) break;
      index++;
    }
  } finally {
    // Records before a fault reach stdout before the error is reported.
    await out.end();
    reader.close();
  }
  return 0;
}
